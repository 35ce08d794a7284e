"""Pure decisions: snapshot + policy + `now` in, a `Plan` out — one decision per module.

Must not: perform I/O, read the clock, generate ids or randomness (they are passed in), or log.
"""
