"""What the stories and the benchmark on the real Karpenter build alike: one builder each.

- `ensure_kwok_node_class`: the KWOKNodeClass `default` Karpenter's KWOK provider launches with;
- `tensor_fusion_nodepool`: TensorFusion's documented NodePool on it — template labels
  (`nvidia.com/gpu.present`, `tensor-fusion.ai/enabled`), `limits: nvidia.com/gpu`, `WhenEmpty`
  after `consolidateAfter`, `minValues: 2` on the instance type;
- `pool_manifests`: a GPUPool (labelled with its cluster) and the TensorFusionCluster that names it;
  `autoselect_spec` / `karpenter_mode_spec`: the pool specs the stories use;
- `pool_tick`: the pool-scoped schedule event (EventBridge Scheduler with the pool as input);
- `tensor_fusion_worker`: a TensorFusion worker as the pod webhook leaves it, for
  tensor-fusion-scheduler;
- `namespace_with_account`: a namespace and its `default` ServiceAccount (no wait for the
  controller), deleted on the way out;
- `scheduling_pair`: the relay and tensor-fusion-scheduler, each as its chart identity, the
  scheduler's extender pointed at the relay.

Must not: decide anything gpupool decides, or wait for what a story asserts.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpupool.core.model.constants import LABEL_CLUSTER
from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.real.relay_process import RelayProcess, call, chart_relay_identity
from tests.real.relay_process import relay as relay_process
from tests.real.scheduler_process import SchedulerProcess
from tests.real.scheduler_process import scheduler as tensor_fusion_scheduler

T = "tensor-fusion.ai/"
KWOK_NODE_CLASS_REF = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}
GPU_TYPES = ("g4dn.xlarge", "g5.xlarge", "g6.xlarge")  # one GPU each; g4dn (T4) the cheapest


def ensure_kwok_node_class(plane: ControlPlane) -> None:
    plane.apply(
        {
            "apiVersion": "karpenter.kwok.sh/v1alpha1",
            "kind": "KWOKNodeClass",
            "metadata": {"name": "default"},
        },
        path="/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses/default",
    )


def tensor_fusion_nodepool(name: str, *, limit: int, consolidate_after_s: int) -> dict[str, Any]:
    """TensorFusion's documented NodePool, on the KWOK node class."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"nvidia.com/gpu.present": "true", T + "enabled": "true"}},
                "spec": {
                    "nodeClassRef": dict(KWOK_NODE_CLASS_REF),
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": list(GPU_TYPES),
                            "minValues": 2,
                        },
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    ],
                },
            },
            "limits": {"nvidia.com/gpu": str(limit)},
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": f"{consolidate_after_s}s",
                "budgets": [{"nodes": "100%"}],
            },
        },
    }


def autoselect_spec(
    nodepool: str, *, compaction_period_s: int, warm: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """An AutoSelect pool whose nodeSelector is `nodepool`'s nodes."""
    spec: dict[str, Any] = {
        "nodeManagerConfig": {
            "provisioningMode": "AutoSelect",
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "karpenter.sh/nodepool", "operator": "In", "values": [nodepool]}
                        ]
                    }
                ]
            },
            "nodeCompaction": {"period": f"{compaction_period_s}s"},
        }
    }
    if warm:
        spec["capacityConfig"] = {"warmResources": dict(warm)}
    return spec


def karpenter_mode_spec(
    *,
    compaction_period_s: int,
    warm: Mapping[str, str],
    types: tuple[str, ...] = GPU_TYPES,
    node_labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Karpenter-mode pool launching on the KWOK node class, on-demand `types`, keeping `warm`
    free, its nodes labelled `node_labels` (default: TensorFusion's `nvidia.com/gpu.present`)."""
    return {
        "capacityConfig": {"warmResources": dict(warm)},
        "nodeManagerConfig": {
            "provisioningMode": "Karpenter",
            "nodeProvisioner": {
                "karpenterNodeClassRef": {**KWOK_NODE_CLASS_REF, "version": "v1alpha1"},
                "gpuRequirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["OnDemand"]},
                ],
                "gpuNodeLabels": dict(node_labels or {"nvidia.com/gpu.present": "true"}),
            },
            "nodeCompaction": {"period": f"{compaction_period_s}s"},
        },
    }


def pool_manifests(
    cluster: str,
    pool_suffix: str,
    spec: Mapping[str, Any],
    *,
    pool_annotations: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The GPUPool `<cluster>-<pool_suffix>` (made before the cluster's sync would make it, which
    keeps annotations others set) and the TensorFusionCluster naming it."""
    pool: dict[str, Any] = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": {"name": f"{cluster}-{pool_suffix}", "labels": {LABEL_CLUSTER: cluster}},
        "spec": dict(spec),
    }
    if pool_annotations:
        pool["metadata"]["annotations"] = dict(pool_annotations)
    tensor_fusion_cluster = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "TensorFusionCluster",
        "metadata": {"name": cluster},
        "spec": {
            "computingVendor": {
                "name": "aws",
                "type": "aws",
                "authType": "serviceAccountRole",
                "enable": True,
                "params": {"defaultRegion": "us-east-1"},
            },
            "gpuPools": [{"name": pool_suffix, "specTemplate": dict(spec)}],
        },
    }
    return [pool, tensor_fusion_cluster]


def pool_tick(function: str, pool: str) -> dict[str, Any]:
    """The pool's schedule tick for `function` (EventBridge Scheduler with the pool as input)."""
    return {
        "version": "0",
        "id": f"tick-{uuid.uuid4().hex[:8]}",
        "detail-type": "Scheduled Event",
        "source": "aws.scheduler",
        "account": "123456789012",
        "time": "2026-12-07T16:00:00Z",
        "region": "us-east-1",
        "resources": [f"arn:aws:scheduler:us-east-1:123456789012:schedule/default/{function}"],
        "detail": {"pool": pool},
    }


def tensor_fusion_worker(
    name: str,
    *,
    pool: str,
    tflops: str,
    vram: str,
    gpu_count: int = 1,
    extra: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A TensorFusion worker as the pod webhook leaves it (test_pod_webhook_real.py shows the
    webhook): requests equal to limits, and the `tensor-fusion.ai/index_0` resource the scheduler
    ignores and no instance type offers, so Karpenter's own provisioning never launches a node for it."""
    notes = {
        T + "tflops-request": tflops,
        T + "tflops-limit": tflops,
        T + "vram-request": vram,
        T + "vram-limit": vram,
        T + "gpupool": pool,
        **(extra or {}),
    }
    if gpu_count > 1:
        notes[T + "gpu-count"] = str(gpu_count)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {T + "enabled": "true"}, "annotations": notes},
        "spec": {
            "schedulerName": "tensor-fusion-scheduler",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "example.invalid/cuda:12",
                    "resources": {"limits": {T + "index_0": "1"}},
                }
            ],
        },
    }


@contextlib.contextmanager
def namespace_with_account(plane: ControlPlane, namespace: str) -> Iterator[str]:
    plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    try:
        plane.apply(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": namespace},
            },
            path=f"/api/v1/namespaces/{namespace}/serviceaccounts/default",
        )
        yield namespace
    finally:
        call(plane, "DELETE", f"/api/v1/namespaces/{namespace}")


@contextlib.contextmanager
def scheduling_pair(
    plane: ControlPlane, root: Path, *, namespace: str, relay_args: Sequence[str] = ()
) -> Iterator[tuple[RelayProcess, SchedulerProcess]]:
    """The relay (`--lease-namespace namespace`, then `relay_args`) and tensor-fusion-scheduler,
    each running as the chart's ServiceAccount in `namespace`; both stopped, and the chart's RBAC
    removed, after."""
    with contextlib.ExitStack() as stack:
        identities = stack.enter_context(chart_relay_identity(plane, root, namespace=namespace))
        relay = stack.enter_context(
            relay_process(
                root=root,
                kubeconfig=identities.relay,
                args=["--lease-namespace", namespace, *relay_args],
            )
        )
        scheduler = stack.enter_context(
            tensor_fusion_scheduler(
                root=root,
                kubeconfig=identities.kube_scheduler,
                namespace=namespace,
                extender_port=relay.extender_port,
            )
        )
        yield relay, scheduler
