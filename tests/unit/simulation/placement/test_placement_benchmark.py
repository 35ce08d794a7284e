"""`benchmarks/placement.py` end to end on the openb slice: the table, the verdicts, `--host-scale`.

`--host-scale N` replays the trace with every node's CPU and memory multiplied by N, checks each
assignment file against the rewritten node list and names the trace `NAME-hosts×N`; a scale that
is not positive is refused with one line and exit code 2 before anything runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks import placement as bench

DATA = Path(__file__).parent / "data"
ARGS = [
    "placement.py",
    "--nodes", str(DATA / "openb_nodes_slice.csv"),
    "--pods", str(DATA / "openb_pods_slice.csv"),
    "--trace", "default", "--seed", "0", "--protocol", "rule",
    "--placement", "BestFit", "--placement", "BalancedFit", "--no-bound",
]  # fmt: skip


def _run(monkeypatch: pytest.MonkeyPatch, *extra: str) -> int:
    monkeypatch.setattr(sys, "argv", [*ARGS, *extra])
    return bench.main()


def test_host_scale_lifts_cpu_and_memory_and_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(monkeypatch) == 0
    plain = capsys.readouterr().out
    assert _run(monkeypatch, "--host-scale", "10") == 0
    scaled = capsys.readouterr().out
    assert "=== trace: default:" in plain and "hosts×" not in plain
    assert "=== trace: default-hosts×10:" in scaled
    assert "every assignment file feasible" in scaled
    assert "default-hosts×10, seed 0, protocol rule: BalancedFit leaves" in scaled

    def causes(out: str, rule: str) -> list[str]:
        row = next(line for line in out.splitlines() if line.startswith(rule))
        return row.split()

    # With ten times the CPU and memory nothing is stranded by them (the cpu/mem column is 0).
    assert float(causes(scaled, "BestFit")[5]) == 0.0
    assert float(causes(plain, "BestFit")[5]) > 0.0


def test_a_scale_that_is_not_positive_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(monkeypatch, "--host-scale", "0") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == "error: --host-scale must be positive, got 0.0"
