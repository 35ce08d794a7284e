"""TensorFusion's replayed rules: gap (min, then warm once Running; no clip at max), one type × N
at the cheapest total with spot priced as on-demand and unknown prices as $0, and empty-only
compaction guarded by min and warm, skipped while a claim is pending."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

import pytest

from gpupool.simulation.capacity.tensorfusion_rules import (
    Resources,
    TFNode,
    TFOffering,
    tf_choose,
    tf_compaction,
    tf_gap,
)

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
T4 = Resources(D(65), D(16))


def r(tflops: int, vram: int) -> Resources:
    return Resources(D(tflops), D(vram))


def offer(
    kind: str, tflops: int, vram: int, price: str | None, zone: str = "a", capacity: str = "OnDemand"
) -> TFOffering:
    return TFOffering(kind, zone, capacity, r(tflops, vram), D(price) if price is not None else None)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        # min check counts in-flight capacity
        ({"min_": r(130, 32), "total": r(65, 16), "in_flight": r(0, 0)}, r(65, 16)),
        ({"min_": r(130, 32), "total": r(65, 16), "in_flight": r(65, 16)}, r(0, 0)),
        # warm only when min is met and the pool is Running
        ({"min_": r(65, 16), "warm": r(65, 16), "total": r(65, 16), "running": True}, r(65, 16)),
        ({"min_": r(65, 16), "warm": r(65, 16), "total": r(65, 16), "running": False}, r(0, 0)),
        ({"min_": r(65, 16), "warm": r(65, 16), "total": r(130, 32), "available": r(65, 16)}, r(0, 0)),
    ],
)
def test_gap(kwargs: dict[str, object], expected: Resources) -> None:
    base: dict[str, object] = {
        "min_": r(0, 0),
        "warm": r(0, 0),
        "total": r(0, 0),
        "available": r(0, 0),
        "in_flight": r(0, 0),
        "running": True,
    }
    assert tf_gap(**{**base, **kwargs}) == expected  # type: ignore[arg-type]


def test_one_type_times_n_at_the_cheapest_total() -> None:
    offers = [offer("g4dn", 65, 16, "0.526"), offer("g6", 121, 24, "0.805"), offer("p", 1000, 640, "32")]
    # 260 TFLOPs / 64 GiB: 4 × g4dn = 2.104, 3 × g6 = 2.415 (by TFLOPs), 1 × p = 32 → g4dn × 4
    choice = tf_choose(r(260, 64), offers, total=r(0, 0), max_=None, rng=random.Random(1))
    assert choice is not None and (choice.offering.instance_type, choice.count) == ("g4dn", 4)
    assert choice.seen_cost == D("2.104")


def test_spot_is_priced_as_on_demand_and_unknown_as_zero() -> None:
    # the replay sees only on-demand prices; an unpriced type looks free and wins
    offers = [offer("g4dn", 65, 16, "0.526"), offer("mystery", 65, 16, None)]
    choice = tf_choose(r(65, 16), offers, total=r(0, 0), max_=None, rng=random.Random(1))
    assert choice is not None and choice.offering.instance_type == "mystery" and choice.seen_cost == 0


def test_the_zone_is_drawn_from_the_seeded_rng() -> None:
    offers = [offer("g4dn", 65, 16, "0.526", zone=z) for z in ("a", "b", "c")]
    zones = {
        tf_choose(r(65, 16), offers, total=r(0, 0), max_=None, rng=random.Random(seed)).offering.zone  # type: ignore[union-attr]
        for seed in range(20)
    }
    assert zones == {"a", "b", "c"}
    first = tf_choose(r(65, 16), offers, total=r(0, 0), max_=None, rng=random.Random(7))
    again = tf_choose(r(65, 16), offers, total=r(0, 0), max_=None, rng=random.Random(7))
    assert first == again


def test_max_refuses_only_when_already_reached_and_does_not_clip() -> None:
    offers = [offer("g4dn", 65, 16, "0.526")]
    assert tf_choose(r(65, 16), offers, total=r(130, 32), max_=r(130, 32), rng=random.Random(1)) is None
    choice = tf_choose(r(260, 64), offers, total=r(65, 16), max_=r(130, 32), rng=random.Random(1))
    assert choice is not None and choice.count == 4  # past max: TensorFusion does not clip


def test_at_most_100_nodes_per_loop() -> None:
    offers = [offer("tiny", 1, 1, "0.01"), offer("big", 1000, 1000, "50")]
    choice = tf_choose(r(500, 500), offers, total=r(0, 0), max_=None, rng=random.Random(1))
    assert choice is not None and choice.offering.instance_type == "big"


def node(
    name: str, *, workers: int = 0, age_min: int = 10, running: bool = True, dnd: bool = False
) -> TFNode:
    return TFNode(name, T4, NOW - timedelta(minutes=age_min), running, workers, dnd)


def test_compaction_removes_only_old_empty_nodes_above_min_and_warm() -> None:
    nodes = [node("n1"), node("n2"), node("n3", workers=1), node("n4", age_min=3), node("n5", dnd=True)]
    removed = tf_compaction(
        nodes,
        min_=r(65, 16),
        warm=r(65, 16),
        total=r(325, 80),
        available=r(260, 64),
        pending_claims=0,
        now=NOW,
    )
    # n1 goes (available 195 ≥ warm, total 260 ≥ min), n2 too (130, 195), busy/young/protected stay
    assert removed == ["n1", "n2"]
    guarded = tf_compaction(
        nodes,
        min_=r(65, 16),
        warm=r(195, 48),
        total=r(325, 80),
        available=r(260, 64),
        pending_claims=0,
        now=NOW,
    )
    assert guarded == ["n1"]  # after n1 goes, available 195 − 65 would fall below warm 195
    assert (
        tf_compaction(
            nodes,
            min_=r(0, 0),
            warm=r(0, 0),
            total=r(325, 80),
            available=r(260, 64),
            pending_claims=1,
            now=NOW,
        )
        == []
    )
