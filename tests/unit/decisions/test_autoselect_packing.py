"""AutoSelect's packing: fractional TensorFusion pods share the GPUs of one expansion instead of a
node each, later pods fill the GPUs of expansions in flight, each NodeClaim asks Karpenter for the
GPUs its pods use, and a pod no GPU like the template's can serve gets no node at all."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from gpupool.core.decisions.autoselect import plan_autoselect
from gpupool.core.decisions.autoselect_memory import ANNOTATION_EXPANSIONS
from gpupool.core.decisions.autoselect_packing import ExpansionBin, GpuShape, Share, share_of
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import CreateNodeClaim, Plan, RecordEvent, RememberExpansions

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NODE = Node.model_validate(
    {
        "metadata": {
            "name": "n0",
            "labels": {"nvidia.com/gpu.present": "true", "karpenter.sh/nodepool": "gpu"},
        },
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi"}},
    }
)
TEMPLATE = KarpenterNodeClaim.model_validate(
    {
        "metadata": {
            "name": "gpu-1",
            "labels": {
                "karpenter.sh/nodepool": "gpu",
                "node.kubernetes.io/instance-type": "g6.12xlarge",
                "topology.kubernetes.io/zone": "us-east-1a",
            },
        },
        "spec": {
            "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
            "requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
            ],
            "resources": {"requests": {"nvidia.com/gpu": "1"}},
        },
        "status": {"nodeName": "n0", "conditions": [{"type": "Registered", "status": "True"}]},
    }
)
POOL = GPUPool.model_validate(
    {"metadata": {"name": "auto"}, "spec": {"nodeManagerConfig": {"provisioningMode": "AutoSelect"}}}
)


def gpus(count: int = 4) -> list[GPU]:
    return [
        GPU.model_validate(
            {
                "metadata": {"name": f"gpu-{i}", "labels": {"tensor-fusion.ai/gpupool": "auto"}},
                "status": {
                    "capacity": {"tflops": "100", "vram": "40Gi"},
                    "nodeSelector": {"kubernetes.io/hostname": "n0"},
                },
            }
        )
        for i in range(count)
    ]


def tf_pod(name: str, vram: str, tflops: str = "10", count: int = 1) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": "ml",
                "annotations": {
                    "tensor-fusion.ai/vram-request": vram,
                    "tensor-fusion.ai/tflops-request": tflops,
                    "tensor-fusion.ai/gpu-count": str(count),
                },
            },
            "spec": {"containers": [{"name": "c"}]},
        }
    )


def plan(pods: list[Pod], nodeclaims: list[KarpenterNodeClaim] | None = None, pool: GPUPool = POOL) -> Plan:
    return plan_autoselect(
        pods,
        [NODE],
        nodeclaims or [TEMPLATE],
        [],
        suffixes=[f"s{i:02d}" for i in range(len(pods))],
        now=NOW,
        pool=pool,
        gpus=gpus(),
    )


def created(result: Plan) -> list[KarpenterNodeClaim]:
    return [a.manifest for a in result.actions if isinstance(a, CreateNodeClaim)]


def test_thirty_fractional_pods_share_nodes_and_each_nodeclaim_asks_for_the_gpus_it_uses() -> None:
    sizes = ["10Gi", "20Gi", "8Gi"]  # a quarter, a half, a fifth of a 40Gi GPU
    pods = [tf_pod(f"w-{i:02d}", sizes[i % 3]) for i in range(30)]
    made = created(plan(pods))
    # 10 × (10 + 20 + 8) Gi = 380 Gi on 40 Gi GPUs: at least 10 GPUs, 4 a node → at least 3 nodes
    assert 3 <= len(made) <= 4, "pods that fit one GPU together share a node"
    asked = sum(int(str(n.spec.resources.requests["nvidia.com/gpu"])) for n in made)
    assert 10 <= asked <= 12, "each NodeClaim asks for the GPUs its pods use, not one per pod"


def test_a_later_pod_fills_the_gpus_of_an_expansion_in_flight() -> None:
    first = plan([tf_pod("a", "10Gi")])
    (made,) = created(first)
    (remember,) = [a for a in first.actions if isinstance(a, RememberExpansions)]
    remembered = POOL.model_copy(
        update={
            "metadata": POOL.metadata.model_copy(
                update={"annotations": {ANNOTATION_EXPANSIONS: remember.expansions}}
            )
        }
    )
    second = plan([tf_pod("a", "10Gi"), tf_pod("b", "20Gi")], [TEMPLATE, made], remembered)
    assert created(second) == [], "b shares a's GPU on the node in flight"
    checks = [a for a in second.actions if isinstance(a, RecordEvent) and a.reason == "NodeExpansionCheck"]
    assert checks and made.name in checks[0].message
    (again,) = [a for a in second.actions if isinstance(a, RememberExpansions)]
    assert json.loads(again.expansions)["ml/b"]["nodeClaim"] == made.name


def test_a_pod_no_gpu_like_the_templates_can_serve_gets_no_node() -> None:
    result = plan([tf_pod("huge", "80Gi"), tf_pod("wide", "10Gi", count=8)])
    assert created(result) == []
    failed = [
        a.message for a in result.actions if isinstance(a, RecordEvent) and a.reason == "NodeExpansionFailed"
    ]
    assert len(failed) == 2 and "8 GPUs" in failed[1]


def test_a_bin_puts_a_share_on_the_fullest_gpu_that_holds_it() -> None:
    shape = GpuShape(count=2, tflops=100_000, vram=40)
    node = ExpansionBin(name="x", shape=shape, gpus=2)
    assert node.place("a", Share(count=1, tflops=10_000, vram=30))
    assert node.place("b", Share(count=1, tflops=10_000, vram=10)) and node.used == 1
    assert node.place("c", Share(count=1, tflops=10_000, vram=10)) and node.used == 2
    assert not node.place("d", Share(count=2, tflops=10_000, vram=31))
    assert isinstance(share_of(tf_pod("p", "1Gi"), shape), str), "1Gi is more than this 40-byte GPU"
