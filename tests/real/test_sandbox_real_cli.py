"""`gpupool sandbox up --real --background` as a user runs it (issue 31's acceptance line), and what
the functions recorded, read back with the real kubectl.

Covers, in order (one sandbox, one story): `up --real --background --dir D` writes D/kubeconfig and
D/env; with them the built kubectl's `get nodes,nodepools,nodeclaims,gpupools` answers from the real
API server (the pinned version); a Karpenter NodePool pointing at the KWOKNodeClass launches a node
for a pod that needs a GPU; the README's local block — `gpupool demo --prepare-sandbox`, `gpupool
invoke launch`, `gpupool demo --join-nodes`, `gpupool invoke bind`, `gpupool invoke compact` — runs
against it, the joined nodes kept Ready by KWOK; `gpupool status`, `kubectl describe gpunodeclaim`
and `kubectl get events` print the Events the functions recorded; `gpupool sandbox down` leaves
no process: the daemon and every PID recorded under D/cluster/pids are gone.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpupool.sandbox.cluster.build import KUBERNETES_VERSION
from gpupool.sandbox.cluster.controlplane import process_alive
from tests.programs import program_path, require_built
from tests.real import waiting

REPO = Path(__file__).resolve().parents[2]
SCHEDULE = str(REPO / "events" / "aws" / "scheduled-event.json")


def gpupool(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpupool.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )


def read_env(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


class Sandbox:
    def __init__(self, root: Path, up_output: str) -> None:
        self.root = root
        self.up_output = up_output
        self.env = read_env(root / "env")
        self.pids = {
            pid_file.stem: int(pid_file.read_text().strip())
            for pid_file in (root / "cluster" / "pids").glob("*.pid")
        }
        self.daemon_pid = int((root / "sandbox.pid").read_text().strip())

    def kubectl(self, *args: str, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        # As a user's shell after `set -a; . D/env; set +a`: only KUBECONFIG tells kubectl where to go.
        return subprocess.run(
            [program_path("kubectl"), *args],
            input=input_text,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, **self.env},
        )

    def get(self, *args: str) -> Any:
        done = self.kubectl("get", *args, "-o", "json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    require_built(
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubectl",
        "kwok",
        "karpenter-kwok",
    )
    root = tmp_path_factory.mktemp("real-sandbox")
    started = gpupool("sandbox", "up", "--real", "--background", "--dir", str(root))
    assert started.returncode == 0, started.stdout + started.stderr
    made = Sandbox(root, started.stdout)
    try:
        yield made
    finally:
        gpupool("sandbox", "down", "--dir", str(root))


_wait = functools.partial(waiting.wait_for, timeout=180, every=2)


def test_up_builds_only_the_control_plane(sandbox: Sandbox) -> None:
    """Helm and promtool are the tests' tools: `up --real` neither builds nor checks them."""
    assert "kubernetes" in sandbox.up_output and "karpenter" in sandbox.up_output
    assert "helm" not in sandbox.up_output and "promtool" not in sandbox.up_output


def test_up_writes_the_kubeconfig_and_env(sandbox: Sandbox) -> None:
    assert sandbox.env["KUBECONFIG"] == str(sandbox.root / "kubeconfig")
    assert (sandbox.root / "kubeconfig").stat().st_mode & 0o077 == 0
    assert sandbox.env["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
    assert set(sandbox.pids) == {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        "karpenter",
    }


def test_kubectl_answers_from_the_real_api_server(sandbox: Sandbox) -> None:
    version = json.loads(sandbox.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"] == KUBERNETES_VERSION
    done = sandbox.kubectl("get", "nodes,nodepools,nodeclaims,gpupools")
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stderr.lower()


def test_a_nodepool_on_the_kwok_nodeclass_launches_a_node_for_a_pod(sandbox: Sandbox) -> None:
    manifests = [
        {
            "apiVersion": "karpenter.kwok.sh/v1alpha1",
            "kind": "KWOKNodeClass",
            "metadata": {"name": "default"},
        },
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "gpu"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"example.com/pool": "gpu"}},
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.kwok.sh",
                            "kind": "KWOKNodeClass",
                            "name": "default",
                        },
                        "requirements": [
                            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
                        ],
                    },
                },
                "limits": {"nvidia.com/gpu": "8"},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "needs-gpu", "namespace": "default"},
            "spec": {
                "nodeSelector": {"example.com/pool": "gpu"},
                "containers": [
                    {
                        "name": "main",
                        "image": "example.invalid/none:1",
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ],
            },
        },
    ]
    done = sandbox.kubectl(
        "apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests})
    )
    assert done.returncode == 0, done.stderr
    pod = _wait(
        "the pod to run on a node Karpenter launched",
        lambda: (found := sandbox.get("pod", "needs-gpu"))["status"].get("phase") == "Running" and found,
    )
    node = sandbox.get("node", pod["spec"]["nodeName"])
    assert node["metadata"]["labels"]["karpenter.sh/nodepool"] == "gpu"
    nodeclaims = sandbox.get("nodeclaims")["items"]
    assert [c["status"]["nodeName"] for c in nodeclaims] == [node["metadata"]["name"]]
    assert sandbox.kubectl("delete", "pod", "needs-gpu", "--wait=false").returncode == 0


def test_the_readme_local_block_runs_against_it(sandbox: Sandbox) -> None:
    env_file = str(sandbox.root / "env")
    prepared = gpupool("demo", "--prepare-sandbox", env_file)
    assert prepared.returncode == 0, prepared.stdout + prepared.stderr

    launched = gpupool("invoke", "launch", SCHEDULE, "--cloud", "aws", "--env", env_file, "--json")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    outcome = json.loads(launched.stdout)
    assert not outcome["errors"], outcome
    claims = sandbox.get("gpunodeclaims")["items"]
    assert len(claims) == 2, claims

    joined = gpupool("demo", "--join-nodes", env_file)
    assert joined.returncode == 0, joined.stdout + joined.stderr
    assert joined.stdout.count("joined for") == 2, joined.stdout
    bound = gpupool("invoke", "bind", SCHEDULE, "--cloud", "aws", "--env", env_file, "--json")
    assert bound.returncode == 0, bound.stdout + bound.stderr
    phases = {c["metadata"]["name"]: c["status"]["phase"] for c in sandbox.get("gpunodeclaims")["items"]}
    assert set(phases.values()) == {"Bound"}, phases

    # The joined nodes are KWOK's: still Ready after the node controller's grace period.
    nodes = sandbox.get("nodes", "-l", "tensor-fusion.ai/node-provisioner")["items"]
    assert all(n["metadata"]["annotations"].get("kwok.x-k8s.io/node") == "fake" for n in nodes)

    compacted = gpupool("invoke", "compact", SCHEDULE, "--cloud", "aws", "--env", env_file, "--json")
    assert compacted.returncode == 0, compacted.stdout + compacted.stderr
    assert len(sandbox.get("gpunodeclaims")["items"]) == 2  # the pool's minimum, inside the protection


def test_status_describe_and_events_print_what_the_functions_recorded(sandbox: Sandbox) -> None:
    claims = sandbox.get("gpunodeclaims")["items"]
    assert claims, "run after the local block"
    claim = claims[0]["metadata"]["name"]

    status = gpupool("status", env={**sandbox.env, "COLUMNS": "240"})
    assert status.returncode == 0, status.stdout + status.stderr
    assert "tensor-fusion-elastic" in status.stdout
    assert claim in status.stdout
    decisions = status.stdout.split("latest decisions:", 1)[1]
    assert "ManagedNodeCreated" in decisions, status.stdout

    described = sandbox.kubectl("describe", "gpunodeclaim", claim)
    assert described.returncode == 0, described.stderr
    events_section = described.stdout.split("Events:", 1)[1]
    assert "gpupool" in events_section
    assert "ManagedNodeCreated" in events_section, described.stdout

    events = sandbox.kubectl("get", "events", "-A")
    assert events.returncode == 0, events.stderr
    assert "gpunodeclaim/" + claim in events.stdout, events.stdout
    assert "ManagedNodeCreated" in events.stdout


def test_down_leaves_no_process(sandbox: Sandbox) -> None:
    stopped = gpupool("sandbox", "down", "--dir", str(sandbox.root))
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    pids = {**sandbox.pids, "daemon": sandbox.daemon_pid}
    left = {name: pid for name, pid in pids.items() if process_alive(pid)}
    assert not left, left
    assert not list((sandbox.root / "cluster" / "pids").glob("*.pid"))
    assert not (sandbox.root / "sandbox.pid").exists()
