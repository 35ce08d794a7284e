"""The pods of the scale benchmark's world: shaped like a deployment's, as a busy cluster holds them.

Role: `pod_manifest(node_index, node, index, worker=…)` — labels (TensorFusion's worker labels
on workers), an owner reference, one container with requests, limits, env, mounts and a probe,
tolerations, and a Running status with its conditions; about 2 KB of JSON each.

Must not: choose which pods are workers or where they run (`scale_world` does), or be random.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from benchmarks.scale_objects import NOW, stamp
from gpupool.core.model.constants import COMPONENT_WORKER, LABEL_COMPONENT, LABEL_ENABLED

__all__ = ["pod_manifest"]


def pod_manifest(node_index: int, node: str, index: int, *, worker: bool) -> dict[str, Any]:
    """A pod as a deployment's would look: labels, owner, one container with env, mounts, probes."""
    name = f"{'worker' if worker else 'daemon'}-{node_index:05d}-{index}"
    labels = {"app": "tf-worker" if worker else "node-daemon", "pod-template-hash": "5d9c7f8b6"}
    if worker:
        labels |= {LABEL_ENABLED: "true", LABEL_COMPONENT: COMPONENT_WORKER}
    container = {
        "name": "main",
        "image": "public.ecr.aws/scale/worker:v1.2.3" if worker else "public.ecr.aws/scale/daemon:v1.0.0",
        "resources": {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"cpu": "8", "memory": "32Gi"}},
        "env": [{"name": f"SETTING_{e}", "value": f"value-{e}"} for e in range(6)],
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {
                "name": "kube-api-access",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            },
        ],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
        "terminationMessagePath": "/dev/termination-log",
        "imagePullPolicy": "IfNotPresent",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "workloads",
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{labels['app']}-rs",
                    "uid": "00000000-0000-0000-0000-000000000001",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [container],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {
                    "name": "kube-api-access",
                    "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
                },
            ],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "schedulerName": "default-scheduler",
            "serviceAccountName": "default",
            "restartPolicy": "Always",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": stamp(NOW - timedelta(hours=2))}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "hostIP": "10.0.0.1",
            "podIP": "10.1.0.1",
            "startTime": stamp(NOW - timedelta(hours=2)),
        },
    }
