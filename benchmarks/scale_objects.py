"""The objects of the scale benchmark's world, one builder per kind, as a busy EKS cluster holds them.

Role: manifests (status included) for `scale_world.ScaleWorld`: a GPUNodeClass, GPUPools, and per
node a GPUNodeClaim, a core v1 Node (labels, conditions, capacity, addresses, node info and a
short image list, as a kubelet reports them), a GPUNode, GPU objects and pods shaped like a
deployment's (`scale_pods`). The sizes
in bytes are printed by `benchmarks/scale.py`.

Must not: choose names, counts or which node does what (`scale_world` does), or be random.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from gpupool.core.catalog import load_catalog
from gpupool.core.model.constants import (
    API_GROUP,
    FINALIZER,
    INITIAL_GPU_NODE_LABEL,
    LABEL_GPU_POOL,
    LABEL_MANAGED_BY,
    LABEL_NODE_PROVISIONER,
    pool_label,
)

__all__ = [
    "CLUSTER",
    "GPUS_PER_NODE",
    "INSTANCE_TYPE",
    "NOW",
    "claim_manifest",
    "free_on_node",
    "gpu_manifest",
    "gpu_node_manifest",
    "node_class_manifest",
    "node_manifest",
    "per_node",
    "pool_manifest",
    "stamp",
]

CLUSTER = "scale"
INSTANCE_TYPE = "g5.48xlarge"
GPUS_PER_NODE = 8
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TF = f"{API_GROUP}/v1"


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def per_node() -> tuple[int, int]:
    spec = load_catalog("aws").instance_type(INSTANCE_TYPE)
    assert spec is not None, INSTANCE_TYPE
    return int(spec.tflops_per_gpu) * spec.gpu_count, spec.vram_gib_per_gpu * spec.gpu_count


def free_on_node(*, busy: bool) -> tuple[int, int]:
    """TFLOPS and VRAM (GiB) a node's GPUNode reports available: a quarter when busy, all when idle."""
    tflops, vram = per_node()
    return (tflops // 4, vram // 4) if busy else (tflops, vram)


def node_class_manifest() -> dict[str, Any]:
    return {
        "apiVersion": TF,
        "kind": "GPUNodeClass",
        "metadata": {"name": "gpu-class"},
        "spec": {"osImageSelectorTerms": [{"id": "ami-0123456789abcdef0"}]},
    }


def pool_manifest(name: str, *, min_nodes: int, warm_tflops: int, warm_vram_gib: int) -> dict[str, Any]:
    """A Provisioned pool of g5.48xlarge nodes: min `min_nodes` nodes' worth, warm as given."""
    tflops, vram = per_node()
    return {
        "apiVersion": TF,
        "kind": "GPUPool",
        "metadata": {"name": name},
        "spec": {
            "capacityConfig": {
                "minResources": {"tflops": str(tflops * min_nodes), "vram": f"{vram * min_nodes}Gi"},
                "warmResources": {"tflops": str(warm_tflops), "vram": f"{warm_vram_gib}Gi"},
            },
            "nodeManagerConfig": {
                "provisioningMode": "Provisioned",
                "nodeProvisioner": {
                    "nodeClass": "gpu-class",
                    "gpuRequirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": [INSTANCE_TYPE],
                        }
                    ],
                },
                "nodeCompaction": {"period": "5m"},
            },
        },
        "status": {"phase": "Running", "lastCompactionTime": stamp(NOW - timedelta(hours=1))},
    }


def claim_manifest(name: str, pool: str, zone: str, instance_id: str, joining: bool) -> dict[str, Any]:
    tflops, vram = per_node()
    return {
        "apiVersion": TF,
        "kind": "GPUNodeClaim",
        "metadata": {
            "name": name,
            "labels": {LABEL_MANAGED_BY: pool, pool_label(pool): "true", f"{API_GROUP}/cluster": CLUSTER},
            "finalizers": [FINALIZER],
        },
        "spec": {
            "nodeClassRef": {"group": API_GROUP, "kind": "GPUNodeClass", "name": "gpu-class"},
            "instanceType": INSTANCE_TYPE,
            "zone": zone,
            "region": "us-east-1",
            "capacityType": "OnDemand",
            "tflopsOffered": str(tflops),
            "vramOffered": f"{vram}Gi",
            "gpuDeviceOffered": GPUS_PER_NODE,
        },
        "status": {"phase": "Creating" if joining else "Bound", "instanceID": instance_id},
    }


def node_manifest(name: str, claim: str, pool: str, zone: str, instance_id: str) -> dict[str, Any]:
    since = stamp(NOW - timedelta(days=1))
    capacity = {
        "cpu": "192",
        "memory": "786432Mi",
        "pods": "110",
        "nvidia.com/gpu": str(GPUS_PER_NODE),
        "ephemeral-storage": "2000Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    conditions = [
        {
            "type": kind,
            "status": "False",
            "reason": f"KubeletHas{reason}",
            "message": f"kubelet has {reason}",
            "lastHeartbeatTime": stamp(NOW),
            "lastTransitionTime": since,
        }
        for kind, reason in (
            ("MemoryPressure", "SufficientMemory"),
            ("DiskPressure", "NoDiskPressure"),
            ("PIDPressure", "SufficientPID"),
        )
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": stamp(NOW),
            "lastTransitionTime": since,
        }
    )
    images = [
        {"names": [f"public.ecr.aws/scale/image-{i}:v1.{i}"], "sizeBytes": 100_000_000 + i} for i in range(8)
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                LABEL_NODE_PROVISIONER: claim,
                pool_label(pool): "true",
                INITIAL_GPU_NODE_LABEL: "true",
                "nvidia.com/gpu.product": "NVIDIA-A10G",
                "nvidia.com/gpu.count": str(GPUS_PER_NODE),
                "node.kubernetes.io/instance-type": INSTANCE_TYPE,
                "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": "us-east-1",
                "failure-domain.beta.kubernetes.io/zone": zone,
                "failure-domain.beta.kubernetes.io/region": "us-east-1",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/hostname": name,
                "eks.amazonaws.com/capacityType": "ON_DEMAND",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"providerID": f"aws:///{zone}/{instance_id}"},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": instance_id,
                "systemUUID": instance_id,
                "bootID": instance_id,
                "kernelVersion": "6.1.0",
                "osImage": "Amazon Linux 2023",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kubeletVersion": "v1.31.0",
                "kubeProxyVersion": "v1.31.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": images,
        },
    }


def gpu_node_manifest(name: str, pool: str, instance_id: str, *, busy: bool) -> dict[str, Any]:
    tflops, vram = per_node()
    free_tflops, free_vram = free_on_node(busy=busy)
    return {
        "apiVersion": TF,
        "kind": "GPUNode",
        "metadata": {"name": name, "labels": {pool_label(pool): "true"}},
        "spec": {"manageMode": "Provisioned"},
        "status": {
            "phase": "Running",
            "totalTFlops": str(tflops),
            "totalVRAM": f"{vram}Gi",
            "availableTFlops": str(free_tflops),
            "availableVRAM": f"{free_vram}Gi",
            "totalGPUs": GPUS_PER_NODE,
            "managedGPUs": GPUS_PER_NODE,
            "managedGPUDeviceIDs": [f"{name}-gpu-{g}" for g in range(GPUS_PER_NODE)],
            "nodeInfo": {
                "instanceID": instance_id,
                "region": "us-east-1",
                "hostname": name,
                "gpuModel": "A10G",
                "gpuCount": GPUS_PER_NODE,
                "architecture": "amd64",
                "operatingSystem": "linux",
            },
        },
    }


def gpu_manifest(node: str, pool: str, index: int) -> dict[str, Any]:
    name = f"{node}-gpu-{index}"
    one = {"tflops": "125", "vram": "24Gi"}
    return {
        "apiVersion": TF,
        "kind": "GPU",
        "metadata": {"name": name, "labels": {LABEL_GPU_POOL: pool, "kubernetes.io/hostname": node}},
        "status": {
            "phase": "Running",
            "vendor": "NVIDIA",
            "gpuModel": "A10G",
            "uuid": f"GPU-{name}",
            "index": index,
            "capacity": one,
            "available": dict(one),
            "nodeSelector": {"kubernetes.io/hostname": node},
        },
    }
