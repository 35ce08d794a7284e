"""The openb trace formats (Alibaba cluster-trace-gpu-v2023), read as they are, and arrival order.

Role: turn the rows of a node list (`sn, cpu_milli, memory_mib, gpu, model`) and of a pod list
(`name, cpu_milli, memory_mib, num_gpu, gpu_milli` plus optional `gpu_spec` and `creation_time`;
other columns are ignored) into validated records, each bad row named by file and line; and put
tasks in trace order (creation time, then name; name order when the file has no time column).

Must not: open files (the CLI reads them), place anything, or read the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["TraceError", "TraceNode", "TraceTask", "arrival_order", "parse_nodes", "parse_tasks"]

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
TASK_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


class TraceError(ValueError):
    """A trace file that cannot be replayed; the message names the file, line and field."""


@dataclass(frozen=True, slots=True)
class TraceNode:
    sn: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class TraceTask:
    """One task: `num_gpu` whole GPUs, or (num_gpu 1) `gpu_milli` thousandths of one GPU."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: tuple[str, ...] = ()
    creation_time: int | None = None

    @property
    def gpu_demand_milli(self) -> int:
        """GPU requested, in thousandths of a GPU."""
        return self.gpu_milli if self.num_gpu == 1 else 1000 * self.num_gpu

    @property
    def share_milli(self) -> int:
        """Thousandths of each GPU it holds (1000 for whole GPUs)."""
        return self.gpu_milli if self.num_gpu == 1 else 1000


def _columns(header: Sequence[str], required: Sequence[str], source: str) -> None:
    missing = [c for c in required if c not in header]
    if missing:
        raise TraceError(f"{source}: missing column(s) {', '.join(missing)} (header: {','.join(header)})")


def _int(row: Mapping[str, str], column: str, where: str) -> int:
    text = (row.get(column) or "").strip()
    try:
        value = int(text)
    except ValueError:
        raise TraceError(f"{where}: {column} must be a whole number, got {text!r}") from None
    if value < 0:
        raise TraceError(f"{where}: {column} must not be negative, got {value}")
    return value


def parse_nodes(header: Sequence[str], rows: Iterable[Mapping[str, str]], *, source: str) -> list[TraceNode]:
    """Nodes in file order; line numbers count the header as line 1."""
    _columns(header, NODE_COLUMNS, source)
    nodes: list[TraceNode] = []
    seen: set[str] = set()
    for line, row in enumerate(rows, start=2):
        where = f"{source}:{line}"
        sn = (row.get("sn") or "").strip()
        if not sn:
            raise TraceError(f"{where}: sn is empty")
        if sn in seen:
            raise TraceError(f"{where}: node {sn} appears twice")
        seen.add(sn)
        gpus = _int(row, "gpu", where)
        model = (row.get("model") or "").strip()
        if gpus and not model:
            raise TraceError(f"{where}: node {sn} has {gpus} GPU(s) but no model")
        nodes.append(
            TraceNode(sn, _int(row, "cpu_milli", where), _int(row, "memory_mib", where), gpus, model)
        )
    if not nodes:
        raise TraceError(f"{source}: no nodes")
    if not any(node.gpus for node in nodes):
        raise TraceError(f"{source}: no node has a GPU")
    return nodes


def _task(row: Mapping[str, str], where: str, timed: bool) -> TraceTask:
    name = (row.get("name") or "").strip()
    if not name:
        raise TraceError(f"{where}: name is empty")
    num_gpu, gpu_milli = _int(row, "num_gpu", where), _int(row, "gpu_milli", where)
    if num_gpu == 0 and gpu_milli:
        raise TraceError(f"{where}: task {name} asks for gpu_milli {gpu_milli} with num_gpu 0")
    if num_gpu == 1 and not 1 <= gpu_milli <= 1000:
        raise TraceError(f"{where}: task {name}: gpu_milli must lie in 1..1000 for one GPU, got {gpu_milli}")
    if num_gpu > 1 and gpu_milli not in (0, 1000):
        raise TraceError(
            f"{where}: task {name} asks for {num_gpu} GPUs at gpu_milli {gpu_milli}; only whole GPUs"
        )
    spec = tuple(m.strip() for m in (row.get("gpu_spec") or "").split("|") if m.strip())
    created = None
    if timed:
        text = (row.get("creation_time") or "").strip()
        created = _int(row, "creation_time", where) if text else None
    return TraceTask(
        name, _int(row, "cpu_milli", where), _int(row, "memory_mib", where), num_gpu, gpu_milli, spec, created
    )


def parse_tasks(header: Sequence[str], rows: Iterable[Mapping[str, str]], *, source: str) -> list[TraceTask]:
    """Tasks in file order (see `arrival_order`); line numbers count the header as line 1."""
    _columns(header, TASK_COLUMNS, source)
    timed = "creation_time" in header
    tasks: list[TraceTask] = []
    seen: set[str] = set()
    for line, row in enumerate(rows, start=2):
        task = _task(row, f"{source}:{line}", timed)
        if task.name in seen:
            raise TraceError(f"{source}:{line}: task {task.name} appears twice")
        seen.add(task.name)
        tasks.append(task)
    if not tasks:
        raise TraceError(f"{source}: no tasks")
    return tasks


def arrival_order(tasks: Sequence[TraceTask]) -> list[TraceTask]:
    """Creation time, then name; name order when any task lacks a time."""
    if all(task.creation_time is not None for task in tasks):
        return sorted(tasks, key=lambda t: (t.creation_time, t.name))
    return sorted(tasks, key=lambda t: t.name)
