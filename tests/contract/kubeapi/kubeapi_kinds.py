"""Valid objects of the built-in kinds, and the paths they are created under, for the contract
tests of validation and defaulting."""

from __future__ import annotations

import copy
from typing import Any

JsonObject = dict[str, Any]
POD_TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}


def workload(kind: str, **spec: Any) -> JsonObject:
    body: JsonObject = {"selector": {"matchLabels": {"app": "a"}}, "template": copy.deepcopy(POD_TEMPLATE)}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"}, "spec": body}


def with_value(obj: JsonObject, path: str, value: Any) -> JsonObject:
    """A copy of obj with a dotted path (list indices as numbers) set to value."""
    changed = copy.deepcopy(obj)
    parts = path.split(".")
    current: Any = changed
    for part in parts[:-1]:
        current = current[int(part)] if part.isdigit() else current.setdefault(part, {})
    current[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value
    return changed


SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "s"},
    "spec": {"ports": [{"port": 80}]},
}
JOB_TEMPLATE = {
    "metadata": {},
    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i:1"}]},
}
JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": JOB_TEMPLATE}}
CRON = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "cj"},
    "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": JOB_TEMPLATE}}},
}
ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "Role",
    "metadata": {"name": "r"},
    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
}
WEBHOOKS = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingWebhookConfiguration",
    "metadata": {"name": "v"},
    "webhooks": [
        {
            "name": "v.gpupool.dev",
            "clientConfig": {"service": {"name": "s", "namespace": "default"}},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }
    ],
}
PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"}, "spec": {}}
PATHS = {
    "Pod": "/api/v1/namespaces/default/pods",
    "ConfigMap": "/api/v1/namespaces/default/configmaps",
    "Node": "/api/v1/nodes",
    "Namespace": "/api/v1/namespaces",
    "Service": "/api/v1/namespaces/default/services",
    "Deployment": "/apis/apps/v1/namespaces/default/deployments",
    "DaemonSet": "/apis/apps/v1/namespaces/default/daemonsets",
    "StatefulSet": "/apis/apps/v1/namespaces/default/statefulsets",
    "Job": "/apis/batch/v1/namespaces/default/jobs",
    "CronJob": "/apis/batch/v1/namespaces/default/cronjobs",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
    "ValidatingWebhookConfiguration": (
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    ),
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
    "Lease": "/apis/coordination.k8s.io/v1/namespaces/default/leases",
    "ServiceAccount": "/api/v1/namespaces/default/serviceaccounts",
    "Secret": "/api/v1/namespaces/default/secrets",
    "ReplicaSet": "/apis/apps/v1/namespaces/default/replicasets",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "Event": "/api/v1/namespaces/default/events",
    "APIService": "/apis/apiregistration.k8s.io/v1/apiservices",
}
