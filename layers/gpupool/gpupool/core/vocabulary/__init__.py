"""The vocabulary the relay, the intake and the services share: defined here once, imported everywhere.

Role: two concepts, one module each, because they depend on different things:
- ``pods``: what "a TensorFusion pod", "its pool" and "an unschedulable one" mean, on the typed
  ``Pod`` model only (so the scheduling and decision code may use them too, which may not import
  the intake);
- ``events``: every CloudEvent the in-cluster relay sends the functions — its type, its data's
  model, the function it is for, whether the relay's batching window coalesces it, and the
  cause it becomes (so it builds on the intake's causes).

Must not: import either module here (a caller of ``pods`` must not pull the intake in), hold
behaviour beyond these definitions, do I/O, read the clock, or log.
"""
