"""Demand traces for `gpupool simulate capacity`: GPU requests that arrive and leave over time.

Role: read a trace into `Demand` rows (name, arrival and departure in seconds from the start,
GPUs requested as a decimal: 0.46 is a 46 % share of one GPU, 8 is eight whole GPUs) from
- the trace format (CSV with a header `name,arrival,departure,gpus`, or JSONL objects with those
  keys), times in seconds from the start, as written; or
- openb's `openb_pod_list_default.csv` (Alibaba cluster-trace-gpu-v2023, read by
  `gpupool.simulation.openb` as the placement simulation reads it): tasks with `num_gpu == 0`,
  and tasks deleted no later than created, are left out; GPUs are `num_gpu` whole GPUs, or
  `gpu_milli / 1000` of one when `num_gpu == 1`; `creation_time` / `deletion_time` are rescaled
  linearly from the trace's span (first creation to last deletion) onto the window, so the mix
  and overlap of tasks is kept and only the clock is compressed.
Every bad row raises `TraceError` (openb's, the simulations' one trace error) naming the file,
line and field; nothing is half-read.

Must not: decide capacity, parse openb's rows itself, touch Kubernetes or the cloud, or ship
openb's data (read from a path).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from gpupool.simulation.openb import TraceError, read_pod_list

__all__ = ["Demand", "load_openb", "load_trace", "trace_kind"]

_TRACE_FIELDS = ("name", "arrival", "departure", "gpus")


@dataclass(frozen=True, order=True)
class Demand:
    """One request: `gpus` GPUs (a share below 1) from `arrival` to `departure` seconds."""

    arrival: float
    departure: float
    name: str
    gpus: Decimal


def _number(where: str, field: str, text: object) -> Decimal:
    try:
        value = Decimal(str(text).strip())
    except InvalidOperation:
        raise TraceError(f"{where}: {field} {text!r} is not a number") from None
    if not value.is_finite() or value < 0:
        raise TraceError(f"{where}: {field} {text!r} is not a non-negative number")
    return value


def _demand(where: str, name: str, arrival: Decimal, departure: Decimal, gpus: Decimal) -> Demand:
    if not name:
        raise TraceError(f"{where}: name is empty")
    if departure <= arrival:
        raise TraceError(f"{where}: departure {departure} is not after arrival {arrival}")
    if gpus <= 0:
        raise TraceError(f"{where}: gpus {gpus} is not positive")
    if gpus > 1 and gpus != gpus.to_integral_value():
        raise TraceError(f"{where}: gpus {gpus}: more than one GPU must be a whole number")
    return Demand(arrival=float(arrival), departure=float(departure), name=name, gpus=gpus)


def _rows(path: Path) -> Iterable[tuple[int, Mapping[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise TraceError(f"{path}: cannot read: {error.strerror or error}") from None
    if path.suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise TraceError(f"{path}:{number}: not JSON: {error.msg}") from None
            if not isinstance(row, dict):
                raise TraceError(f"{path}:{number}: a line must be a JSON object")
            yield number, row
        return
    reader = csv.DictReader(text.splitlines())
    for number, row in enumerate(reader, start=2):
        yield number, row


def _require(path: Path, number: int, row: Mapping[str, Any], fields: tuple[str, ...]) -> None:
    missing = [f for f in fields if row.get(f) in (None, "")]
    if missing:
        raise TraceError(f"{path}:{number}: missing {', '.join(missing)}")


def trace_kind(path: Path) -> str:
    """`openb` when the CSV header is openb's pod list, else `trace`."""
    if path.suffix == ".jsonl":
        return "trace"
    try:
        with path.open(encoding="utf-8") as handle:
            header = handle.readline()
    except OSError as error:
        raise TraceError(f"{path}: cannot read: {error.strerror or error}") from None
    columns = {c.strip() for c in header.split(",")}
    return "openb" if {"num_gpu", "gpu_milli", "creation_time"} <= columns else "trace"


def load_trace(path: Path) -> list[Demand]:
    """A trace in the trace format (see module docstring), sorted by arrival."""
    found = []
    for number, row in _rows(path):
        _require(path, number, row, _TRACE_FIELDS)
        where = f"{path}:{number}"
        found.append(
            _demand(
                where,
                str(row["name"]).strip(),
                _number(where, "arrival", row["arrival"]),
                _number(where, "departure", row["departure"]),
                _number(where, "gpus", row["gpus"]),
            )
        )
    if not found:
        raise TraceError(f"{path}: no demand rows")
    return sorted(found)


def load_openb(path: Path, *, window_seconds: float, limit: int | None = None) -> list[Demand]:
    """openb's pod list mapped onto a window of `window_seconds` (see module docstring);
    `limit` keeps the first N GPU tasks by creation time."""
    if window_seconds <= 0:
        raise TraceError(f"window of {window_seconds} s is not positive")
    raw: list[tuple[str, Decimal, Decimal, Decimal]] = []
    for line, task in enumerate(read_pod_list(path), start=2):
        for column, value in (("creation_time", task.creation_time), ("deletion_time", task.deletion_time)):
            if value is None:
                raise TraceError(f"{path}:{line}: missing {column}")
        if task.num_gpu == 0:
            continue
        start, end = Decimal(task.creation_time or 0), Decimal(task.deletion_time or 0)
        if end <= start:
            continue  # deleted the second it was created: it never held a GPU
        raw.append((task.name, start, end, Decimal(task.gpu_demand_milli) / 1000))
    raw.sort(key=lambda r: (r[1], r[0]))
    if limit is not None:
        raw = raw[:limit]
    if not raw:
        raise TraceError(f"{path}: no task requests a GPU")
    first = min(r[1] for r in raw)
    span = max(r[2] for r in raw) - first
    scale = Decimal(str(window_seconds)) / span if span > 0 else Decimal(1)
    return sorted(
        _demand(f"{path} ({name})", name, (start - first) * scale, (end - first) * scale, gpus)
        for name, start, end, gpus in raw
    )
