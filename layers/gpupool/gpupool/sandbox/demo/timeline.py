"""One moment of a demo story, as the stories record it and the CLI prints it.

Role: `TimelineEntry` — simulated time, who acted, what happened, details, and the outcome JSON of
a function call if it was one — and its JSON form (`gpupool demo --json`). The human lines are
`gpupool.cli.report`'s.

Must not: decide anything or format lines for people.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["TimelineEntry"]


@dataclass(frozen=True)
class TimelineEntry:
    """One moment of the story: simulated time, who acted, what happened, and the outcome if any."""

    at: datetime
    actor: str
    summary: str
    outcome: Mapping[str, Any] | None = None
    details: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"at": self.at.isoformat(), "actor": self.actor, "summary": self.summary}
        if self.details:
            body["details"] = list(self.details)
        if self.outcome is not None:
            body["outcome"] = dict(self.outcome)
        return body
