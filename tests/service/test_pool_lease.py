"""The pool's Lease guards compaction as well as launch: they never interleave on one pool.

Each race pauses one invocation while it holds the pool (launch at its first read; compaction
inside the claim deletion it decided on a snapshot) and runs the other meanwhile: the other
must note that the pool is busy and write nothing. Once the first finishes, the second runs
normally — proof that it had something to do, so the race was not vacuous — and no Lease is
left held.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

from gpupool.core.intake.causes import Compact, Reconcile
from gpupool.core.planning.plan import DeleteClaim
from gpupool.service.compact import handle_compact
from gpupool.service.launch import handle_launch
from gpupool.service.outcome import Outcome
from gpupool.service.pool_lease import lease_name
from tests.service.fakes import World, make_pool
from tests.service.test_compact import set_pool, world_with_nodes


def racing_world() -> World:
    """Three idle Bound nodes past their protection, and no min: compaction removes them."""
    world, _ = world_with_nodes(3, min_tflops=None, min_vram=None)
    world.clock.advance(timedelta(minutes=6))
    return world


class Paused:
    """Replaces `owner.method` with one whose first call stops until released (later calls pass)."""

    def __init__(self, owner: Any, method: str) -> None:
        self.entered, self.proceed = threading.Event(), threading.Event()
        real = getattr(owner, method)

        def paused(*args: Any, **kwargs: Any) -> Any:
            if not self.entered.is_set():
                self.entered.set()
                assert self.proceed.wait(30), "the paused call was never released"
            return real(*args, **kwargs)

        setattr(owner, method, paused)


def _in_thread(run: Any) -> tuple[threading.Thread, list[Outcome]]:
    results: list[Outcome] = []
    thread = threading.Thread(target=lambda: results.append(run()), daemon=True)
    thread.start()
    return thread, results


def _deleting(world: World) -> list[str]:
    return [c.name for c in world.claims() if c.metadata.deletion_timestamp is not None]


def test_a_compaction_waits_while_a_launch_holds_the_pool() -> None:
    world = racing_world()
    preview = handle_compact(Compact(pool="pool-a", manual=True, event_id="c0"), world.deps, dry_run=True)
    assert any(isinstance(a, DeleteClaim) for a in preview.plan.actions)  # it has removals to make
    pause = Paused(world.cluster, "list_claims")  # launch's first read once it holds the pool
    thread, launched = _in_thread(
        lambda: handle_launch(Reconcile(trigger="schedule", event_id="l1"), world.deps)
    )
    assert pause.entered.wait(30)
    outcome = handle_compact(Compact(pool="pool-a", manual=True, event_id="c1"), world.deps)
    assert any("holds the pool's lease" in r for r in outcome.plan.reasons), outcome.plan.reasons
    assert _deleting(world) == [] and world.cluster.count("delete_claim") == 0
    pause.proceed.set()
    thread.join(30)
    assert launched and launched[0].errors == []
    handle_compact(Compact(pool="pool-a", manual=True, event_id="c2"), world.deps)
    assert len(_deleting(world)) == 3
    assert lease_name("pool-a") not in world.cluster.leases


def test_a_launch_waits_while_a_compaction_holds_the_pool() -> None:
    """Min is raised while compaction is between its decision and its deletion: the launch that
    the change triggers must wait, not plan from a snapshot the deletion is about to change."""
    world = racing_world()
    launched_before, created_before = len(world.compute.launched), world.cluster.count("create_claim")
    pause = Paused(world.cluster, "delete_claim")
    thread, compacted = _in_thread(
        lambda: handle_compact(Compact(pool="pool-a", manual=True, event_id="c1"), world.deps)
    )
    assert pause.entered.wait(30)
    set_pool(world, make_pool(min_tflops="195", min_vram="48Gi"))
    outcome = handle_launch(Reconcile(trigger="schedule", event_id="l1"), world.deps)
    assert any("holds the pool's lease" in r for r in outcome.plan.reasons), outcome.plan.reasons
    assert len(world.compute.launched) == launched_before
    assert world.cluster.count("create_claim") == created_before
    pause.proceed.set()
    thread.join(30)
    assert compacted and compacted[0].errors == [] and _deleting(world)
    handle_launch(Reconcile(trigger="schedule", event_id="l2"), world.deps)
    assert len(world.compute.launched) > launched_before  # the launch had a gap to fill: the wait was real
    assert lease_name("pool-a") not in world.cluster.leases
