"""The feasibility checker: an assignments file against the trace's CSV files, read with `csv` alone.

Role: `benchmarks/placement.py` runs it on every assignment file it writes, and the simulator's
tests on every placement (tests/unit/simulation/placement/test_placement_feasibility.py). It
reads the node list, the pod list and a `pod,node,gpus` file (docs/placement.md) — not with the
simulator's reader or the allocator — and checks: each GPU at most 1000 milli and its VRAM share
at most its VRAM, CPU and memory within the node, `gpu_spec` respected, the GPUs a task holds
match what it asked for, every pod a task of the trace (pass k ≥ 2 named `NAME-k`) placed at most
once.

Must not: import the simulator, the allocator or anything of gpupool.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

__all__ = ["Infeasible", "check_feasible"]

# VRAM per GPU as docs/placement.md documents it (catalog figures; 16 GiB for unknown models).
VRAM_GIB = {"T4": 16, "V100M16": 16, "V100M32": 32, "A10": 24}


class Infeasible(AssertionError):
    """An assignment the trace's nodes cannot hold; the message names it."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise Infeasible(message)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _trace_name(pod: str, tasks: dict[str, dict[str, str]]) -> str:
    if pod in tasks:
        return pod
    base, _, rank = pod.rpartition("-")
    _require(rank.isdigit() and int(rank) >= 2 and base in tasks, f"pod {pod} is not a task of the trace")
    return base


def check_feasible(nodes_csv: Path, pods_csv: Path, assignments_csv: Path) -> int:
    """Check every row of the assignments (Infeasible names the first that is not); return how many
    rows there are."""
    nodes = {row["sn"]: row for row in _rows(nodes_csv)}
    tasks = {row["name"]: row for row in _rows(pods_csv)}
    with assignments_csv.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        _require(next(reader) == ["pod", "node", "gpus"], f"{assignments_csv}: not a pod,node,gpus file")
        rows = list(reader)
    cpu: dict[str, int] = defaultdict(int)
    memory: dict[str, int] = defaultdict(int)
    milli: dict[tuple[str, int], int] = defaultdict(int)
    vram_shares: dict[tuple[str, int], list[int]] = defaultdict(list)
    seen: set[str] = set()
    for pod, node_name, gpus in rows:
        _require(pod not in seen, f"pod {pod} placed twice")
        seen.add(pod)
        task = tasks[_trace_name(pod, tasks)]
        _require(node_name in nodes, f"{pod}: no node {node_name} in the node list")
        node = nodes[node_name]
        cpu[node_name] += int(task["cpu_milli"])
        memory[node_name] += int(task["memory_mib"])
        held = [(int(i), int(m)) for i, m in (pair.split(":") for pair in gpus.split(";"))] if gpus else []
        num_gpu = int(task["num_gpu"])
        _require(len(held) == num_gpu, f"{pod} holds {len(held)} GPUs, asked for {num_gpu}")
        _require(len({i for i, _ in held}) == len(held), f"{pod} holds one GPU twice")
        want = int(task["gpu_milli"]) if num_gpu == 1 else 1000
        for index, share in held:
            _require(0 <= index < int(node["gpu"]), f"{pod}: no GPU {index} on {node_name}")
            _require(share == want, f"{pod} holds {share} milli of GPU {index}, asked for {want}")
            milli[(node_name, index)] += share
            vram_shares[(node_name, index)].append(share)
        spec = [m for m in task.get("gpu_spec", "").split("|") if m]
        if num_gpu and spec:
            _require(node["model"] in spec, f"{pod} wants {spec}, got a {node['model']} on {node_name}")
    for node_name, used in cpu.items():
        _require(used <= int(nodes[node_name]["cpu_milli"]), f"{node_name}: CPU {used} past its capacity")
        _require(
            memory[node_name] <= int(nodes[node_name]["memory_mib"]), f"{node_name}: memory past capacity"
        )
    for (node_name, index), used in milli.items():
        _require(used <= 1000, f"{node_name} GPU {index}: {used} milli placed")
    for (node_name, index), shares in vram_shares.items():
        # A share of a GPU is that share of its VRAM too (docs/placement.md), rounded down.
        vram = VRAM_GIB.get(nodes[node_name]["model"], 16) << 30
        _require(sum(vram * m // 1000 for m in shares) <= vram, f"{node_name} GPU {index}: past its VRAM")
    return len(rows)
