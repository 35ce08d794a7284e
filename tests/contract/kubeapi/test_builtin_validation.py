"""Built-in kinds are decoded and validated as kube-apiserver does: per kind, invalid objects a
real server rejects are rejected with its code, reason and field path — and nothing is stored;
unknown fields follow `fieldValidation` (Strict 400, Warn drops with a Warning, Ignore drops)."""

from __future__ import annotations

from typing import Any

import pytest
from kubeapi_builders import http_call, pod
from kubeapi_kinds import CRON, JOB, PATHS, PDB, ROLE, SERVICE, WEBHOOKS, with_value, workload

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

JsonObject = dict[str, Any]


def _pod(**spec: Any) -> JsonObject:
    return pod("p", **spec)


# (case, kind, object, code, reason, field path or message fragment)
INVALID: list[tuple[str, str, JsonObject, int, str, str]] = [
    (
        "pod pull policy",
        "Pod",
        with_value(_pod(), "spec.containers.0.imagePullPolicy", "Sometimes"),
        422,
        "Invalid",
        "spec.containers[0].imagePullPolicy",
    ),
    ("pod restart policy", "Pod", _pod(restartPolicy="Sometimes"), 422, "Invalid", "spec.restartPolicy"),
    (
        "pod no image",
        "Pod",
        with_value(_pod(), "spec.containers.0", {"name": "main"}),
        422,
        "Invalid",
        "spec.containers[0].image",
    ),
    (
        "pod duplicate container",
        "Pod",
        _pod(containers=[{"name": "a", "image": "i"}, {"name": "a", "image": "i"}]),
        422,
        "Invalid",
        "spec.containers[1].name",
    ),
    (
        "pod node name type",
        "Pod",
        _pod(nodeName=7),
        400,
        "BadRequest",
        "PodSpec.spec.nodeName of type string",
    ),
    (
        "pod toleration operator",
        "Pod",
        _pod(tolerations=[{"key": "k", "operator": "Maybe"}]),
        422,
        "Invalid",
        "spec.tolerations[0].operator",
    ),
    (
        "configmap value type",
        "ConfigMap",
        {"metadata": {"name": "c"}, "data": {"k": 1}},
        400,
        "BadRequest",
        "ConfigMap.data of type string",
    ),
    (
        "configmap key",
        "ConfigMap",
        {"metadata": {"name": "c"}, "data": {"a b": "1"}},
        422,
        "Invalid",
        "data[a b]",
    ),
    (
        "node unschedulable type",
        "Node",
        {"metadata": {"name": "n"}, "spec": {"unschedulable": "yes"}},
        400,
        "BadRequest",
        "NodeSpec.spec.unschedulable of type bool",
    ),
    (
        "node taint effect",
        "Node",
        {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Never"}]}},
        422,
        "Invalid",
        "spec.taints[0].effect",
    ),
    ("namespace name", "Namespace", {"metadata": {"name": "Bad_Name"}}, 422, "Invalid", "metadata.name"),
    ("service type", "Service", with_value(SERVICE, "spec.type", "Public"), 422, "Invalid", "spec.type"),
    (
        "service port range",
        "Service",
        with_value(SERVICE, "spec.ports", [{"port": 70000}]),
        422,
        "Invalid",
        "spec.ports[0].port",
    ),
    (
        "service port required",
        "Service",
        with_value(SERVICE, "spec.ports", [{"name": "http"}]),
        422,
        "Invalid",
        "spec.ports[0].port",
    ),
    (
        "deployment selector required",
        "Deployment",
        with_value(workload("Deployment"), "spec.selector", None),
        422,
        "Invalid",
        "spec.selector",
    ),
    (
        "deployment selector mismatch",
        "Deployment",
        with_value(workload("Deployment"), "spec.selector.matchLabels", {"app": "b"}),
        422,
        "Invalid",
        "spec.template.metadata.labels",
    ),
    (
        "deployment strategy",
        "Deployment",
        workload("Deployment", strategy={"type": "Blue"}),
        422,
        "Invalid",
        "spec.strategy.type",
    ),
    (
        "daemonset strategy",
        "DaemonSet",
        workload("DaemonSet", updateStrategy={"type": "Now"}),
        422,
        "Invalid",
        "spec.updateStrategy.type",
    ),
    ("statefulset service name", "StatefulSet", workload("StatefulSet"), 422, "Invalid", "spec.serviceName"),
    (
        "job restart policy",
        "Job",
        with_value(JOB, "spec.template.spec.restartPolicy", "Always"),
        422,
        "Invalid",
        "spec.template.spec.restartPolicy",
    ),
    (
        "cronjob concurrency",
        "CronJob",
        with_value(CRON, "spec.concurrencyPolicy", "Sometimes"),
        422,
        "Invalid",
        "spec.concurrencyPolicy",
    ),
    (
        "cronjob schedule required",
        "CronJob",
        with_value(CRON, "spec.schedule", None),
        422,
        "Invalid",
        "spec.schedule",
    ),
    (
        "role verbs required",
        "Role",
        with_value(ROLE, "rules", [{"resources": ["pods"]}]),
        422,
        "Invalid",
        "rules[0].verbs",
    ),
    (
        "rolebinding roleRef required",
        "RoleBinding",
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"}},
        422,
        "Invalid",
        "roleRef",
    ),
    (
        "webhook side effects",
        "ValidatingWebhookConfiguration",
        with_value(WEBHOOKS, "webhooks.0.sideEffects", "Maybe"),
        422,
        "Invalid",
        "webhooks[0].sideEffects",
    ),
    (
        "pdb both bounds",
        "PodDisruptionBudget",
        with_value(PDB, "spec", {"minAvailable": 1, "maxUnavailable": 1}),
        422,
        "Invalid",
        "spec",
    ),
    (
        "secret data not base64",
        "Secret",
        {"metadata": {"name": "s"}, "data": {"k": "not base64!"}},
        400,
        "BadRequest",
        "illegal base64 data at input byte 3",
    ),
    (
        "serviceaccount automount type",
        "ServiceAccount",
        {"metadata": {"name": "sa"}, "automountServiceAccountToken": "yes"},
        400,
        "BadRequest",
        "ServiceAccount.automountServiceAccountToken of type bool",
    ),
    (
        "replicaset selector mismatch",
        "ReplicaSet",
        {
            **workload("ReplicaSet"),
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "spec": {**workload("ReplicaSet")["spec"], "selector": {"matchLabels": {"app": "other"}}},
        },
        422,
        "Invalid",
        "spec.template.metadata.labels",
    ),
    (
        "clusterrole verbs required",
        "ClusterRole",
        {"metadata": {"name": "cr"}, "rules": [{"apiGroups": [""], "resources": ["nodes"]}]},
        422,
        "Invalid",
        "rules[0].verbs",
    ),
    (
        "event count type",
        "Event",
        {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "count": "many"},
        400,
        "BadRequest",
        "Event.count of type int64",
    ),
    (
        "apiservice priority required",
        "APIService",
        {
            "metadata": {"name": "v1.metrics.gpupool.dev"},
            "spec": {"group": "metrics.gpupool.dev", "version": "v1"},
        },
        422,
        "Invalid",
        "spec.groupPriorityMinimum",
    ),
    (
        "lease duration type",
        "Lease",
        {"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": "long"}},
        400,
        "BadRequest",
        "LeaseSpec.spec.leaseDurationSeconds of type int64",
    ),
]


@pytest.mark.parametrize(
    ("kind", "obj", "code", "reason", "where"), [case[1:] for case in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_objects_are_refused_like_upstream(
    kube_api: EmbeddedKubeAPI, kind: str, obj: JsonObject, code: int, reason: str, where: str
) -> None:
    before = kube_api.cluster.store.resource_version
    status, body, _ = http_call(kube_api.port, "POST", PATHS[kind], obj)
    assert (status, body["kind"], body["reason"]) == (code, "Status", reason), body
    if code == 422:
        assert where in [cause["field"] for cause in body["details"]["causes"]], body
    else:
        assert where in body["message"], body
    assert kube_api.cluster.store.resource_version == before


def test_unknown_fields_follow_field_validation(kube_api: EmbeddedKubeAPI) -> None:
    typo = with_value(_pod(), "spec.nodeNmae", "n1")
    path = PATHS["Pod"]
    status, body, _ = http_call(kube_api.port, "POST", path + "?fieldValidation=Strict", typo)
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.nodeNmae"'
    )
    status, body, warnings = http_call(kube_api.port, "POST", path, typo)
    assert status == 201 and "nodeNmae" not in body["spec"]
    assert warnings == ['299 - "unknown field \\"spec.nodeNmae\\""']
    other = with_value(typo, "metadata.name", "q")
    status, body, warnings = http_call(kube_api.port, "POST", path + "?fieldValidation=Ignore", other)
    assert (status, warnings) == (201, [])


def test_an_update_is_validated_too(kube_api: EmbeddedKubeAPI) -> None:
    http_call(kube_api.port, "POST", PATHS["Service"], SERVICE)
    current = http_call(kube_api.port, "GET", PATHS["Service"] + "/s")[1]
    moved = with_value(current, "spec.clusterIP", "10.96.9.9")
    status, body, _ = http_call(kube_api.port, "PUT", PATHS["Service"] + "/s", moved)
    assert (status, body["reason"]) == (422, "Invalid")
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.clusterIPs[0]"]
