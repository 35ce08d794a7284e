"""Gang scheduling: a group of pods binds all together or not at all, within its timeout.

Role: `gang_of(pod)` reads TensorFusion's gang keys — `tensor-fusion.ai/gang-min-members` (>
0), the group (the pod's namespace and its `tensor-fusion.ai/workload` label, or, for pods
TensorFusion's webhook did not label, its controlling owner, e.g. the ReplicaSet or Job) and
`tensor-fusion.ai/gang-timeout` (a Go duration; empty, "0" or "0s" waits indefinitely);
unreadable values mean no gang, as in TensorFusion. (`gang-enabled` without min-members asks
for a quorum of the workload's replica count, which a pod does not carry: not acted on.)
`GangBook` is the waiting room the bind verb consults: each member that reserved its GPUs is
`arrive`d; until `min-members` have arrived the bind answers "waiting" and the member keeps its
reservation (kube-scheduler retries it on the same node), once they have, every member binds.
`expire(now)` hands back the members of gangs whose timeout passed before they were complete,
so their GPUs are released.

Must not: hold GPUs, bind, lock, read a clock (time is passed in) or log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod

__all__ = ["GangBook", "GangSpec", "GangVerdict", "gang_of", "parse_go_duration"]

_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h)")


def parse_go_duration(text: str) -> timedelta | None:
    """A Go duration ("90s", "1h30m") as a timedelta; None when it is not one."""
    text = text.strip()
    if not text:
        return None
    position, seconds = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != position:
            return None
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(text):
        return None
    return timedelta(seconds=seconds)


@dataclass(frozen=True, slots=True)
class GangSpec:
    group: str
    """`namespace/workload` (or `namespace/Kind/owner`): the pods that bind together."""
    min_members: int
    timeout: timedelta | None
    """None: wait indefinitely."""


def gang_of(pod: Pod) -> GangSpec | None:
    """The pod's gang, or None (no or unreadable gang keys, or no workload label)."""
    text = pod.metadata.annotations.get(c.ANNOTATION_GANG_MIN_MEMBERS, "").strip()
    workload = pod.metadata.labels.get(c.LABEL_WORKLOAD, "")
    if not workload:
        owner = next((o for o in pod.metadata.owner_references if o.controller), None)
        workload = f"{owner.kind}/{owner.name}" if owner is not None else ""
    if not text or not workload or not text.isdigit() or int(text) <= 0:
        return None
    timeout_text = pod.metadata.annotations.get(c.ANNOTATION_GANG_TIMEOUT, "").strip()
    timeout = None if timeout_text in ("", "0", "0s") else parse_go_duration(timeout_text)
    return GangSpec(f"{pod.metadata.namespace or 'default'}/{workload}", int(text), timeout)


@dataclass(frozen=True, slots=True)
class GangVerdict:
    complete: bool
    arrived: int
    min_members: int
    deadline: datetime | None

    def reason(self, group: str) -> str:
        if self.complete:
            return f"gang {group}: {self.arrived} of {self.min_members} members ready, binding"
        until = f" until {self.deadline.isoformat()}" if self.deadline else ""
        return (
            f"gang {group}: waiting for {self.min_members - self.arrived} more member(s) "
            f"({self.arrived} of {self.min_members} hold their GPUs){until}"
        )


@dataclass
class _Gang:
    spec: GangSpec
    started: datetime
    members: set[str] = field(default_factory=set)
    complete: bool = False

    @property
    def deadline(self) -> datetime | None:
        return self.started + self.spec.timeout if self.spec.timeout is not None else None


class GangBook:
    """The gangs the bind verb is assembling (mutable; the relay holds its lock around it)."""

    def __init__(self) -> None:
        self._gangs: dict[str, _Gang] = {}

    def arrive(self, spec: GangSpec, member: str, *, now: datetime) -> GangVerdict:
        """Record that `member` (namespace/name) holds its GPUs; complete once min-members have."""
        gang = self._gangs.get(spec.group)
        if gang is None:
            gang = self._gangs[spec.group] = _Gang(spec, started=now)
        gang.members.add(member)
        if len(gang.members) >= gang.spec.min_members:
            gang.complete = True
        return GangVerdict(gang.complete, len(gang.members), gang.spec.min_members, gang.deadline)

    def expire(self, *, now: datetime) -> dict[str, list[str]]:
        """Incomplete gangs whose timeout passed, by group, with their members (now forgotten)."""
        expired = {
            group: sorted(gang.members)
            for group, gang in self._gangs.items()
            if not gang.complete and gang.deadline is not None and now >= gang.deadline
        }
        for group in expired:
            del self._gangs[group]
        return expired

    def forget(self, member: str) -> None:
        """A member pod is gone (deleted or finished); an empty gang is dropped."""
        for group, gang in list(self._gangs.items()):
            gang.members.discard(member)
            if not gang.members:
                del self._gangs[group]

    def waiting(self, member: str) -> bool:
        """Whether `member` holds GPUs in a gang that is not yet complete."""
        return any(member in gang.members and not gang.complete for gang in self._gangs.values())
