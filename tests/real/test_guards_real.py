"""The chart's pod and node guards evaluated by the real kube-apiserver (issue 33): the rendered
ValidatingAdmissionPolicies are applied to etcd + kube-apiserver as `gpupool sandbox build` built
them, and requests are made as a tenant and as the relay (the admin impersonating each, both allowed
by RBAC, so only the policies decide). What the cel-python double in tests/unit/admission_policy.py
cannot prove is proved here: Kubernetes' own CEL, types and `pods/status` subresource.

Covers: a stranger asking for an index resource with the scheduler and a nodeSelector (attempt 2)
refused, a worker and `dedicated-gpu` alone admitted; a forged `gpu-ids` through `pods/status`
(attempt 8) refused; the relay writing the scheduler-owned annotations admitted, and its change of
`qos` or of a label refused; the relay adding the used-by taint admitted, and its cordon refused.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.programs import require_built

helm = pytest.importorskip("helm_python")
CHART = Path(__file__).resolve().parents[2] / "incluster" / "chart"
T = "tensor-fusion.ai/"
TENANT = "system:serviceaccount:tenant-a:default"
RELAY = "system:serviceaccount:gpupool-system:gp-scheduler"


class Api:
    """Calls as the admin, or as another user the admin impersonates."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.context = ssl.create_default_context(cafile=str(plane.pki.ca_cert))

    def call(self, method: str, path: str, body: Any = None, *, user: str | None = None) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self.plane.token}", "Content-Type": "application/json"}
        if method == "PATCH":
            headers["Content-Type"] = "application/merge-patch+json"
        if user is not None:
            headers |= {"Impersonate-User": user, "Impersonate-Group": "system:authenticated"}
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.plane.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    require_built("etcd", "kube-apiserver")
    plane = ControlPlane(tmp_path_factory.mktemp("guards"), components=("etcd", "kube-apiserver"))
    plane.start()
    try:
        client = Api(plane)
        rendered = helm.Chart.load(CHART).render({}, name="gp", namespace="gpupool-system")
        text = rendered["gpupool/templates/pod-guard.yaml"]
        for document in (d for d in yaml.safe_load_all(text) if d):
            plural = "validatingadmissionpolicies"
            if document["kind"] == "ValidatingAdmissionPolicyBinding":
                plural = "validatingadmissionpolicybindings"
            status, answer = client.call("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", document)
            assert status == 201, answer
        for namespace in ("tenant-a",):
            client.call("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
            client.call(
                "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "default"}}
            )
        for user in (TENANT, RELAY):  # RBAC lets both do anything: only the policies decide
            binding = {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "all-" + user.replace(":", "-")},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            }
            status, answer = client.call(
                "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding
            )
            assert status == 201, answer
        _wait_for_the_policies(client)
        yield client
    finally:
        plane.stop()


def _pod(name: str, *, labels: dict[str, str], notes: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "annotations": notes},
        "spec": {
            "schedulerName": "tensor-fusion-scheduler",
            "nodeSelector": {"kubernetes.io/hostname": "victim-node"},
            "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {T + "index_0": "1"}}}],
        },
    }


STRANGER = _pod("squatter", labels={}, notes={})
WORKER = {"labels": {T + "enabled": "true"}, "notes": {T + "vram-limit": "4Gi", T + "tflops-limit": "10"}}
PODS = "/api/v1/namespaces/tenant-a/pods"


def _wait_for_the_policies(api: Api) -> None:
    """Each policy and binding is loaded by the API server's informer on its own, within a few
    seconds: wait until both guards refuse a probe (dry runs, so nothing is written)."""
    probe = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "probe"}}
    status, answer = api.call("POST", "/api/v1/nodes", probe)
    assert status == 201, answer
    probes = {
        "pod guard": ("POST", PODS + "?dryRun=All", STRANGER),
        "node guard": ("PATCH", "/api/v1/nodes/probe?dryRun=All", {"spec": {"unschedulable": True}}),
    }
    deadline = time.monotonic() + 30
    while probes and time.monotonic() < deadline:
        for guard, (method, path, body) in list(probes.items()):
            status, _ = api.call(method, path, body, user=TENANT if guard == "pod guard" else RELAY)
            if status in (403, 422):
                del probes[guard]
        time.sleep(0.5)
    assert not probes, f"never enforced: {', '.join(probes)}"


def test_a_stranger_is_refused_and_gpu_pods_are_admitted(api: Api) -> None:
    status, answer = api.call("POST", PODS, STRANGER, user=TENANT)
    assert status in (403, 422) and "asks gpupool for GPUs" in answer["message"], answer
    status, answer = api.call("POST", PODS, _pod("w1", **WORKER), user=TENANT)
    assert status == 201, answer
    whole = _pod("whole", labels={T + "enabled": "true"}, notes={T + "dedicated-gpu": "true"})
    status, answer = api.call("POST", PODS, whole, user=TENANT)
    assert status == 201, answer


def test_gpu_ids_forged_through_pods_status_are_refused(api: Api) -> None:
    status, pod = api.call("POST", PODS, _pod("w2", **WORKER), user=TENANT)
    assert status == 201, pod
    pod["metadata"]["annotations"][T + "gpu-ids"] = "gpu-victim-0"
    status, answer = api.call("PUT", f"{PODS}/w2/status", pod, user=TENANT)
    assert status in (403, 422) and "written by tensor-fusion-scheduler" in answer["message"], answer


def test_the_relay_writes_the_scheduler_owned_annotations_and_nothing_else(api: Api) -> None:
    status, pod = api.call("POST", PODS, _pod("w3", **WORKER), user=TENANT)
    assert status == 201, pod
    owned = {"metadata": {"annotations": {T + "gpu-ids": "gpu-a-0", "gpupool.io/allocation": "{}"}}}
    status, answer = api.call("PATCH", f"{PODS}/w3", owned, user=RELAY)
    assert status == 200, answer
    for change in (
        {"metadata": {"annotations": {T + "qos": "critical"}}},
        {"metadata": {"labels": {"app": "other"}}},
        {"metadata": {"annotations": {"team": "x"}}},
    ):
        status, answer = api.call("PATCH", f"{PODS}/w3", change, user=RELAY)
        assert status in (403, 422), (change, answer)


def test_the_relay_only_adds_or_removes_the_used_by_taint(api: Api) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1", "labels": {"zone": "a"}}}
    status, answer = api.call("POST", "/api/v1/nodes", node)
    assert status == 201, answer
    # The API server's TaintNodesByCondition gave the new node its not-ready taint: the relay's
    # write keeps it (a merge patch replaces the whole list).
    present = answer["spec"].get("taints", [])
    used_by = {"key": T + "used-by", "value": "tensor-fusion", "effect": "PreferNoSchedule"}
    taints = {"spec": {"taints": [*present, used_by]}}
    status, answer = api.call("PATCH", "/api/v1/nodes/gpu-1", taints, user=RELAY)
    assert status == 200, answer.get("message")
    for change in (
        {"spec": {"unschedulable": True}},
        {"metadata": {"labels": {"zone": "b"}}},
        {"spec": {"taints": [used_by]}},  # drops the not-ready taint
    ):
        status, answer = api.call("PATCH", "/api/v1/nodes/gpu-1", change, user=RELAY)
        assert status in (403, 422) and "used-by taint" in answer["message"], (change, answer)
    status, answer = api.call("PATCH", "/api/v1/nodes/gpu-1", {"spec": {"unschedulable": True}}, user=TENANT)
    assert status == 200, answer  # the node guard judges the relay only
