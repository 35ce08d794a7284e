"""Both simulations run as a user first types them, on a fresh clone: no arguments, a working
directory with nothing beside it (no `../shared`), the installed `gpupool` finding the trace it
ships. Also: the shipped sample is exactly what its generator writes (openb's columns and
shape), so the data and the recipe cannot drift apart.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpupool.simulation.openb import read_pod_list
from gpupool.simulation.placement import PLACEMENTS
from gpupool.simulation.traces import SAMPLE_NODES, SAMPLE_PODS, generate, sample_paths


def _gpupool(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpupool.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_simulate_capacity_runs_with_its_defaults_from_an_empty_directory(tmp_path: Path) -> None:
    assert not (tmp_path.parent / "shared").exists()
    done = _gpupool(tmp_path, "simulate", "capacity")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].endswith("trace the shipped openb-shaped sample (--trace for openb's)")
    assert {line.split()[0] for line in lines[3:6]} == {"gpupool", "tensorfusion", "gpupool+consolidation"}
    assert any(line.startswith("cost: gpupool $") for line in lines)
    assert lines[-1].startswith("at Spot: ")  # no Spot figure without a quoted price or --spot-discount
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_simulate_placement_runs_with_its_defaults_from_an_empty_directory(tmp_path: Path) -> None:
    done = _gpupool(tmp_path, "simulate", "placement")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split()[0] for line in done.stdout.splitlines()[1:-1]]
    assert rows == list(PLACEMENTS)  # every rule, the baselines first
    assert {"RandomFit", "BestFit", "DotProduct", "FGD", "FragmentationAware", "BalancedFit"} <= set(rows)
    assert "Traceback" not in done.stderr


def test_the_help_says_how_to_run_on_the_full_openb_trace(tmp_path: Path) -> None:
    for simulation, file in (
        ("capacity", "openb_pod_list_default.csv"),
        ("placement", "openb_node_list_gpu_node.csv"),
    ):
        done = _gpupool(tmp_path, "simulate", simulation, "--help")
        assert done.returncode == 0
        assert "cluster-trace-gpu-v2023" in done.stdout and file in done.stdout
        assert "the openb-shaped sample the package ships" in done.stdout


def test_the_shipped_sample_is_what_its_generator_writes(tmp_path: Path) -> None:
    assert generate.main([str(tmp_path)]) == 0
    nodes, pods = sample_paths()
    assert (tmp_path / SAMPLE_NODES).read_text() == nodes.read_text()
    assert (tmp_path / SAMPLE_PODS).read_text() == pods.read_text()
    tasks = read_pod_list(pods)
    assert len(tasks) == generate.PODS == 815  # the figures the help and docs quote
    node_rows = generate.node_rows()
    assert (len(node_rows), sum(int(str(row[3])) for row in node_rows)) == (125, 630)
    assert any(t.num_gpu == 8 for t in tasks) and any(0 < t.gpu_milli < 1000 for t in tasks)
