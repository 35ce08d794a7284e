"""The official Python client's own e2e tests against the embedded API server: a conformance run.

The tests are those of github.com/kubernetes-client/python (`kubernetes/e2e_test`) at
`CLIENT_COMMIT`; they are not copied into this repository but read from a checkout of it —
`--checkout DIR` (a directory holding `kubernetes/e2e_test`), else the cache
(`GPUPOOL_TEST_CACHE`, default `~/.cache/gpupool-tests`), filled by a shallow `git fetch` of that
commit the first time (git and GitHub needed). That is why this is a script and not a test: the
suite runs where only the package registries are reachable. Run:

    .venv/bin/python benchmarks/client_e2e.py [--checkout DIR]

They run in a child pytest against a fresh embedded server (with one labelled Node, which
`test_node_apis` reads), through their own `base.get_e2e_configuration()` (`KUBECONFIG` points at
the server), with the checkout's `kubernetes/` added to the installed client package's path so that
`kubernetes.e2e_test` imports and everything else is the installed client. Prints each test's
outcome and a verdict; exits 1 when a test that needs no kubelet did not pass, 2 when the tests
could not be fetched.

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

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path

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
# The two kinds the embedded server serves for these tests (issue 23): each must have run.
MUST_RUN = ("test_replication_controller_apis", "test_create_apiservice_from_yaml_with_conflict")
MIN_TESTS = 35
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


def _checkout(given: Path | None) -> Path:
    if given is not None:
        return given
    target = CACHE / f"kubernetes-client-python-{CLIENT_COMMIT[:12]}"
    if not (target / E2E / "base.py").exists():
        problem = _fetch(target)
        if problem is not None:
            print(f"the client's e2e tests could not be fetched ({problem}); pass --checkout DIR")
            raise SystemExit(2)
    return target


def _run(checkout: Path, workdir: Path) -> tuple[dict[str, str], subprocess.CompletedProcess[str]]:
    """Each test's outcome (`passed`, `failure`, `error`, `skipped`) and the child's result."""
    plugin = workdir / "client_e2e_path.py"
    plugin.write_text(
        textwrap.dedent(
            """
            import os
            import kubernetes
            kubernetes.__path__.append(os.path.join(os.environ["CLIENT_CHECKOUT"], "kubernetes"))
            """
        )
    )
    report = workdir / "report.xml"
    with EmbeddedKubeAPI() as api:
        nodes = api.cluster.resolve("", "v1", "nodes")
        api.cluster.create(
            nodes, None, {"metadata": {"name": "node-1", "labels": {"kubernetes.io/os": "linux"}}}
        )
        env = {
            **os.environ,
            "KUBECONFIG": str(api.kubeconfig_path),
            "CLIENT_CHECKOUT": str(checkout),
            "PYTHONPATH": str(workdir),
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
            str(checkout),
            "--timeout",
            "120",
            f"--junitxml={report}",
            str(checkout / E2E),
            *(f"--deselect={E2E}/{test}" for test in NEED_A_KUBELET),
        ]
        done = subprocess.run(
            command, cwd=checkout, env=env, capture_output=True, text=True, timeout=900, check=False
        )
    if not report.exists():
        return {}, done
    cases = ElementTree.parse(report).getroot().iter("testcase")
    outcome = {
        f"{case.get('classname')}.{case.get('name')}": next((child.tag for child in case), "passed")
        for case in cases
    }
    return outcome, done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, help=f"a checkout holding {E2E} (default: fetch it)")
    args = parser.parse_args(argv)
    checkout = _checkout(args.checkout)
    if not (checkout / E2E / "base.py").exists():
        print(f"no {E2E} in {checkout}")
        return 2
    with tempfile.TemporaryDirectory(prefix="client-e2e-") as workdir:
        outcome, done = _run(checkout, Path(workdir))
    print(f"kubernetes-client/python e2e tests at {CLIENT_COMMIT[:12]}, against the embedded API server")
    for name in sorted(outcome):
        print(f"  {outcome[name]:8} {name}")
    ran = {name.rsplit(".", 1)[1] for name in outcome}
    problems = [f"{name}: {result}" for name, result in sorted(outcome.items()) if result != "passed"]
    if done.returncode != 0 and not problems:
        problems.append(f"the child pytest exited {done.returncode}:\n{done.stdout[-2000:]}")
    if len(outcome) < MIN_TESTS:
        problems.append(f"only {len(outcome)} tests ran (expected at least {MIN_TESTS})")
    problems += [f"{test} did not run" for test in MUST_RUN if test not in ran]
    left_out = len(NEED_A_KUBELET)
    passed = sum(result == "passed" for result in outcome.values())
    print(f"{passed} of {len(outcome)} passed; {left_out} left out (they need a kubelet)")
    for problem in problems:
        print(f"  NOT MET: {problem}")
    print("result: every test that needs no kubelet passes — met" if not problems else "result: NOT MET")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
