"""What one invocation cuts its pool snapshots from (`service.pools.ClusterReads` on a
`InvocationCluster`): a write to a pool (its status) leaves the reads and the pool's cut as they were —
the snapshot carries the pool as written, with the same members and what was worked out of them —
while a claim written, or a pool spec changed (another node class), cuts again."""

from __future__ import annotations

from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPoolStatus
from gpupool.core.planning.snapshot import pool_capacity
from gpupool.service.invocation_cluster import reading_once
from gpupool.service.pools import ClusterReads, snapshot_of
from tests.service.fakes import World, make_pool
from tests.unit.decisions.builders import claim


def test_a_pool_status_write_keeps_the_reads_and_the_cut() -> None:
    world = World(make_pool("pool-a"))
    world.cluster.add(claim("pool-a-1"))
    deps = reading_once(world.deps)
    reads = ClusterReads.load(deps, node_classes=True)
    first = snapshot_of(deps, deps.cluster.get_pool("pool-a"), reads)
    capacity = pool_capacity(first)
    pool = deps.cluster.get_pool("pool-a")
    written = deps.cluster.update_pool_status(
        "pool-a", GPUPoolStatus(phase="Running"), resource_version=pool.metadata.resource_version or ""
    )
    again = ClusterReads.load(deps, node_classes=True)
    second = snapshot_of(deps, deps.cluster.get_pool("pool-a"), again)
    assert again is reads
    assert second.pool is written and second.pool.status is not None and second.pool.status.phase == "Running"
    assert second.claims is first.claims and second.node_class is first.node_class
    assert pool_capacity(second) is capacity


def test_a_claim_write_or_another_node_class_cuts_again() -> None:
    world = World(make_pool("pool-a"))
    world.cluster.add(GPUNodeClass(metadata=ObjectMeta(name="other-class")))
    deps = reading_once(world.deps)
    reads = ClusterReads.load(deps, node_classes=True)
    first = snapshot_of(deps, deps.cluster.get_pool("pool-a"), reads)
    assert first.claims == () and first.node_class is not None and first.node_class.name == "gpu-class"
    deps.cluster.create_claim(claim("pool-a-1"))
    after_claim = ClusterReads.load(deps, node_classes=True)
    assert after_claim is not reads
    assert [c.name for c in snapshot_of(deps, deps.cluster.get_pool("pool-a"), after_claim).claims] == [
        "pool-a-1"
    ]
    pool = deps.cluster.get_pool("pool-a")
    moved = make_pool("pool-a", node_class="other-class").spec
    deps.cluster.replace_pool_spec(
        pool.model_copy(update={"spec": moved}), resource_version=pool.metadata.resource_version or ""
    )
    recut = snapshot_of(deps, deps.cluster.get_pool("pool-a"), after_claim)
    assert recut.node_class is not None and recut.node_class.name == "other-class"
