"""Domain errors: the few outcomes adapters translate every SDK error into.

Role: the vocabulary ports raise and the service reacts to. Two outcomes reach the edge:
retryable (`retryable = True`: raise so the platform retries) and permanent (log, acknowledge).

Must not: import an SDK or carry SDK exception objects (keep only their message and code).
"""

from __future__ import annotations

__all__ = [
    "AlreadyExists",
    "CapacityUnavailable",
    "Conflict",
    "DomainError",
    "NotFound",
    "PermanentError",
    "Throttled",
]


class DomainError(Exception):
    """Base of every error a port may raise; `code` is the vendor's error code when there is one."""

    retryable: bool = False

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class CapacityUnavailable(DomainError):
    """The cloud has no capacity for this offering now (e.g. InsufficientInstanceCapacity).

    The service marks the offering unavailable for a few minutes and tries the next cheapest.
    """


class NotFound(DomainError):
    """The object or instance does not exist (any more)."""


class Conflict(DomainError):
    """A write carried a stale resourceVersion, or lost a race; re-read and re-decide."""

    retryable = True


class AlreadyExists(Conflict):
    """A create found an object of that name already there."""


class Throttled(DomainError):
    """The API refused for now (rate limit, or an eviction blocked by a PodDisruptionBudget)."""

    retryable = True


class PermanentError(DomainError):
    """Bad parameters, missing permission, or anything a retry cannot fix."""
