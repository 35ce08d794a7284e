"""Demand traces: the trace format (CSV and JSONL), openb's pod list mapped onto a window, and a
clear error naming file, line and field for every bad row."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from gpupool.simulation.capacity.demand_trace import load_openb, load_trace, trace_kind
from gpupool.simulation.openb import TraceError

TRACES = Path(__file__).resolve().parents[3] / "fixtures" / "traces"


def test_the_trace_format_reads_as_written() -> None:
    rows = load_trace(TRACES / "small.csv")
    assert [(r.name, r.arrival, r.departure, r.gpus) for r in rows] == [
        ("train-a", 0.0, 3600.0, Decimal(8)),
        ("infer-b", 60.0, 7200.0, Decimal("0.5")),
        ("infer-c", 120.0, 600.0, Decimal(1)),
    ]
    jsonl = load_trace(TRACES / "small.jsonl")
    assert [(r.name, r.gpus) for r in jsonl] == [("train-a", Decimal(8)), ("infer-b", Decimal("0.5"))]
    assert trace_kind(TRACES / "small.csv") == "trace"
    assert trace_kind(TRACES / "small.jsonl") == "trace"


def test_openb_rows_map_to_gpus_and_the_window() -> None:
    path = TRACES / "openb_format.csv"
    assert trace_kind(path) == "openb"
    rows = {r.name: r for r in load_openb(path, window_seconds=2000)}
    # CPU-only and zero-length tasks are left out
    assert sorted(rows) == ["synthetic-eight", "synthetic-share", "synthetic-whole"]
    assert rows["synthetic-share"].gpus == Decimal("0.25")
    assert rows["synthetic-whole"].gpus == Decimal(1)
    assert rows["synthetic-eight"].gpus == Decimal(8)
    # span 100..1100 (1000 s) onto 2000 s: times from the first creation, doubled
    assert (rows["synthetic-share"].arrival, rows["synthetic-share"].departure) == (0.0, 2000.0)
    assert (rows["synthetic-whole"].arrival, rows["synthetic-whole"].departure) == (200.0, 600.0)
    assert (rows["synthetic-eight"].arrival, rows["synthetic-eight"].departure) == (400.0, 1800.0)


def test_openb_limit_keeps_the_first_tasks() -> None:
    rows = load_openb(TRACES / "openb_format.csv", window_seconds=100, limit=2)
    assert [r.name for r in rows] == ["synthetic-share", "synthetic-whole"]
    assert max(r.departure for r in rows) == 100.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,arrival,departure,gpus\nx,10,5,1\n", r"t.csv:2: departure 5 is not after arrival 10"),
        ("name,arrival,departure,gpus\nx,0,5,lots\n", r"t.csv:2: gpus 'lots' is not a number"),
        ("name,arrival,departure,gpus\nx,0,5,-1\n", r"t.csv:2: gpus '-1' is not a non-negative"),
        ("name,arrival,departure,gpus\nx,0,5,1.5\n", r"t.csv:2: gpus 1.5: more than one GPU"),
        ("name,arrival,departure,gpus\nx,0,5,0\n", r"t.csv:2: gpus 0 is not positive"),
        ("name,arrival,departure,gpus\nx,0,,1\n", r"t.csv:2: missing departure"),
        ("name,arrival,departure,gpus\n", r"t.csv: no demand rows"),
    ],
)
def test_a_bad_csv_row_is_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TraceError, match=message):
        load_trace(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [("{not json\n", r"t.jsonl:1: not JSON"), ("[1, 2]\n", r"t.jsonl:1: a line must be a JSON object")],
)
def test_a_bad_jsonl_line_is_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TraceError, match=message):
        load_trace(path)


def test_a_missing_file_and_an_empty_window_say_so(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read"):
        load_trace(tmp_path / "absent.csv")
    with pytest.raises(TraceError, match="window of 0 s is not positive"):
        load_openb(TRACES / "openb_format.csv", window_seconds=0)
