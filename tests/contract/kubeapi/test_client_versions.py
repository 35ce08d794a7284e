"""The official Python client behaves the same against the embedded API server in version 30.x
(which sends `watch=True`) and in the version this project pins: CRUD with defaults, a 409
conflict, list-then-watch (the informer pattern) and a watch from now.

The 30.x client is installed once from PyPI into a cache directory (`pip install --target`,
~20 s the first time) and run in a child process whose `PYTHONPATH` puts it first.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

OLD_CLIENT = "30.1.0"
PROBE = Path(__file__).parent / "client_probe.py"
CACHE = Path(os.environ.get("GPUPOOL_TEST_CACHE", Path.home() / ".cache" / "gpupool-tests"))


@pytest.fixture(scope="session")
def old_client_path() -> Path:
    target = CACHE / f"kubernetes-{OLD_CLIENT}"
    if (target / "kubernetes" / "__init__.py").exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="kubernetes-", dir=CACHE))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--target",
            str(staging),
            f"kubernetes=={OLD_CLIENT}",
        ],
        check=True,
        capture_output=True,
        timeout=240,
    )
    try:
        staging.rename(target)
    except OSError:  # another run finished first
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _probe(api: EmbeddedKubeAPI, namespace: str, python_path: Path | None) -> dict[str, object]:
    api.cluster.store.create(
        api.cluster.resolve("", "v1", "namespaces"), None, {"metadata": {"name": namespace}}
    )
    env = dict(os.environ)
    if python_path is not None:
        env["PYTHONPATH"] = str(python_path)
    done = subprocess.run(
        [sys.executable, str(PROBE), str(api.kubeconfig_path), namespace],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(found, dict)
    return found


@pytest.mark.slow
def test_old_and_pinned_clients_see_the_same_server(kube_api: EmbeddedKubeAPI, old_client_path: Path) -> None:
    old = _probe(kube_api, "old-client", old_client_path)
    pinned = _probe(kube_api, "pinned-client", None)
    assert old.pop("version") == OLD_CLIENT
    assert pinned.pop("version") != OLD_CLIENT
    assert old == pinned
    assert old["defaults"] == ["Always", "default-scheduler", "IfNotPresent"]
    assert old["conflict"] == [409, "Conflict"]
    assert old["informer_events"] == [["MODIFIED", "first"], ["ADDED", "second"], ["DELETED", "second"]]
    assert old["watch_from_now"] == [["ADDED", "first"]]
