"""The official Python client's own e2e tests (github.com/kubernetes-client/python, `kubernetes/e2e_test`)
pass against the embedded API server — every one that needs no kubelet.

The tests are not copied here: they are read from a checkout of the client's repository at
`CLIENT_COMMIT` — `GPUPOOL_CLIENT_E2E` (a directory holding `kubernetes/e2e_test`), else the test
cache (`GPUPOOL_TEST_CACHE`, `~/.cache/gpupool-tests`), filled by a shallow `git fetch` of that
commit the first time. Without git or the network the test is skipped and says why. They run in a
child pytest against a fresh embedded server (with one labelled Node, which `test_node_apis`
reads), through their own `base.get_e2e_configuration()` (`KUBECONFIG` points at the server), with
the checkout's `kubernetes/` added to the installed client package's path so that
`kubernetes.e2e_test` imports and everything else is the installed client.

Left out, because each needs a kubelet (a node that runs containers), which the embedded server
does not have:

- `test_client.py::TestClient::test_pod_apis` — waits for its pod to leave Pending, then execs
  into it (`pods/exec` is proxied to the kubelet);
- `test_client.py::TestClient::test_pod_exec_close_channel`, `…::test_exit_code` — exec;
- `test_client.py::TestClient::test_portforward_raw`, `…::test_portforward_http` — port-forward
  (proxied to the kubelet);
- `test_utils.py::TestUtils::test_metrics_utilities_integration` — waits for its pod to run, then
  reads `metrics.k8s.io` (the kubelet's numbers through metrics-server).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

CLIENT_REPOSITORY = "https://github.com/kubernetes-client/python"
CLIENT_COMMIT = "024658493d124f046fc0a9827a2a3165cf2aee28"  # master, 2026-08-17 (client 36.x+)
CACHE = Path(os.environ.get("GPUPOOL_TEST_CACHE", Path.home() / ".cache" / "gpupool-tests"))
NEED_A_KUBELET = (
    "test_client.py::TestClient::test_pod_apis",
    "test_client.py::TestClient::test_pod_exec_close_channel",
    "test_client.py::TestClient::test_exit_code",
    "test_client.py::TestClient::test_portforward_raw",
    "test_client.py::TestClient::test_portforward_http",
    "test_utils.py::TestUtils::test_metrics_utilities_integration",
)
E2E = "kubernetes/e2e_test"


def _fetch(target: Path) -> str | None:
    """Check out CLIENT_COMMIT into `target`; the reason when that cannot be done here."""
    if shutil.which("git") is None:
        return "git is not installed"
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    steps = (
        ["git", "init", "-q"],
        ["git", "fetch", "-q", "--depth", "1", CLIENT_REPOSITORY, CLIENT_COMMIT],
        ["git", "checkout", "-q", "FETCH_HEAD", "--", E2E],
    )
    for step in steps:
        done = subprocess.run(step, cwd=staging, capture_output=True, text=True, timeout=180, check=False)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            return f"{' '.join(step[:2])} failed: {(done.stderr or done.stdout).strip()[:200]}"
    staging.rename(target)
    return None


@pytest.fixture(scope="module")
def client_checkout() -> Path:
    given = os.environ.get("GPUPOOL_CLIENT_E2E")
    if given:
        return Path(given)
    target = CACHE / f"kubernetes-client-python-{CLIENT_COMMIT[:12]}"
    if not (target / E2E / "base.py").exists():
        problem = _fetch(target)
        if problem is not None:
            pytest.skip(f"the client's e2e tests could not be fetched ({problem}); set GPUPOOL_CLIENT_E2E")
    return target


def test_every_client_e2e_test_that_needs_no_kubelet_passes(client_checkout: Path, tmp_path: Path) -> None:
    tests = client_checkout / E2E
    assert (tests / "base.py").exists(), f"no {E2E} in {client_checkout}"
    plugin = tmp_path / "client_e2e_path.py"
    plugin.write_text(
        textwrap.dedent(
            """
            import os
            import kubernetes
            kubernetes.__path__.append(os.path.join(os.environ["CLIENT_CHECKOUT"], "kubernetes"))
            """
        )
    )
    report = tmp_path / "report.xml"
    with EmbeddedKubeAPI() as api:
        nodes = api.cluster.resolve("", "v1", "nodes")
        api.cluster.create(
            nodes, None, {"metadata": {"name": "node-1", "labels": {"kubernetes.io/os": "linux"}}}
        )
        env = {
            **os.environ,
            "KUBECONFIG": str(api.kubeconfig_path),
            "CLIENT_CHECKOUT": str(client_checkout),
            "PYTHONPATH": str(tmp_path),
        }
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "client_e2e_path",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(client_checkout),
            "--timeout",
            "120",
            f"--junitxml={report}",
            str(tests),
            *(f"--deselect={E2E}/{test}" for test in NEED_A_KUBELET),
        ]
        done = subprocess.run(
            command, cwd=client_checkout, env=env, capture_output=True, text=True, timeout=900, check=False
        )
    cases = ElementTree.parse(report).getroot().iter("testcase")
    outcome = {
        f"{case.get('classname')}.{case.get('name')}": next((child.tag for child in case), "passed")
        for case in cases
    }
    not_passed = {name: result for name, result in outcome.items() if result != "passed"}
    assert not not_passed, f"{not_passed}\n{done.stdout[-4000:]}"
    assert done.returncode == 0, done.stdout[-4000:]
    assert len(outcome) >= 35, f"only {len(outcome)} client e2e tests ran"
    ran = {name.rsplit(".", 1)[1] for name in outcome}
    assert not ran & {test.rsplit("::", 1)[1] for test in NEED_A_KUBELET}
    assert {"test_replication_controller_apis", "test_create_apiservice_from_yaml_with_conflict"} <= ran
