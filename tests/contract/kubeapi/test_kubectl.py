"""kubectl (v1.36.3, as `gpupool sandbox build` builds it) against the embedded API server:
discovery, get, create (from a generator and from a file), delete."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kubernetes import client

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from tests.programs import program_path

pytestmark = pytest.mark.usefixtures("needs_kubectl")
KUBECTL = program_path("kubectl")


def _kubectl(api: EmbeddedKubeAPI, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    env = {"KUBECONFIG": str(api.kubeconfig_path), "HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_kubectl_get_create_delete(kube_api: EmbeddedKubeAPI, core: client.CoreV1Api, tmp_path: Path) -> None:
    created = _kubectl(kube_api, tmp_path, "create", "namespace", "demo")
    assert created.returncode == 0, created.stderr
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: demo, labels: {app: web}}\n"
        "spec: {containers: [{name: main, image: busybox}]}\n"
    )
    from_file = _kubectl(kube_api, tmp_path, "create", "-f", str(manifest))
    assert from_file.returncode == 0, from_file.stderr
    assert core.read_namespaced_pod("web", "demo").metadata.labels == {"app": "web"}

    table = _kubectl(kube_api, tmp_path, "get", "pods", "-n", "demo")
    assert table.returncode == 0, table.stderr
    assert table.stdout.split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], table.stdout
    assert table.stdout.splitlines()[1].split()[:3] == ["web", "0/1", "Pending"]
    name = _kubectl(
        kube_api,
        tmp_path,
        "get",
        "pods",
        "-n",
        "demo",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    )
    assert name.stdout == "web", name.stderr

    deleted = _kubectl(kube_api, tmp_path, "delete", "pod", "web", "-n", "demo")
    assert deleted.returncode == 0, deleted.stderr
    assert core.list_namespaced_pod("demo").items == []
    missing = _kubectl(kube_api, tmp_path, "get", "pod", "web", "-n", "demo")
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def test_kubectl_sees_custom_resources(kube_api: EmbeddedKubeAPI, tmp_path: Path) -> None:
    manifest = tmp_path / "nodepool.yaml"
    manifest.write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: gpu}\n"
        "spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu},"
        " requirements: []}}}\n"
    )
    assert _kubectl(kube_api, tmp_path, "create", "-f", str(manifest)).returncode == 0
    listed = _kubectl(kube_api, tmp_path, "get", "nodepools.karpenter.sh", "-o", "name")
    assert listed.stdout.strip() == "nodepool.karpenter.sh/gpu", listed.stderr
    assert _kubectl(kube_api, tmp_path, "delete", "nodepool", "gpu").returncode == 0


def test_kubectl_prints_a_crds_printer_columns(
    kube_api: EmbeddedKubeAPI, custom: client.CustomObjectsApi, tmp_path: Path
) -> None:
    pool = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": {"name": "pool-a"},
        "spec": {},
    }
    custom.create_cluster_custom_object("tensor-fusion.ai", "v1", "gpupools", pool)
    custom.patch_cluster_custom_object_status(
        "tensor-fusion.ai", "v1", "gpupools", "pool-a", {"status": {"phase": "Running"}}
    )
    printed = _kubectl(kube_api, tmp_path, "get", "gpupools")
    header, row = printed.stdout.splitlines()[:2]
    assert header.split()[:2] == ["NAME", "PHASE"], printed.stderr
    assert row.split()[:2] == ["pool-a", "Running"]
