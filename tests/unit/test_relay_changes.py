"""The relay's pure parts: which Kubernetes changes become which CloudEvents (changes.py), and how
batching windows coalesce them (batching.py). Each event is also read back by intake, so the two
sides of docs/events.md agree.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpupool.core.intake.causes import ClaimDeleted, Compact, Ignored, Reconcile
from gpupool.core.intake.relay import intake_cloudevent
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool_incluster.relay.batching import Batcher
from gpupool_incluster.relay.changes import ChangeTranslator, RelayEvent

T = "tensor-fusion.ai/"
UNSCHEDULABLE = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
CLAIM_SPEC = {"tflopsOffered": "100", "vramOffered": "40Gi", "gpuDeviceOffered": 1}


def _obj(name: str, rv: str = "1", **parts: Any) -> dict[str, Any]:
    meta = {"name": name, "uid": f"uid-{name}", "resourceVersion": rv} | parts.pop("meta", {})
    return {"metadata": meta} | parts


def _pod(name: str, rv: str, *, conditions: list[dict[str, str]], **spec: Any) -> Pod:
    labels = spec.pop("labels", {f"{T}component": "worker"})
    annotations = spec.pop("annotations", {f"{T}gpupool": "pool-a"})
    return Pod.model_validate(
        _obj(
            name,
            rv,
            meta={"namespace": "ns", "labels": labels, "annotations": annotations},
            spec={"containers": [], **spec},
            status={"conditions": conditions},
        )
    )


def _claim(name: str, rv: str = "1", **meta: Any) -> GPUNodeClaim:
    return GPUNodeClaim.model_validate(_obj(name, rv, meta=meta, spec=CLAIM_SPEC))


def _pool(name: str, rv: str, spec: dict[str, Any], **meta: Any) -> GPUPool:
    return GPUPool.model_validate(_obj(name, rv, meta=meta, spec=spec))


def _cluster(name: str, rv: str, spec: dict[str, Any]) -> TensorFusionCluster:
    return TensorFusionCluster.model_validate(_obj(name, rv, spec=spec))


def _kinds(events: list[RelayEvent]) -> list[str]:
    return [e.kind for e in events]


def _cloud(event: RelayEvent) -> dict[str, Any]:
    return event.cloudevent(source="/gpupool/relay/test", time="2026-12-01T00:00:00Z")


def test_a_worker_pod_counts_once_when_it_turns_unschedulable() -> None:
    t = ChangeTranslator()
    assert t.observe(_pod("p", "1", conditions=[])) == []
    (event,) = t.observe(_pod("p", "2", conditions=UNSCHEDULABLE))
    assert (event.kind, event.id, event.function) == ("pod.unschedulable", "uid-p-2", "launch")
    assert dict(event.data) == {"namespace": "ns", "name": "p", "pool": "pool-a"}
    cause = intake_cloudevent(_cloud(event))
    assert isinstance(cause, Reconcile) and cause.pool == "pool-a" and cause.event_id == "uid-p-2"
    assert t.observe(_pod("p", "3", conditions=UNSCHEDULABLE)) == []  # still unschedulable
    assert t.observe(_pod("p", "4", conditions=UNSCHEDULABLE), deleted=True) == []


@pytest.mark.parametrize(
    "pod",
    [
        _pod("native", "1", conditions=UNSCHEDULABLE, labels={}),  # not TensorFusion's
        _pod("bound", "1", conditions=UNSCHEDULABLE, nodeName="n"),  # already placed
        _pod(
            "other", "1", conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}]
        ),
    ],
)
def test_other_pods_are_not_forwarded(pod: Pod) -> None:
    assert ChangeTranslator().observe(pod) == []


def test_the_tensor_fusion_scheduler_name_alone_does_not_make_a_pod_count() -> None:
    """This test used to say the opposite: the relay counted any pod on tensor-fusion-scheduler,
    while AutoSelect counted only pods labelled `tensor-fusion.ai/enabled=true`. The one
    definition kept (`gpupool.core.vocabulary.pods`) follows TensorFusion: a TensorFusion pod is
    labelled `enabled=true` (what both webhooks admit) or is a TensorFusion worker
    (`component=worker`). The schedulerName alone is what progressive migration gives native
    `nvidia.com/gpu` pods it leaves native (TensorFusion's webhook and gpupool's alike); their
    being unschedulable is not a GPU-pool gap, and TensorFusion's expander ignores them too."""
    native = _pod("s", "1", conditions=UNSCHEDULABLE, labels={}, schedulerName="tensor-fusion-scheduler")
    assert ChangeTranslator().observe(native) == []
    labelled = _pod(
        "e",
        "1",
        conditions=UNSCHEDULABLE,
        labels={f"{T}enabled": "true", f"{T}gpupool": "pool-b"},
        annotations={},
        schedulerName="tensor-fusion-scheduler",
    )
    (event,) = ChangeTranslator().observe(labelled)
    assert dict(event.data)["pool"] == "pool-b"  # TensorFusion's webhook labels the pool


def test_a_node_already_ready_at_first_sight_is_joined_then_ready_with_distinct_ids() -> None:
    node = Node.model_validate(
        _obj("n", "7", meta={"labels": {f"{T}node-provisioner": "c"}},
             status={"conditions": [{"type": "Ready", "status": "True"}]})
    )  # fmt: skip
    joined, ready = ChangeTranslator().observe(node)
    assert (joined.kind, ready.kind) == ("node.joined", "node.ready")
    assert joined.id == "uid-n-7" and ready.id != joined.id
    assert ChangeTranslator().observe(Node.model_validate(_obj("plain", "1"))) == []


def test_claims_once_when_deletion_starts_and_karpenter_claims_only_when_ours() -> None:
    t = ChangeTranslator()
    assert t.observe(_claim("c", "1")) == []
    (event,) = t.observe(_claim("c", "2", deletionTimestamp="2026-12-01T00:00:00Z"))
    assert isinstance(intake_cloudevent(_cloud(event)), ClaimDeleted)
    assert t.observe(_claim("c", "3", deletionTimestamp="2026-12-01T00:00:01Z"), deleted=True) == []
    deleting = {"deletionTimestamp": "2026-12-01T00:00:00Z"}
    foreign = KarpenterNodeClaim.model_validate(_obj("k", "1", meta=deleting))
    assert ChangeTranslator().observe(foreign) == []
    ours = KarpenterNodeClaim.model_validate(
        _obj("k", "1", meta=deleting | {"labels": {f"{T}managed-by": "pool-a"}})
    )
    assert _kinds(ChangeTranslator().observe(ours)) == ["claim.deleted"]


def test_pools_change_on_spec_or_our_annotations_and_compact_on_request() -> None:
    t = ChangeTranslator()
    spec = {"capacityConfig": {"minResources": {"tflops": "10"}}}
    assert _kinds(t.observe(_pool("pool-a", "1", spec))) == ["pool.changed"]
    assert t.observe(_pool("pool-a", "2", spec, annotations={"x/y": "1"})) == []
    asked = {"annotations": {f"{T}manual-compaction": "2026-12-01T00:00:00Z"}}
    (event,) = t.observe(_pool("pool-a", "3", spec, **asked))
    assert event.function == "compact" and dict(event.data)["requestedAt"] == "2026-12-01T00:00:00Z"
    cause = intake_cloudevent(_cloud(event))
    assert isinstance(cause, Compact) and cause.manual
    changed = {"capacityConfig": {"minResources": {"tflops": "20"}}}
    assert _kinds(t.observe(_pool("pool-a", "4", changed, **asked))) == ["pool.changed"]
    ours = {"annotations": {f"{T}manual-compaction": "2026-12-01T00:00:00Z", f"{T}is-default-pool": "true"}}
    assert _kinds(t.observe(_pool("pool-a", "5", changed, **ours))) == ["pool.changed"]
    assert _kinds(t.observe(_pool("pool-a", "6", changed, **ours), deleted=True)) == ["pool.changed"]


def test_clusters_change_only_with_their_pools() -> None:
    t = ChangeTranslator()
    assert _kinds(t.observe(_cluster("c", "1", {"gpuPools": [{"name": "a"}]}))) == ["cluster.changed"]
    other = {"gpuPools": [{"name": "a"}], "computingVendor": {"name": "aws", "type": "aws"}}
    assert t.observe(_cluster("c", "2", other)) == []
    (event,) = t.observe(_cluster("c", "3", {"gpuPools": [{"name": "b"}]}))
    assert not isinstance(intake_cloudevent(_cloud(event)), Ignored)


def test_an_unknown_kind_is_a_clear_error() -> None:
    gpu = GPU.model_validate(_obj("g"))
    with pytest.raises(ValueError, match="does not translate GPU"):
        ChangeTranslator().observe(gpu)  # type: ignore[arg-type]


def test_forgetting_a_kind_makes_its_objects_new_again_and_keeps_the_others() -> None:
    t = ChangeTranslator()
    node = Node.model_validate(_obj("n", "1", meta={"labels": {f"{T}node-provisioner": "c"}}))
    pod = _pod("p", "1", conditions=UNSCHEDULABLE)
    assert _kinds(t.observe(node)) == ["node.joined"]
    assert _kinds(t.observe(pod)) == ["pod.unschedulable"]
    t.forget_all(Node)
    assert _kinds(t.observe(node)) == ["node.joined"]  # its watch re-listed: seen as new
    assert t.observe(pod) == []  # the pods' memory is untouched


def _pod_event(name: str, pool: str, at: float) -> RelayEvent:
    return RelayEvent("pod.unschedulable", f"uid-{name}", {"namespace": "ns", "name": name, "pool": pool}, at)


def test_a_window_closes_after_its_idle_time_with_the_newest_event_standing_for_all() -> None:
    batcher = Batcher(idle=1.0, max_window=10.0)
    assert batcher.add(_pod_event("a", "p", 0.0), 0.0) == []
    assert batcher.add(_pod_event("b", "p", 0.5), 0.5) == []
    assert batcher.due(1.4) == [] and batcher.next_deadline() == 1.5
    (out,) = batcher.due(1.5)
    assert (out.id, out.coalesced, out.seen_at) == ("uid-b", 2, 0.0)


def test_a_window_closes_at_its_maximum_even_while_events_keep_coming() -> None:
    batcher = Batcher(idle=1.0, max_window=10.0)
    out: list[RelayEvent] = []
    for step in range(30):
        out += batcher.add(_pod_event(f"p{step}", "p", step * 0.5), step * 0.5)
    out += batcher.flush()
    assert [e.coalesced for e in out] == [20, 10]  # events at 0-9.5 s close at 10 s; the rest follow


def test_pools_have_their_own_windows_and_nodes_are_never_batched() -> None:
    batcher = Batcher(idle=1.0, max_window=10.0)
    batcher.add(_pod_event("a", "p1", 0), 0)
    batcher.add(_pod_event("b", "p2", 0), 0)
    node = RelayEvent("node.joined", "uid-n", {"node": "n"})
    assert batcher.add(node, 0.1) == [node]
    assert sorted(dict(e.data)["pool"] for e in batcher.due(1.0)) == ["p1", "p2"]
    with pytest.raises(ValueError, match="idle <= max_window"):
        Batcher(idle=5, max_window=1)
