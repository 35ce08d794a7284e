"""The webhook's one refusal: a Denial whose message says why and what to change."""

from __future__ import annotations

__all__ = ["Denial"]


class Denial(Exception):
    """The pod is rejected; the message says why and what to change."""
