"""kubectl against the embedded API server: client-side `apply` (create, unchanged,
configured), `diff`, server-side apply with its conflicts and `--force-conflicts`,
`create --dry-run=server`, `explain` (OpenAPI v3), `get -o wide` with each kind's columns and
`get -w` (Table watch events) and `auth can-i` (access reviews answered by the sandbox).

The kubectl is `$GPUPOOL_KUBECTL` (to try another minor version) or the one `gpupool sandbox
build` builds (v1.36.3); never skipped.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from kubernetes import client

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from tests.programs import program_path

pytestmark = pytest.mark.usefixtures("needs_kubectl")
KUBECTL = os.environ.get("GPUPOOL_KUBECTL") or program_path("kubectl")
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: main, image: "nginx:1.25"}]}
"""


def _kubectl(api: EmbeddedKubeAPI, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    env = {"KUBECONFIG": str(api.kubeconfig_path), "HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def _manifest(home: Path, replicas: int) -> str:
    path = home / f"deployment-{replicas}.yaml"
    path.write_text(DEPLOYMENT.replace("REPLICAS", str(replicas)))
    return str(path)


def test_client_side_apply_and_diff(
    kube_api: EmbeddedKubeAPI, api_client: client.ApiClient, tmp_path: Path
) -> None:
    apps = client.AppsV1Api(api_client)
    first = _kubectl(kube_api, tmp_path, "apply", "-f", _manifest(tmp_path, 2))
    assert first.stdout.strip() == "deployment.apps/web created", first.stderr
    again = _kubectl(kube_api, tmp_path, "apply", "-f", _manifest(tmp_path, 2))
    assert again.stdout.strip() == "deployment.apps/web unchanged", again.stderr
    stored = apps.read_namespaced_deployment("web", "default")
    assert (stored.spec.replicas, stored.spec.strategy.type, stored.spec.revision_history_limit) == (
        2,
        "RollingUpdate",
        10,
    )
    diff = _kubectl(kube_api, tmp_path, "diff", "-f", _manifest(tmp_path, 3))
    assert diff.returncode == 1, diff.stderr  # 1: differences found
    assert "-  replicas: 2" in diff.stdout and "+  replicas: 3" in diff.stdout
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 2  # diff is a dry run
    changed = _kubectl(kube_api, tmp_path, "apply", "-f", _manifest(tmp_path, 3))
    assert changed.stdout.strip() == "deployment.apps/web configured", changed.stderr
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 3


def test_server_side_apply_conflicts_and_force(
    kube_api: EmbeddedKubeAPI, api_client: client.ApiClient, tmp_path: Path
) -> None:
    apps = client.AppsV1Api(api_client)
    created = _kubectl(kube_api, tmp_path, "apply", "--server-side", "-f", _manifest(tmp_path, 2))
    assert created.stdout.strip() == "deployment.apps/web serverside-applied", created.stderr
    managers = [
        (m.manager, m.operation)
        for m in apps.read_namespaced_deployment("web", "default").metadata.managed_fields
    ]
    assert managers == [("kubectl", "Apply")]
    refused = _kubectl(
        kube_api, tmp_path, "apply", "--server-side", "--field-manager=other", "-f", _manifest(tmp_path, 3)
    )
    assert refused.returncode != 0
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas'
        in refused.stderr
    )
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 2
    forced = _kubectl(
        kube_api,
        tmp_path,
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        _manifest(tmp_path, 3),
    )
    assert forced.returncode == 0, forced.stderr
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 3


def test_create_dry_run_server_stores_nothing(
    kube_api: EmbeddedKubeAPI, core: client.CoreV1Api, tmp_path: Path
) -> None:
    dry = _kubectl(
        kube_api,
        tmp_path,
        "create",
        "configmap",
        "settings",
        "--from-literal=a=b",
        "--dry-run=server",
        "-o",
        "name",
    )
    assert dry.stdout.strip() == "configmap/settings", dry.stderr
    assert core.list_namespaced_config_map("default").items == []


def test_explain_reads_the_openapi_schemas(kube_api: EmbeddedKubeAPI, tmp_path: Path) -> None:
    builtin = _kubectl(kube_api, tmp_path, "explain", "pods.spec.containers.imagePullPolicy")
    assert builtin.returncode == 0, builtin.stderr
    assert "FIELD: imagePullPolicy <string>" in builtin.stdout and "IfNotPresent" in builtin.stdout
    custom = _kubectl(kube_api, tmp_path, "explain", "gpupools.spec")
    assert custom.returncode == 0, custom.stderr
    assert "GROUP:      tensor-fusion.ai" in custom.stdout and "FIELD: spec <Object>" in custom.stdout


def test_get_wide_prints_each_kinds_columns(
    kube_api: EmbeddedKubeAPI, core: client.CoreV1Api, tmp_path: Path
) -> None:
    core.create_node({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/gpu": ""}}})
    core.patch_node_status(
        "n1",
        {
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"kubeletVersion": "v1.30.2"},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
            }
        },
    )
    core.create_namespaced_pod(
        "default",
        {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}},
    )
    pods = _kubectl(kube_api, tmp_path, "get", "pods", "-o", "wide").stdout.splitlines()
    assert pods[0].split() == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    assert pods[1].split()[:3] == ["p", "0/1", "Pending"] and pods[1].split()[6] == "n1"
    nodes = _kubectl(kube_api, tmp_path, "get", "nodes", "-o", "wide").stdout.splitlines()
    assert nodes[0].split()[:6] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP"]
    row = nodes[1].split()
    assert (row[0], row[1], row[2], row[4], row[5]) == ("n1", "Ready", "gpu", "v1.30.2", "10.0.0.5")


def test_get_watch_prints_rows_as_they_come(
    kube_api: EmbeddedKubeAPI, core: client.CoreV1Api, tmp_path: Path
) -> None:
    assert KUBECTL is not None
    core.create_namespaced_pod(
        "default", {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    env = {"KUBECONFIG": str(kube_api.kubeconfig_path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    watcher = subprocess.Popen([KUBECTL, "get", "pods", "-w"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout is not None
        assert watcher.stdout.readline().split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert watcher.stdout.readline().split()[:3] == ["a", "0/1", "Pending"]
        core.create_namespaced_pod(
            "default", {"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        )
        assert watcher.stdout.readline().split()[:3] == ["b", "0/1", "Pending"]
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)


def test_auth_can_i_is_answered_by_the_sandbox_and_by_its_bindings(
    kube_api: EmbeddedKubeAPI, tmp_path: Path
) -> None:
    from gpupool.sandbox.kubeapi.reviews import book_of

    # No RBAC registered: the sandbox enforces none, so every self review says yes.
    allowed = _kubectl(kube_api, tmp_path, "auth", "can-i", "create", "pods")
    assert (allowed.returncode, allowed.stdout.strip()) == (0, "yes"), allowed.stderr
    # Once bindings exist they decide; kubectl's anonymous caller is granted only `get pods`.
    book_of(kube_api.cluster).bind(
        [{"kind": "Group", "name": "system:unauthenticated"}],
        [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    )
    granted = _kubectl(kube_api, tmp_path, "auth", "can-i", "get", "pods")
    refused = _kubectl(kube_api, tmp_path, "auth", "can-i", "delete", "pods")
    assert (granted.returncode, granted.stdout.strip()) == (0, "yes"), granted.stderr
    assert refused.returncode == 1 and refused.stdout.startswith("no"), refused.stderr
