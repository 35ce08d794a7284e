"""What every cloud's adapters share, and nothing cloud-specific: error kinds, retries, our tags.

Role: `ErrorKind` (the four kinds each cloud's one error table sorts its codes into) and
`table_kind` (the exact code first, then the first matching prefix); `RetryPolicy` (bounded
exponential backoff for throttled calls, used by every cloud's Compute); `instance_tags` (the
DESIGN §2 tags every launched instance carries, whatever the cloud).

Must not: name a cloud's API, import a cloud SDK, or decide anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from gpupool.core.model.constants import (
    TAG_CLUSTER,
    TAG_MANAGED_BY,
    TAG_MANAGED_BY_VALUE,
    TAG_NODE_CLASS,
    TAG_NODE_NAME,
)

__all__ = ["ErrorKind", "RetryPolicy", "instance_tags", "table_kind"]


class ErrorKind(Enum):
    CAPACITY = "capacity"  # this offering (type × zone × capacity type) cannot launch now; try the next
    THROTTLED = "throttled"  # retry with backoff, then let the platform retry
    PERMANENT = "permanent"  # a retry cannot fix it: claim Failed with the message
    NOT_FOUND = "not-found"  # the instance does not exist (any more)


def table_kind(
    code: str, exact: Mapping[str, ErrorKind], prefixes: Sequence[tuple[str, ErrorKind]]
) -> ErrorKind | None:
    """The kind a cloud's table gives `code`: its exact entry, else its first matching prefix,
    else None (the cloud's own fallback on the HTTP status decides)."""
    if code in exact:
        return exact[code]
    return next((kind for prefix, kind in prefixes if code.startswith(prefix)), None)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff for throttled calls: `attempts` tries in all."""

    attempts: int = 4
    base_delay_s: float = 0.25
    max_delay_s: float = 2.0

    def delay(self, retry: int) -> float:
        return float(min(self.max_delay_s, self.base_delay_s * (2**retry)))


def instance_tags(
    *, claim_name: str, class_name: str, cluster: str, class_tags: dict[str, str]
) -> dict[str, str]:
    """DESIGN §2 tags plus the class's tags; ours win so adoption and terminate checks stay sound."""
    tags = {"Name": claim_name, **class_tags}
    tags.update(
        {
            TAG_MANAGED_BY: TAG_MANAGED_BY_VALUE,
            TAG_NODE_NAME: claim_name,
            TAG_NODE_CLASS: class_name,
            TAG_CLUSTER: cluster,
        }
    )
    return tags
