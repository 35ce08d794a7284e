"""The in-memory Karpenter port: NodeClaims stored by name, deletion held by the finalizer,
the controller helpers' conditions in Karpenter's order, and injected errors like the other fakes."""

from __future__ import annotations

import pytest

from gpupool.core.decisions.karpenter_nodeclaim import nodeclaim_instance
from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import LABEL_NODE_PROVISIONER
from gpupool.core.model.karpenter import KarpenterNodeClaim, NodeClassReference
from gpupool.service.errors import AlreadyExists, NotFound, Throttled
from gpupool.testing.memory_ports import MemoryClock, MemoryKarpenter


def nodeclaim(name: str = "pool-a-00001", *, ours: bool = True) -> KarpenterNodeClaim:
    labels = {LABEL_NODE_PROVISIONER: name} if ours else {}
    return KarpenterNodeClaim(metadata=ObjectMeta(name=name, labels=labels))


def test_create_stores_with_uid_and_time_and_refuses_a_second() -> None:
    clock = MemoryClock()
    karpenter = MemoryKarpenter(clock)
    stored = karpenter.create_nodeclaim(nodeclaim())
    assert stored.metadata.uid and stored.metadata.creation_timestamp == clock.now()
    with pytest.raises(AlreadyExists):
        karpenter.create_nodeclaim(nodeclaim())
    karpenter.create_nodeclaim(nodeclaim("theirs", ours=False))
    assert [n.name for n in karpenter.list_nodeclaims()] == ["pool-a-00001"]
    assert len(karpenter.list_nodeclaims(ours_only=False)) == 2
    assert karpenter.count("create_nodeclaim") == 3


def test_delete_is_held_by_the_finalizer_until_finish_deletion() -> None:
    karpenter = MemoryKarpenter(MemoryClock())
    karpenter.create_nodeclaim(nodeclaim("a"))
    karpenter.create_nodeclaim(nodeclaim("b"))
    karpenter.delete_nodeclaim("a")
    karpenter.delete_nodeclaim("a")  # idempotent while deleting
    karpenter.delete_nodeclaim("b")
    assert karpenter.live() == [] and sorted(karpenter.deleting()) == ["a", "b"]
    assert nodeclaim_instance(karpenter.get_nodeclaim("a")).state == "shutting-down"
    karpenter.finish_deletion(["a"])
    assert sorted(karpenter.nodeclaims) == ["b"]
    karpenter.finish_deletion()
    assert karpenter.nodeclaims == {}
    with pytest.raises(NotFound):
        karpenter.get_nodeclaim("a")
    with pytest.raises(NotFound):
        karpenter.delete_nodeclaim("a")


def test_the_controller_helpers_set_conditions_in_karpenters_order() -> None:
    karpenter = MemoryKarpenter(MemoryClock())
    karpenter.create_nodeclaim(nodeclaim("a"))
    karpenter.create_nodeclaim(nodeclaim("b"))
    assert nodeclaim_instance(karpenter.get_nodeclaim("a")).state == "pending"
    karpenter.launched("a", "aws:///us-east-1a/i-0123")
    assert nodeclaim_instance(karpenter.get_nodeclaim("a")).state == "running"
    karpenter.registered("a", "node-a")
    status = karpenter.get_nodeclaim("a").status
    assert [c.type for c in status.conditions] == ["Launched", "Registered", "Initialized", "Ready"]
    assert (status.provider_id, status.node_name) == ("aws:///us-east-1a/i-0123", "node-a")
    karpenter.launch_error("b", "Throttled")
    (condition,) = karpenter.get_nodeclaim("b").status.conditions
    assert (condition.status, condition.reason) == ("Unknown", "Throttled")
    assert nodeclaim_instance(karpenter.get_nodeclaim("b")).state == "pending", "Karpenter retries it"
    karpenter.insufficient_capacity("b")
    assert "b" not in karpenter.nodeclaims, "Karpenter deletes what it cannot launch; no Launched=False"


def test_node_classes_and_injected_errors() -> None:
    karpenter = MemoryKarpenter(MemoryClock())
    ref = NodeClassReference(group="karpenter.k8s.aws", kind="EC2NodeClass", name="default")
    assert karpenter.node_class_exists(ref)
    assert not karpenter.node_class_exists(ref.model_copy(update={"name": "other"}))
    karpenter.fail_next("create_nodeclaim", Throttled("slow down"))
    with pytest.raises(Throttled):
        karpenter.create_nodeclaim(nodeclaim())
    assert karpenter.nodeclaims == {}
