"""Every assignment that `simulate placement --assignments` writes is feasible, checked from files alone.

The checker reads the trace CSVs and the assignments CSV with the csv module only — not with the
simulator's reader or the allocator — and verifies: each GPU at most 1000 milli and its VRAM share
at most its VRAM, CPU and memory within the node, `gpu_spec` respected, the GPUs a task holds
match what it asked for, every pod placed at most once, and as many rows as the JSON says placed.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import pytest

from gpupool.cli.main import main

DATA = Path(__file__).parent / "data"
NODES = DATA / "openb_nodes_slice.csv"
PODS = DATA / "openb_pods_slice.csv"
# VRAM per GPU as docs/placement.md documents it (catalog figures; 16 GiB for unknown models).
VRAM_GIB = {"T4": 16, "V100M16": 16, "V100M32": 32, "A10": 24}
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


def _trace_name(pod: str, tasks: dict[str, dict[str, str]]) -> str:
    if pod in tasks:
        return pod
    base, _, rank = pod.rpartition("-")
    assert rank.isdigit() and int(rank) >= 2 and base in tasks, f"pod {pod} is not a task of the trace"
    return base


def check_feasible(nodes_csv: Path, pods_csv: Path, assignments_csv: Path) -> int:
    """Assert every row of the assignments is feasible; return how many rows there are."""
    nodes = {row["sn"]: row for row in _rows(nodes_csv)}
    tasks = {row["name"]: row for row in _rows(pods_csv)}
    with assignments_csv.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        assert next(reader) == ["pod", "node", "gpus"]
        rows = list(reader)
    cpu: dict[str, int] = defaultdict(int)
    memory: dict[str, int] = defaultdict(int)
    milli: dict[tuple[str, int], int] = defaultdict(int)
    vram_shares: dict[tuple[str, int], list[int]] = defaultdict(list)
    seen: set[str] = set()
    for pod, node_name, gpus in rows:
        assert pod not in seen, f"pod {pod} placed twice"
        seen.add(pod)
        task = tasks[_trace_name(pod, tasks)]
        node = nodes[node_name]
        cpu[node_name] += int(task["cpu_milli"])
        memory[node_name] += int(task["memory_mib"])
        held = [(int(i), int(m)) for i, m in (pair.split(":") for pair in gpus.split(";"))] if gpus else []
        num_gpu = int(task["num_gpu"])
        assert len(held) == num_gpu, f"{pod} holds {len(held)} GPUs, asked for {num_gpu}"
        assert len({i for i, _ in held}) == len(held), f"{pod} holds one GPU twice"
        want = int(task["gpu_milli"]) if num_gpu == 1 else 1000
        for index, share in held:
            assert 0 <= index < int(node["gpu"]), f"{pod}: no GPU {index} on {node_name}"
            assert share == want, f"{pod} holds {share} milli of GPU {index}, asked for {want}"
            milli[(node_name, index)] += share
            vram_shares[(node_name, index)].append(share)
        spec = [m for m in task.get("gpu_spec", "").split("|") if m]
        if num_gpu and spec:
            assert node["model"] in spec, f"{pod} wants {spec}, got a {node['model']} on {node_name}"
    for node_name, used in cpu.items():
        assert used <= int(nodes[node_name]["cpu_milli"]), f"{node_name}: CPU {used} past its capacity"
        assert memory[node_name] <= int(nodes[node_name]["memory_mib"]), f"{node_name}: memory past capacity"
    for (node_name, index), used in milli.items():
        assert used <= 1000, f"{node_name} GPU {index}: {used} milli placed"
    for (node_name, index), shares in vram_shares.items():
        # A share of a GPU is that share of its VRAM too (docs/placement.md), rounded down.
        vram = VRAM_GIB.get(nodes[node_name]["model"], 16) << 30
        assert sum(vram * m // 1000 for m in shares) <= vram, f"{node_name} GPU {index}: past its VRAM"
    return len(rows)


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
    with pytest.raises(AssertionError, match="milli placed"):
        check_feasible(NODES, PODS, bad)
