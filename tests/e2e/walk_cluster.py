"""The install walks' cluster (tests/e2e/test_install_guides.py): one real control plane the walks of a
module share, what the real `helm upgrade --install --wait` left on it, and its reset between walks.

The plane is etcd, kube-apiserver, the controller manager (its token controller fills the functions'
token Secret), kube-scheduler and KWOK, with two KWOK nodes: a system node for the scheduler's pods
and a GPU node labelled and tainted as the guides' GPU nodes are, for the node agent's. KWOK makes
the pods on its nodes Running and Ready without pulling an image or running a container, so `helm
--wait` proves that every pod was admitted (webhooks, admission policies, RuntimeClass), scheduled
and counted ready by its controller — not that its process starts; `every_workload_runs_a_pushed_image`
adds the image check a real node's pull would make. Not the real tier's shared plane
(tests/real/conftest.py): the chart brings cluster-wide webhooks and admission policies, and each
guide's uninstall deletes gpupool's CRDs, which that plane's other tests need.

Must not: reach a network beyond 127.0.0.1, or leave a process running after the plane stops.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shlex
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from gpupool.sandbox.cluster.build import binary
from gpupool.sandbox.cluster.controlplane import KWOK_NODE_ANNOTATION, KWOK_NODE_VALUE, ControlPlane

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
SYSTEM_NODE = "walk-system-1"
GPU_NODE = "walk-gpu-1"
NODES: dict[str, tuple[dict[str, str], list[dict[str, str]]]] = {  # name → labels, taints
    SYSTEM_NODE: ({}, []),
    GPU_NODE: (
        {"nvidia.com/gpu.present": "true"},
        [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    ),
}
KEPT_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}
UPSTREAM_IMAGES = ("registry.k8s.io/kube-scheduler:",)  # the chart's images a guide does not push


@contextlib.contextmanager
def started(root: Path) -> Iterator[ControlPlane]:
    """The walks' control plane under `root`, with its two KWOK nodes; stopped on the way out."""
    plane = ControlPlane(root, components=COMPONENTS)
    plane.start()
    try:
        for name, (labels, taints) in NODES.items():
            metadata = {
                "name": name,
                "annotations": {KWOK_NODE_ANNOTATION: KWOK_NODE_VALUE},
                "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **labels},
            }
            plane.request("POST", "/api/v1/nodes", {"metadata": metadata, "spec": {"taints": taints}})
        yield plane
    finally:
        plane.stop()


def admin_kubeconfig(plane: ControlPlane, path: Path) -> Path:
    """The admin's kubeconfig with the CA inline, as eksctl and ACK write one (the guides read
    `certificate-authority-data` from it)."""
    config = yaml.safe_load(plane.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    ca = Path(cluster.pop("certificate-authority")).read_bytes()
    cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def tool(env: Mapping[str, str], name: str, *args: str) -> str:
    """The real helm or kubectl (`name`) with the walk's environment; its output (a failure fails
    the test with the command and its error)."""
    done = subprocess.run(
        [str(binary(name)), *args], env=dict(env), capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{shlex.join([name, *args])}: {done.stderr[-2000:]}"
    return done.stdout


def releases(env: Mapping[str, str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(tool(env, "helm", "list", "--all-namespaces", "-o", "json"))
    return found


def deployed(env: Mapping[str, str]) -> tuple[list[dict[str, Any]], str]:
    """The one release's objects as the real helm installed them (`helm get manifest`), and its
    namespace."""
    (release,) = releases(env)
    manifest = tool(env, "helm", "get", "manifest", release["name"], "--namespace", release["namespace"])
    return [d for d in yaml.safe_load_all(manifest) if d], release["namespace"]


def every_workload_runs_a_pushed_image(env: Mapping[str, str], kubeconfig: Path, pushed: set[str]) -> None:
    """What `helm upgrade --install --wait` left: every Deployment of the release available, every
    DaemonSet ready on each node it selects (the agent's on the GPU node: at least one pod), every pod
    Running and Ready, and every container of every pod — init containers too — on an image the guide
    pushed (`pushed`) or an upstream one the chart names."""
    from kubernetes import client, config

    documents, namespace = deployed(env)
    apps = client.AppsV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    workloads = [d for d in documents if d["kind"] in ("Deployment", "DaemonSet")]
    assert {d["kind"] for d in workloads} == {"Deployment", "DaemonSet"}
    for document in workloads:
        name = document["metadata"]["name"]
        if document["kind"] == "Deployment":
            status = apps.read_namespaced_deployment_status(name, namespace).status
            assert status.available_replicas and status.available_replicas == status.replicas, (name, status)
        else:
            status = apps.read_namespaced_daemon_set_status(name, namespace).status
            ready, wanted = status.number_ready, status.desired_number_scheduled
            assert ready >= 1 and ready == wanted, (name, status)
    pods = client.CoreV1Api(apps.api_client).list_namespaced_pod(namespace).items
    assert GPU_NODE in {pod.spec.node_name for pod in pods}, "no pod of the release on the GPU node"
    for pod in pods:
        ready = {c.type: c.status for c in pod.status.conditions or []}.get("Ready")
        assert pod.status.phase == "Running" and ready == "True", (pod.metadata.name, pod.status.phase)
        for container in (pod.spec.init_containers or []) + pod.spec.containers:
            assert container.image in pushed or container.image.startswith(UPSTREAM_IMAGES), (
                f"{pod.metadata.name}/{container.name} runs {container.image}, which the guide never pushed"
            )


def reset(env: Mapping[str, str]) -> None:
    """Leave the shared plane as a walk found it, whatever the walk left (a broken guide stops before
    its uninstall): releases, gpupool's CRDs, namespaces, RuntimeClasses, nodes beyond the plane's
    own, the functions' ledger Leases in `default`. The namespaces' deletion waits for the pods (with
    `helm uninstall --wait` instead, one reset after a rollout took 250 s, without it 12 s)."""
    for release in releases(env):
        tool(env, "helm", "uninstall", release["name"], "--namespace", release["namespace"])
    crds = [
        c for c in tool(env, "kubectl", "get", "crd", "-o", "name").split() if c.endswith(".tensor-fusion.ai")
    ]
    if crds:
        tool(env, "kubectl", "delete", "--wait", *crds)
    namespaces = tool(env, "kubectl", "get", "namespaces", "-o", "name").split()
    left = [n for n in namespaces if n.removeprefix("namespace/") not in KEPT_NAMESPACES]
    if left:
        tool(env, "kubectl", "delete", "--wait", "--timeout=120s", *left)
    tool(env, "kubectl", "delete", "runtimeclass", "--all")
    nodes = [
        n
        for n in tool(env, "kubectl", "get", "nodes", "-o", "name").split()
        if n.removeprefix("node/") not in NODES
    ]
    if nodes:
        tool(env, "kubectl", "delete", *nodes)
    tool(env, "kubectl", "-n", "default", "delete", "leases", "--all")
