"""The hub's expansion reservations, fed as the shared watches feed it: a node AutoSelect made for a
waiting pod is refused (filter and bind) to a pod that would crowd it out, until PLACEMENT_GRACE
after its GPUs were reported; the reservation ends when the pod is bound or gone, or the NodeClaim
goes. Forgeries reserve nothing: a pod's own annotation, a Node's annotation (which Karpenter
copies from the NodeClaim, but a node's kubelet may write too), a NodeClaim that is not an
expansion gpupool made."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU
from gpupool.core.vocabulary.expansions import ANNOTATION_EXPANSION_FOR, PLACEMENT_GRACE
from gpupool.scheduler.extender import parse_extender_args
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.ports import BindFailed

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, gpu_object, pool_model, tf_pod

REPORTED = datetime(2026, 12, 7, 21, 0, tzinfo=UTC)
WHOLE = {"tflops": "100", "vram": "40Gi"}  # a whole GPU of the builders' A100


class Clock:
    def __init__(self) -> None:
        self.now = REPORTED + timedelta(seconds=1)

    def __call__(self) -> datetime:
        return self.now


def expansion(pod: str = "team/intended", **labels: str) -> KarpenterNodeClaim:
    return KarpenterNodeClaim.model_validate(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": "gpu-abc12",
                "labels": labels or {"tensor-fusion.ai/expansion-source": "old"},
                "annotations": {ANNOTATION_EXPANSION_FOR: pod},
            },
            "spec": {"requirements": []},
            "status": {"nodeName": "new"},
        }
    )


def _hub(*, nodeclaim: KarpenterNodeClaim | None = None) -> tuple[SchedulerHub, FakeWriter, Clock]:
    clock = Clock()
    writer = FakeWriter()
    hub = SchedulerHub(writer, now=clock)
    hub.apply_pool(pool_model())
    gpu = gpu_object("new-0", "new")
    gpu["metadata"]["creationTimestamp"] = REPORTED.isoformat()
    hub.apply_gpu(GPU.model_validate(gpu))
    for name in ("intended", "thief"):
        writer.add(tf_pod(name, **WHOLE))
        hub.apply_pod(Pod.model_validate(writer.pods[f"team/{name}"]))
    hub.apply_nodeclaim(nodeclaim or expansion())
    return hub, writer, clock


def _filter(hub: SchedulerHub, writer: FakeWriter, name: str) -> dict[str, Any]:
    return hub.filter(parse_extender_args({"Pod": writer.pods[f"team/{name}"], "NodeNames": ["new"]}))


def test_a_node_made_for_a_waiting_pod_is_refused_to_another_at_filter_and_bind() -> None:
    hub, writer, _ = _hub()
    answer = _filter(hub, writer, "thief")
    assert answer["NodeNames"] == []
    assert answer["FailedNodes"]["new"].startswith("reserved: node new was made (NodeClaim gpu-abc12)")
    with pytest.raises(BindFailed, match="reserved: node new"):
        hub.bind("team", "thief", "uid-thief", "new")
    assert hub.allocator.state.allocations == {} and "nodeName" not in writer.pods["team/thief"]["spec"]
    assert _filter(hub, writer, "intended")["NodeNames"] == ["new"]
    hub.bind("team", "intended", "uid-intended", "new")


def test_the_reservation_fails_open_after_placement_grace() -> None:
    hub, writer, clock = _hub()
    clock.now = REPORTED + PLACEMENT_GRACE
    assert _filter(hub, writer, "thief")["NodeNames"] == ["new"]


def test_the_reservation_ends_when_the_pod_is_bound_elsewhere_or_gone() -> None:
    hub, writer, _ = _hub()
    bound = Pod.model_validate({**writer.pods["team/intended"], "spec": {"nodeName": "elsewhere"}})
    hub.apply_pod(bound)
    assert _filter(hub, writer, "thief")["NodeNames"] == ["new"]
    hub, writer, _ = _hub()
    hub.apply_pod(Pod.model_validate(writer.pods["team/intended"]), deleted=True)
    assert _filter(hub, writer, "thief")["NodeNames"] == ["new"]


def test_the_reservation_ends_with_its_nodeclaim() -> None:
    hub, writer, _ = _hub()
    hub.apply_nodeclaim(expansion(), deleted=True)
    assert _filter(hub, writer, "thief")["NodeNames"] == ["new"]


def test_a_nodeclaim_that_is_no_expansion_reserves_nothing() -> None:
    """Karpenter's own NodeClaims (or anyone else's) carry no expansion-source label."""
    hub, writer, _ = _hub(nodeclaim=expansion(**{"karpenter.sh/nodepool": "gpu"}))
    assert _filter(hub, writer, "thief")["NodeNames"] == ["new"]


def test_a_pods_own_annotation_reserves_nothing() -> None:
    """A tenant naming itself as the pod a node was made for, on its own pod, gains nothing."""
    hub, writer, _ = _hub(nodeclaim=expansion(**{"karpenter.sh/nodepool": "gpu"}))
    forged = tf_pod("forger", **WHOLE, extra={ANNOTATION_EXPANSION_FOR: "team/forger"})
    writer.add(forged)
    hub.apply_pod(Pod.model_validate(forged))
    assert hub.expansions == {}
    assert _filter(hub, writer, "thief")["NodeNames"] == ["new"]


def test_a_node_annotation_reserves_nothing() -> None:
    """Karpenter copies the NodeClaim's annotations onto the Node, but the node's kubelet may write
    its own Node's annotations too: the hub reads reservations from NodeClaims only."""
    hub, writer, _ = _hub(nodeclaim=expansion(**{"karpenter.sh/nodepool": "gpu"}))
    node = Node.model_validate(
        {"metadata": {"name": "new", "annotations": {ANNOTATION_EXPANSION_FOR: "team/intended"}}}
    )
    hub.apply_node(node)
    assert hub.expansions == {}
    assert _filter(hub, writer, "thief")["NodeNames"] == ["new"]


def test_a_fractional_pod_that_leaves_room_shares_the_reserved_node() -> None:
    hub, writer, _ = _hub()
    writer.add(tf_pod("small", tflops="1", vram="1Gi"))
    hub.apply_pod(Pod.model_validate(writer.pods["team/small"]))
    writer.add(tf_pod("intended", tflops="50", vram="20Gi"))  # half a GPU
    hub.apply_pod(Pod.model_validate(writer.pods["team/intended"]))
    assert _filter(hub, writer, "small")["NodeNames"] == ["new"]
    assert _filter(hub, writer, "thief")["NodeNames"] == []
