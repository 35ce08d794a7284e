"""Every assignment that `simulate placement --assignments` writes is feasible, checked from files alone.

The checker (`benchmarks/reference/feasibility.py`, which the placement benchmark runs on every
assignment file too) reads the trace CSVs and the assignments CSV with the csv module only — not
with the simulator's reader or the allocator — and verifies: each GPU at most 1000 milli and its
VRAM share at most its VRAM, CPU and memory within the node, `gpu_spec` respected, the GPUs a task
holds match what it asked for, every pod placed at most once, and as many rows as the JSON says
placed — for every placement under both protocols.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from benchmarks.reference.feasibility import Infeasible, check_feasible
from gpupool.cli.main import main

DATA = Path(__file__).parent / "data"
NODES = DATA / "openb_nodes_slice.csv"
PODS = DATA / "openb_pods_slice.csv"
MODES = (
    "RandomFit",
    "BestFit",
    "DotProduct",
    "FGD",
    "CompactFirst",
    "LowLoadFirst",
    "NodeCompactGPULowLoad",
    "FragmentationAware",
    "BalancedFit",
)
PROTOCOLS = ("rule", "least-allocated")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize(("mode", "protocol"), [(m, p) for m in MODES for p in PROTOCOLS])
def test_every_assignment_of_every_mode_is_feasible(
    mode: str, protocol: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "assignments.csv"
    code = main(
        ["simulate", "placement", "--nodes", str(NODES), "--pods", str(PODS), "--placement", mode,
         "--assignments", str(out), "--json", "--cpu-only", protocol]
    )  # fmt: skip
    assert code == 0
    report = json.loads(capsys.readouterr().out)["modes"]
    assert [(m["placement"], m["protocol"]) for m in report] == [(mode, protocol)]
    placed = check_feasible(NODES, PODS, out)
    assert placed == report[0]["tasksPlaced"] > 0
    assert report[0]["tasksFailed"] > 0, "the slice at inflation 1.3 overfills the cluster"


def test_gpu_spec_is_respected_and_files_without_time_are_read(tmp_path: Path) -> None:
    """A pod list with a gpu_spec column and no creation_time (name order)."""
    pods = tmp_path / "pods.csv"
    lines = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec"]
    for i in range(120):
        spec = ("T4", "V100M16|V100M32", "", "G2")[i % 4]
        num_gpu, milli = ((1, 500), (1, 250), (2, 1000), (1, 1000))[i % 4]
        lines.append(f"task-{i:03d},1000,2048,{num_gpu},{milli},{spec}")
    pods.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "assignments.csv"
    for mode in ("BestFit", "FGD", "FragmentationAware", "BalancedFit"):
        args = ["simulate", "placement", "--nodes", str(NODES), "--pods", str(pods), "--placement", mode]
        assert main([*args, "--assignments", str(out), "--inflation", "0.8"]) == 0
        assert check_feasible(NODES, pods, out) > 0
        held = {row["pod"]: row["node"] for row in _rows(out)}
        t4 = {row["sn"] for row in _rows(NODES) if row["model"] == "T4"}
        assert any(node in t4 for pod, node in held.items() if int(pod.split("-")[1]) % 4 == 0)


def test_the_checker_catches_an_overfilled_gpu(tmp_path: Path) -> None:
    """The checker is not vacuous: two 600-milli tasks on one GPU are refused."""
    tasks = [row for row in _rows(PODS) if row["num_gpu"] == "1" and 500 < int(row["gpu_milli"]) < 1000][:2]
    node = _rows(NODES)[0]["sn"]
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "pod,node,gpus\n" + "".join(f"{t['name']},{node},0:{t['gpu_milli']}\n" for t in tasks),
        encoding="utf-8",
    )
    with pytest.raises(Infeasible, match="milli placed"):
        check_feasible(NODES, PODS, bad)
