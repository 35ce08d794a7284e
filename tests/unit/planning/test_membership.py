"""Pool membership (`planning.membership`): which claims, nodes, GPUNodes and pods each pool's
snapshot is cut with — a claim by its `managed-by` or `pool-<pool>=true` label, a node by its
claim's pools and its own or its GPUNode's `gpupool` / `pool-<pool>=true` labels, GPUNodes and
pods by their node — each pool's objects in the order read, and an object in two pools in both;
a later read of the same invocation reuses the node membership only while its nodes, GPUNodes
and the pools of the claims they name are unchanged."""

from __future__ import annotations

from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import LABEL_GPU_POOL, LABEL_MANAGED_BY, pool_label
from gpupool.core.planning.membership import ClusterObjects, claim_in_pool, pool_snapshot
from tests.unit.decisions.builders import claim, gpu_node, node, pool, worker


def _claim(name: str, labels: dict[str, str]) -> object:
    built = claim(name)
    return built.model_copy(update={"metadata": ObjectMeta(name=name, labels=labels)})


CLAIMS = (
    _claim("c-managed", {LABEL_MANAGED_BY: "pool-a"}),
    _claim("c-labelled", {pool_label("pool-b"): "true"}),
    _claim("c-both", {LABEL_MANAGED_BY: "pool-a", pool_label("pool-b"): "true"}),
    _claim("c-false", {pool_label("pool-c"): "false"}),
)
NODES = (
    node("n-claimed", claim_name="c-managed"),
    node("n-gpupool", claim_name=None, labels={LABEL_GPU_POOL: "pool-b"}),
    node("n-by-gpunode", claim_name=None),
    node("n-both", claim_name="c-both"),
    node("n-none", claim_name="c-false", labels={pool_label("pool-a"): "yes"}),
    node("n-own-label", claim_name="c-unknown", labels={pool_label("pool-c"): "true"}),
)
GPU_NODES = (
    gpu_node("n-claimed"),
    gpu_node("n-by-gpunode", labels={pool_label("pool-c"): "true"}),
    gpu_node("n-both"),
    gpu_node("n-absent", labels={LABEL_MANAGED_BY: "pool-a", LABEL_GPU_POOL: "pool-a"}),
)
PODS = (worker("w-1", "n-claimed"), worker("w-2", "n-both"), worker("w-3", "n-absent"))


def _names(objects: object) -> list[str]:
    return [o.metadata.name for o in objects]  # type: ignore[attr-defined]


def test_every_pool_gets_its_claims_nodes_gpu_nodes_and_pods_in_read_order() -> None:
    members = ClusterObjects(CLAIMS, NODES, GPU_NODES, PODS).members  # type: ignore[arg-type]
    found = {
        name: (_names(m.claims), _names(m.nodes), _names(m.gpu_nodes), _names(m.pods))
        for name, m in members.items()
    }
    assert found == {
        "pool-a": (["c-managed", "c-both"], ["n-claimed", "n-both"], ["n-claimed", "n-both"], ["w-1", "w-2"]),
        "pool-b": (["c-labelled", "c-both"], ["n-gpupool", "n-both"], ["n-both"], ["w-2"]),
        "pool-c": ([], ["n-by-gpunode", "n-own-label"], ["n-by-gpunode"], []),
    }


def test_a_snapshot_is_cut_with_its_pools_members_and_claim_in_pool_agrees() -> None:
    objects = ClusterObjects(CLAIMS, NODES, GPU_NODES, PODS)  # type: ignore[arg-type]
    the_pool = pool().model_copy(update={"metadata": ObjectMeta(name="pool-b")})
    cut = pool_snapshot("demo", the_pool, objects)
    assert _names(cut.claims) == ["c-labelled", "c-both"]
    assert _names(cut.nodes) == ["n-gpupool", "n-both"]
    assert [c.name for c in CLAIMS if claim_in_pool(c, "pool-b")] == ["c-labelled", "c-both"]  # type: ignore[attr-defined]
    empty = pool_snapshot("demo", pool().model_copy(update={"metadata": ObjectMeta(name="pool-z")}), objects)
    assert (empty.claims, empty.nodes, empty.gpu_nodes, empty.worker_pods) == ((), (), (), ())


def _found(objects: ClusterObjects) -> dict[str, tuple[list[str], ...]]:
    return {
        name: (_names(m.claims), _names(m.nodes), _names(m.gpu_nodes), _names(m.pods))
        for name, m in objects.members.items()
    }


def test_a_later_read_reuses_the_node_membership_only_while_it_still_holds() -> None:
    memo: dict[str, object] = {}
    first = ClusterObjects(CLAIMS, NODES, GPU_NODES, PODS, earlier=memo)  # type: ignore[arg-type]
    expected = _found(first)
    kept = memo["nodes"]
    # A claim written (same labels: a status change) and a new claim no node names: reused.
    rewritten = (CLAIMS[0].model_copy(), *CLAIMS[1:], _claim("c-new", {LABEL_MANAGED_BY: "pool-c"}))  # type: ignore[attr-defined]
    second = ClusterObjects(rewritten, NODES, GPU_NODES, PODS, earlier=memo)  # type: ignore[arg-type]
    assert _found(second) == {**expected, "pool-c": (["c-new"], *expected["pool-c"][1:])}
    assert memo["nodes"] is kept
    # A claim a node names moved to another pool: worked out again, the node follows its claim.
    moved = (_claim("c-managed", {LABEL_MANAGED_BY: "pool-b"}), *CLAIMS[1:])
    third = ClusterObjects(moved, NODES, GPU_NODES, PODS, earlier=memo)  # type: ignore[arg-type]
    assert "n-claimed" in _names(third.members["pool-b"].nodes)
    assert "n-claimed" not in _names(third.members["pool-a"].nodes)
    assert memo["nodes"] is not kept
    # A node replaced by another object (its labels changed): worked out again.
    relabelled = (node("n-claimed", claim_name=None, labels={LABEL_GPU_POOL: "pool-c"}), *NODES[1:])
    fourth = ClusterObjects(CLAIMS, relabelled, GPU_NODES, PODS, earlier=memo)  # type: ignore[arg-type]
    assert "n-claimed" in _names(fourth.members["pool-c"].nodes)
    assert "n-claimed" not in _names(fourth.members["pool-a"].nodes)
