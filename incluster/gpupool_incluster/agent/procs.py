"""Which pod and container a process belongs to, read from /proc/<pid>/cgroup.

Role: parse cgroup v1 (one line per hierarchy) and v2 (`0::/…`) paths written by the kubelet with
either cgroup driver — cgroupfs (`/kubepods/burstable/pod<uid>/<container id>`) or systemd
(`…kubepods-burstable-pod<uid with _>.slice/cri-containerd-<id>.scope`, also `docker-`, `crio-`)
— into a pod UID and a container ID. `CgroupLocator` reads them under a proc root (a real
`/proc`, or a directory the tests write). `process_start` is which process a pid is: its start
time (field 22 of /proc/<pid>/stat), so a signal is sent only while the pid still names the process
it was meant for, never one that reused the pid.

Must not: signal processes or decide whether a process is a worker (the enforcement modules do).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["CgroupLocator", "PodLocator", "PodProcess", "parse_cgroup", "process_start"]

_UID = r"[0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12}"
_POD = re.compile(rf"pod({_UID})(?:\.slice)?(?:/|$)")
_CONTAINER = re.compile(r"(?:^|/)(?:[a-z-]+-)?([0-9a-f]{64})(?:\.scope)?$")


@dataclass(frozen=True, slots=True)
class PodProcess:
    """A process inside a pod: the pod's UID and, when the path names one, its container ID."""

    pod_uid: str
    container_id: str | None


class PodLocator(Protocol):
    def locate(self, pid: int) -> PodProcess | None:
        """The pod `pid` runs in, or None (not in a pod, gone, or not visible)."""
        ...


def parse_cgroup(text: str) -> PodProcess | None:
    """The pod a /proc/<pid>/cgroup text places its process in, or None outside any pod."""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        path = parts[2].strip()
        if "kubepods" not in path:
            continue
        pod = _POD.search(path)
        if pod is None:
            continue
        container = _CONTAINER.search(path)
        return PodProcess(
            pod_uid=pod.group(1).replace("_", "-").lower(),
            container_id=container.group(1) if container else None,
        )
    return None


class CgroupLocator:
    """Maps a pid to its pod through `<proc_root>/<pid>/cgroup`."""

    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self.proc_root = proc_root

    def locate(self, pid: int) -> PodProcess | None:
        try:
            text = (self.proc_root / str(pid) / "cgroup").read_text()
        except OSError:
            return None  # gone, or not visible from here (no hostPID): never ours to act on
        return parse_cgroup(text)


def process_start(pid: int, proc_root: Path = Path("/proc")) -> str | None:
    """The start time (clock ticks after boot) of the process `pid` names now, or None when gone."""
    try:
        text = (proc_root / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()  # after "pid (comm)": state is field 3, starttime 22
    return fields[19] if len(fields) > 19 else None
