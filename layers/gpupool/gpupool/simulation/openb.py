"""The openb trace (Alibaba cluster-trace-gpu-v2023), read once for both simulations.

Role: turn the rows of a node list (`sn, cpu_milli, memory_mib, gpu, model`) and of a pod list
(`name, cpu_milli, memory_mib, num_gpu, gpu_milli` plus optional `gpu_spec`, `creation_time` and
`deletion_time`; other columns are ignored) into validated records, each bad row named by file
and line (`TraceError`, the one error of every trace the simulations read); put tasks in trace
order (creation time, then name; name order when the file has no time column); `split_csv`
splits a CSV text into its header and rows, and `read_pod_list(path)` reads a pod list file
(`gpupool simulate capacity`; `gpupool simulate placement` reads its files through the CLI, so
that an unreadable one is said the CLI's way).

Must not: place anything, map tasks onto a simulated window (each simulation does), or read the clock.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "TraceError",
    "TraceNode",
    "TraceTask",
    "arrival_order",
    "parse_nodes",
    "parse_tasks",
    "read_pod_list",
    "split_csv",
]

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
TASK_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


class TraceError(ValueError):
    """A trace that cannot be read or replayed; the message names the file, line and field."""


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
    deletion_time: int | None = None

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


def _time(row: Mapping[str, str], column: str, where: str) -> int | None:
    text = (row.get(column) or "").strip()
    return _int(row, column, where) if text else None


def _task(row: Mapping[str, str], where: str) -> TraceTask:
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
    return TraceTask(
        name,
        _int(row, "cpu_milli", where),
        _int(row, "memory_mib", where),
        num_gpu,
        gpu_milli,
        spec,
        _time(row, "creation_time", where),
        _time(row, "deletion_time", where),
    )


def parse_tasks(header: Sequence[str], rows: Iterable[Mapping[str, str]], *, source: str) -> list[TraceTask]:
    """Tasks in file order (see `arrival_order`); line numbers count the header as line 1."""
    _columns(header, TASK_COLUMNS, source)
    tasks: list[TraceTask] = []
    seen: set[str] = set()
    for line, row in enumerate(rows, start=2):
        task = _task(row, f"{source}:{line}")
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


def split_csv(text: str, *, source: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows of a CSV text; TraceError (naming `source`) when it is not CSV."""
    try:
        reader = csv.DictReader(io.StringIO(text))
        rows = list(reader)
    except csv.Error as error:
        raise TraceError(f"{source}: not CSV: {error}") from None
    return list(reader.fieldnames or []), rows


def read_pod_list(path: Path) -> list[TraceTask]:
    """The tasks of an openb pod list file, in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise TraceError(f"{path}: cannot read: {reason or error}") from None
    header, rows = split_csv(text, source=str(path))
    return parse_tasks(header, rows, source=str(path))
