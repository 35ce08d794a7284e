"""The chart's RBAC for the scheduling pod's two identities, asked of the real kube-apiserver (issue 33).

The rendered ServiceAccounts, roles and bindings (scheduler-rbac.yaml) and the pod and node guards
(pod-guard.yaml) are applied to etcd + kube-apiserver as `gpupool sandbox build` built them, whose
bootstrap roles (system:kube-scheduler, system:volume-scheduler, the authentication reader) are the
real ones. The server then answers SubjectAccessReviews for each identity and takes requests made as
each by impersonation.

Covers: the relay's ServiceAccount may make every call gpupool_incluster/relay/kube_calls.py lists
and none of kube-scheduler's (delete a pod anywhere, read or list Secrets, create pods, evict, exec,
update a node or another component's Lease, grant itself roles); kube-scheduler's ServiceAccount may
do what a scheduler does (bind, preempt, its own Lease) but not patch a pod or node, nor write the
relay's allocation annotations through `pods/status` (the pod guard refuses it as it refuses a
tenant); as the relay a pod's scheduler-owned annotations are written and a pod deletion refused.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from gpupool.sandbox.cluster.controlplane import ControlPlane
from gpupool_incluster.relay.kube_calls import RELAY_CLUSTER_CALLS, RELAY_NAMESPACE_CALLS
from tests.programs import require_built
from tests.real.test_guards_real import CHART, STRANGER, Api, _pod

helm = pytest.importorskip("helm_python")
NS = "gpupool-system"
T = "tensor-fusion.ai/"
RELAY = f"system:serviceaccount:{NS}:gp-scheduler"
KUBE_SCHEDULER = f"system:serviceaccount:{NS}:gp-kube-scheduler"
TENANT = "system:serviceaccount:tenant-a:default"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
PLURALS = {
    "ServiceAccount": f"/api/v1/namespaces/{NS}/serviceaccounts",
    "Secret": f"/api/v1/namespaces/{NS}/secrets",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "ValidatingAdmissionPolicy": f"{ADMISSION}/validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": f"{ADMISSION}/validatingadmissionpolicybindings",
}


def _path(document: dict[str, Any]) -> str:
    kind, namespace = document["kind"], document["metadata"].get("namespace")
    if kind in ("Role", "RoleBinding"):
        return f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/{kind.lower()}s"
    return PLURALS[kind]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    require_built("etcd", "kube-apiserver")
    plane = ControlPlane(tmp_path_factory.mktemp("rbac"), components=("etcd", "kube-apiserver"))
    plane.start()
    try:
        client = Api(plane)
        for namespace in (NS, "tenant-a"):
            status, answer = client.call("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
            assert status == 201, answer
        rendered = helm.Chart.load(CHART).render({}, name="gp", namespace=NS)
        for template in ("scheduler-rbac.yaml", "pod-guard.yaml"):
            for document in (d for d in yaml.safe_load_all(rendered[f"gpupool/templates/{template}"]) if d):
                status, answer = client.call("POST", _path(document), document)
                assert status == 201, (document["kind"], answer)
        for rbac in (  # the tenant may do anything to pods in its namespace: only the guards stop it
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "pods", "namespace": "tenant-a"},
                "rules": [{"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["*"]}],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "pods", "namespace": "tenant-a"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods"},
                "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "tenant-a"}],
            },
        ):
            status, answer = client.call("POST", _path(rbac), rbac)
            assert status == 201, answer
        account = {"metadata": {"name": "default"}}  # the ServiceAccount admission plugin wants it
        status, answer = client.call("POST", "/api/v1/namespaces/tenant-a/serviceaccounts", account)
        assert status == 201, answer
        _wait_for_the_guards(client)
        yield client
    finally:
        plane.stop()


def _wait_for_the_guards(api: Api) -> None:
    """Until the API server's informers hold the tenant's RoleBinding and both guards: a probe each
    (dry runs) refused by a policy, not by RBAC."""
    status, answer = api.call(
        "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "probe"}}
    )
    assert status == 201, answer
    probes = {
        "pod guard": ("POST", "/api/v1/namespaces/tenant-a/pods?dryRun=All", STRANGER, TENANT),
        "node guard": ("PATCH", "/api/v1/nodes/probe?dryRun=All", {"spec": {"unschedulable": True}}, RELAY),
    }
    deadline = time.monotonic() + 30
    while probes and time.monotonic() < deadline:
        for guard, (method, path, body, user) in list(probes.items()):
            status, answer = api.call(method, path, body, user=user)
            if status in (403, 422) and "ValidatingAdmissionPolicy" in str(answer.get("message")):
                del probes[guard]
        time.sleep(0.5)
    assert not probes, f"never enforced: {', '.join(probes)} ({answer})"


def allowed(
    api: Api, user: str, group: str, resource: str, verb: str, *, namespace: str = "", name: str = ""
) -> bool:
    """The API server's own answer: may `user` (a ServiceAccount) do `verb` on `resource`?"""
    plural, _, subresource = resource.partition("/")
    account = user.split(":")
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user,
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{account[2]}",
                "system:authenticated",
            ],
            "resourceAttributes": {
                "group": group,
                "resource": plural,
                "subresource": subresource,
                "verb": verb,
                "namespace": namespace,
                "name": name,
            },
        },
    }
    status, answer = api.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    assert status == 201, answer
    return bool(answer["status"].get("allowed"))


def test_the_relay_may_make_every_call_it_lists(api: Api) -> None:
    refused = [
        call for call in sorted(RELAY_CLUSTER_CALLS) if not allowed(api, RELAY, *call, namespace="tenant-a")
    ]
    refused += [
        call
        for call in sorted(RELAY_NAMESPACE_CALLS)
        if not allowed(api, RELAY, *call, namespace=NS, name="" if call[2] == "create" else "gpupool-relay")
    ]
    assert refused == []


# What a compromised relay must not do: kube-scheduler's powers and a cluster admin's.
RELAY_MUST_NOT = [
    ("", "pods", "delete", "tenant-a", ""),
    ("", "pods", "delete", NS, ""),
    ("", "pods", "deletecollection", "tenant-a", ""),
    ("", "pods", "create", "tenant-a", ""),
    ("", "pods", "update", "tenant-a", ""),
    ("", "pods/eviction", "create", "tenant-a", ""),
    ("", "pods/exec", "create", "tenant-a", ""),
    ("", "pods/status", "patch", "tenant-a", ""),
    ("", "secrets", "get", NS, "gp-kube-scheduler-token"),
    ("", "secrets", "list", "", ""),
    ("", "configmaps", "get", "kube-system", "extension-apiserver-authentication"),
    ("", "nodes", "update", "", ""),
    ("", "nodes", "delete", "", ""),
    ("", "nodes/status", "patch", "", ""),
    ("", "serviceaccounts/token", "create", NS, "gp-kube-scheduler"),
    ("coordination.k8s.io", "leases", "update", NS, "tensor-fusion-scheduler"),
    ("rbac.authorization.k8s.io", "clusterrolebindings", "create", "", ""),
    ("rbac.authorization.k8s.io", "clusterroles", "escalate", "", ""),
    ("", "users", "impersonate", "", ""),
    ("tensor-fusion.ai", "gpus", "update", "", ""),
]


@pytest.mark.parametrize(("group", "resource", "verb", "namespace", "name"), RELAY_MUST_NOT)
def test_the_relay_is_refused_what_it_does_not_do(
    api: Api, group: str, resource: str, verb: str, namespace: str, name: str
) -> None:
    assert not allowed(api, RELAY, group, resource, verb, namespace=namespace, name=name)


def test_kube_scheduler_schedules_but_writes_no_pod_or_node(api: Api) -> None:
    for call in [
        ("", "pods/binding", "create", "tenant-a", ""),
        ("", "pods", "delete", "tenant-a", ""),  # preemption
        ("", "pods/status", "patch", "tenant-a", ""),
        ("coordination.k8s.io", "leases", "update", NS, "tensor-fusion-scheduler"),
    ]:
        assert allowed(api, KUBE_SCHEDULER, *call[:3], namespace=call[3], name=call[4]), call
    for call in [
        ("", "pods", "patch", "tenant-a", ""),
        ("", "nodes", "patch", "", ""),
        ("", "secrets", "get", NS, "gp-kube-scheduler-token"),
        ("coordination.k8s.io", "leases", "update", NS, "gpupool-relay"),
    ]:
        assert not allowed(api, KUBE_SCHEDULER, *call[:3], namespace=call[3], name=call[4]), call


PODS = "/api/v1/namespaces/tenant-a/pods"
WORKER = {"labels": {T + "enabled": "true"}, "notes": {T + "vram-limit": "4Gi", T + "tflops-limit": "10"}}


def test_requests_as_each_identity(api: Api) -> None:
    status, pod = api.call("POST", PODS, _pod("w1", **WORKER), user=TENANT)
    assert status == 201, pod
    owned = {"metadata": {"annotations": {T + "gpu-ids": "gpu-a-0", "gpupool.io/allocation": "{}"}}}
    status, answer = api.call("PATCH", f"{PODS}/w1", owned, user=RELAY)
    assert status == 200, answer  # the relay's one pod write
    status, answer = api.call("DELETE", f"{PODS}/w1", user=RELAY)
    assert status == 403, answer
    status, answer = api.call("GET", f"/api/v1/namespaces/{NS}/secrets", user=RELAY)
    assert status == 403, answer
    # kube-scheduler: RBAC refuses a pod patch; through pods/status, which it may write, the pod
    # guard refuses the relay's annotations as it refuses a tenant's.
    forged = {"metadata": {"annotations": {T + "gpu-ids": "gpu-victim-0"}}}
    status, answer = api.call("PATCH", f"{PODS}/w1", forged, user=KUBE_SCHEDULER)
    assert status == 403, answer
    status, answer = api.call("PATCH", f"{PODS}/w1/status", forged, user=KUBE_SCHEDULER)
    assert status in (403, 422) and "written by tensor-fusion-scheduler" in answer["message"], answer
    status, answer = api.call(
        "PATCH", f"{PODS}/w1/status", {"status": {"nominatedNodeName": "n1"}}, user=KUBE_SCHEDULER
    )
    assert status == 200, answer  # what kube-scheduler writes there is still admitted


def test_the_node_guard_lets_the_relay_set_only_the_usable_gpus_label(api: Api) -> None:
    """kube-scheduler's cue that a node's GPUs changed (gpupool.core.allocator.usable_gpus): the
    real API server admits the relay's count and refuses any other value or label."""
    node = "/api/v1/nodes/probe?dryRun=All"
    status, answer = api.call(
        "PATCH", node, {"metadata": {"labels": {"gpupool.io/usable-gpus": "2"}}}, user=RELAY
    )
    assert status == 200, answer
    for labels in ({"gpupool.io/usable-gpus": "lots"}, {"gpupool.io/usable-gpus": "2", "zone": "b"}):
        status, answer = api.call("PATCH", node, {"metadata": {"labels": labels}}, user=RELAY)
        assert status in (403, 422) and "usable-gpus" in answer["message"], (labels, answer)
