"""The README's "Run the functions yourself, locally" block works as written: run verbatim in bash
(`set -euo pipefail`) from a folder holding the repository's files, every command succeeds — the
sandbox starts, the launch function launches, the simulated kubelet joins the nodes, bind binds one
(the relay's authentication set as the block sets it), the sandbox stops. The bind delivery sent a
second time answers `duplicate` and says why nothing was done.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADING = "### Run the functions yourself, locally"


def readme_block() -> str:
    section = (ROOT / "README.md").read_text().split(HEADING, 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def _workdir(tmp_path: Path) -> Path:
    workdir = tmp_path / "checkout"
    workdir.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv", ".gpupool"):
            (workdir / entry.name).symlink_to(entry)
    return workdir


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_readmes_local_block_runs_as_written(tmp_path: Path) -> None:
    block = readme_block()
    assert "gpupool invoke bind" in block and "gpupool sandbox down" in block
    workdir = _workdir(tmp_path)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GPUPOOL_", "AWS_", "KUBECONFIG"))},
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
    }
    # The bind delivery once more before the sandbox goes down: the second time is a duplicate.
    bind = next(line for line in block.splitlines() if line.startswith("gpupool invoke bind"))
    script = block.replace("gpupool sandbox down", f"{bind} > second-bind.txt\ngpupool sandbox down")
    try:
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + script],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        subprocess.run(["gpupool", "sandbox", "down"], cwd=workdir, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "bind ← node-joined: handled" in done.stdout or ": handled" in done.stdout, done.stdout[-3000:]
    second = (workdir / "second-bind.txt").read_text()
    assert ": duplicate" in second and "was already handled, so nothing was done again" in second, second
