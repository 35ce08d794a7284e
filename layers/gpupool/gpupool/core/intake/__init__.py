"""Intake: every trigger's envelope becomes exactly one domain cause (see ``causes``), handed to the
handler as an ``envelope.Intake`` (the cause, the trigger kind, an HTTP request decoded once).

Must not: import parsers eagerly here — each handler imports only the intake module it needs.
"""
