"""Intake: every trigger's envelope becomes exactly one domain cause (see ``causes``).

Must not: import parsers eagerly here — each handler imports only the intake module it needs.
"""
