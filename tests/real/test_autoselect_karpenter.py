"""AutoSelect against the real Karpenter (v1.15.0, its KWOK provider, gpupool's catalog): TensorFusion's
documented NodePool — template labels with `nvidia.com/gpu.present`, `limits: nvidia.com/gpu`,
`WhenEmpty`, `minValues` on the instance type — a template node Karpenter itself launched, and 30
pending TensorFusion pods of mixed fractional sizes. The real API server accepts every expansion
NodeClaim (CRD rules, `minValues`, the NodePool owner), Karpenter launches and registers each within
the NodePool's limit, the nodes carry the template's labels; once the pods are gone Karpenter's own
consolidation removes the expansions within `consolidateAfter`, except the one gpupool guards with
`karpenter.sh/do-not-disrupt` (what compaction does for a node warm needs).

The pods do not reach Running here: that needs the relay's extender and the second scheduler,
whose harness is not on main yet. The AutoSelect planner is driven directly with the pods as
pending (created with a scheduler name nothing serves, so Karpenter ignores them), and the
template's GPU object is written as the node agent would report it (one 16 GiB GPU)."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from gpupool.core.decisions.autoselect import plan_autoselect
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.core.model.node import GPU
from gpupool.core.planning.plan import CreateNodeClaim, RecordEvent
from gpupool.sandbox.cluster.controlplane import ControlPlane

LIMIT = 12
SIZES = ("4Gi", "8Gi", "2Gi", "6Gi")


def _wait_for(what: str, probe: Any, *, timeout: float = 180.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _nodepool(name: str) -> dict[str, Any]:
    """TensorFusion's documented NodePool, on the KWOK node class."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {
                    "labels": {"nvidia.com/gpu.present": "true", "tensor-fusion.ai/enabled": "true"}
                },
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.kwok.sh",
                        "kind": "KWOKNodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": ["g4dn.xlarge", "g5.xlarge", "g6.xlarge"],
                            "minValues": 2,
                        },
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    ],
                },
            },
            "limits": {"nvidia.com/gpu": str(LIMIT)},
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "30s",
                "budgets": [{"nodes": "100%"}],
            },
        },
    }


def _tf_pod(name: str, vram: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"tensor-fusion.ai/enabled": "true"},
            "annotations": {
                "tensor-fusion.ai/gpupool": "auto",
                "tensor-fusion.ai/vram-request": vram,
                "tensor-fusion.ai/tflops-request": "5",
            },
        },
        "spec": {
            "schedulerName": "tensor-fusion-scheduler",
            "containers": [{"name": "main", "image": "example.invalid/none:1"}],
        },
    }


def _template_gpu(node: str) -> GPU:
    return GPU.model_validate(
        {
            "metadata": {"name": f"{node}-gpu-0", "labels": {"tensor-fusion.ai/gpupool": "auto"}},
            "status": {
                "capacity": {"tflops": "65", "vram": "16Gi"},
                "nodeSelector": {"kubernetes.io/hostname": node},
            },
        }
    )


def _read(
    control_plane: ControlPlane, pool: str
) -> tuple[list[Node], list[KarpenterNodeClaim], list[KarpenterNodePool]]:
    nodes = control_plane.request("GET", "/api/v1/nodes?labelSelector=nvidia.com%2Fgpu.present%3Dtrue")[
        "items"
    ]
    claims = control_plane.request("GET", "/apis/karpenter.sh/v1/nodeclaims")["items"]
    pools = control_plane.request("GET", "/apis/karpenter.sh/v1/nodepools")["items"]
    return (
        [Node.model_validate(n) for n in nodes],
        [
            KarpenterNodeClaim.model_validate(c)
            for c in claims
            if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == pool
        ],
        [KarpenterNodePool.model_validate(p) for p in pools if p["metadata"]["name"] == pool],
    )


def _registered(control_plane: ControlPlane, name: str) -> dict[str, Any] | None:
    claim = control_plane.request("GET", f"/apis/karpenter.sh/v1/nodeclaims/{name}")
    conditions = {c["type"]: c["status"] for c in claim.get("status", {}).get("conditions", [])}
    return claim if conditions.get("Registered") == "True" and claim["status"].get("nodeName") else None


def _gone(control_plane: ControlPlane, name: str) -> bool:
    return not control_plane._exists(f"/apis/karpenter.sh/v1/nodeclaims/{name}")


def test_autoselect_packs_within_the_nodepool_and_karpenter_consolidates_what_gpupool_lets_go(
    control_plane: ControlPlane,
) -> None:
    suffix = uuid.uuid4().hex[:6]
    pool = f"tf-{suffix}"
    control_plane.kubectl(
        "apply",
        "-f",
        "-",
        input_text=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    {
                        "apiVersion": "karpenter.kwok.sh/v1alpha1",
                        "kind": "KWOKNodeClass",
                        "metadata": {"name": "default"},
                    },
                    _nodepool(pool),
                ],
            }
        ),
    )
    seed = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"seed-{suffix}", "namespace": "default"},
        "spec": {
            "nodeSelector": {"karpenter.sh/nodepool": pool},
            "containers": [
                {
                    "name": "main",
                    "image": "example.invalid/none:1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    control_plane.request("POST", "/api/v1/namespaces/default/pods", seed)
    seeded = _wait_for(
        "Karpenter to launch the template node for the seed pod",
        lambda: (
            (p := control_plane.request("GET", f"/api/v1/namespaces/default/pods/seed-{suffix}"))[
                "status"
            ].get("phase")
            == "Running"
            and p
        ),
    )
    template_node = seeded["spec"]["nodeName"]
    pods = [_tf_pod(f"w-{suffix}-{i:02d}", SIZES[i % len(SIZES)]) for i in range(30)]
    for pod in pods:
        control_plane.request("POST", "/api/v1/namespaces/default/pods", pod)
    pending = [
        Pod.model_validate(
            control_plane.request("GET", f"/api/v1/namespaces/default/pods/{p['metadata']['name']}")
        )
        for p in pods
    ]
    assert all(p.spec.node_name is None for p in pending), "nothing serves tensor-fusion-scheduler here"

    nodes, nodeclaims, nodepools = _read(control_plane, pool)
    plan = plan_autoselect(
        pending,
        nodes,
        nodeclaims,
        nodepools,
        suffixes=[f"{suffix}{i:02d}" for i in range(30)],
        now=datetime.now(UTC),
        gpus=[_template_gpu(template_node)],
    )
    made = [a.manifest for a in plan.actions if isinstance(a, CreateNodeClaim)]
    # 30 pods × 5 GiB on average = 150 GiB on 16 GiB GPUs: 10 GPUs at least; one pod per node would be 30
    assert 10 <= len(made) <= LIMIT - 1, plan.reasons
    for manifest in made:
        body = manifest.model_dump(by_alias=True, exclude_none=True, mode="json")
        created = control_plane.request("POST", "/apis/karpenter.sh/v1/nodeclaims", body)
        assert created["metadata"]["ownerReferences"][0]["name"] == pool
        assert "karpenter.sh/do-not-disrupt" not in created["metadata"].get("annotations", {})
    completed = [
        a for a in plan.actions if isinstance(a, RecordEvent) and a.reason == "NodeExpansionCompleted"
    ]
    assert len(completed) == len(made)

    joined = [
        _wait_for(
            f"Karpenter to launch and register {m.name}", lambda name=m.name: _registered(control_plane, name)
        )
        for m in made
    ]
    for claim in joined:
        node = control_plane.request("GET", f"/api/v1/nodes/{claim['status']['nodeName']}")
        labels = node["metadata"]["labels"]
        assert labels["nvidia.com/gpu.present"] == "true", (
            "the template's label, so the agent and GPUNode come"
        )
        assert labels["karpenter.sh/nodepool"] == pool
    _, after, _ = _read(control_plane, pool)
    gpus = sum(
        int(c.status.capacity["nvidia.com/gpu"].value) for c in after if "nvidia.com/gpu" in c.status.capacity
    )
    assert gpus <= LIMIT, "the NodePool's limit holds, existing + expansions"

    for pod in pods:
        control_plane.request("DELETE", f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}")
    warm = joined[0]["status"]["nodeName"]
    control_plane.request(
        "PATCH",
        f"/api/v1/nodes/{warm}",
        {
            "metadata": {
                "annotations": {
                    "karpenter.sh/do-not-disrupt": "true",
                    "gpupool.io/do-not-disrupt-for": "warm-min",
                }
            }
        },
        content_type="application/merge-patch+json",
    )
    let_go = [c["metadata"]["name"] for c in joined[1:]]
    started = time.monotonic()
    _wait_for(
        "Karpenter to consolidate every expansion gpupool does not guard",
        lambda: all(_gone(control_plane, name) for name in let_go),
        timeout=240,
    )
    took = time.monotonic() - started
    assert not _gone(control_plane, joined[0]["metadata"]["name"]), "the node warm needs stays"
    assert control_plane._exists(f"/api/v1/namespaces/default/pods/seed-{suffix}")
    print(f"consolidated {len(let_go)} expansion(s) in {took:.0f} s (consolidateAfter 30 s)")
