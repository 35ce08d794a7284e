"""The seeded world: the same draws for the same question whoever asks, in any order."""

from __future__ import annotations

import pytest

from gpupool.simulation.capacity.world import World, WorldConfig


def test_fates_depend_on_the_seed_and_the_launch_number_only() -> None:
    first, second = World(WorldConfig(seed=7)), World(WorldConfig(seed=7))
    forwards = [first.fate(n, "Spot") for n in range(50)]
    backwards = [second.fate(n, "Spot") for n in reversed(range(50))][::-1]
    assert forwards == backwards
    assert [World(WorldConfig(seed=8)).fate(n, "Spot") for n in range(50)] != forwards


def test_boot_and_join_stay_in_their_ranges_and_on_demand_is_never_interrupted() -> None:
    world = World(WorldConfig(seed=1, spot_interruption_share=1.0))
    for n in range(200):
        fate = world.fate(n, "OnDemand")
        assert 60 <= fate.boot_seconds <= 180 and 30 <= fate.join_seconds <= 90
        assert fate.interrupted_after is None
        spot = world.fate(n, "Spot")
        assert spot.boot_seconds == fate.boot_seconds  # the capacity type changes only the interruption
        assert spot.interrupted_after is not None and 600 <= spot.interrupted_after <= 6 * 3600


def test_shares_come_out_near_what_is_asked() -> None:
    world = World(WorldConfig(seed=2, spot_interruption_share=0.2, capacity_failure_share=0.05))
    interrupted = sum(world.fate(n, "Spot").interrupted_after is not None for n in range(4000)) / 4000
    out = (
        sum(world.out_of_capacity(f"type-{k}/zone/Spot", 3600.0 * h) for k in range(100) for h in range(40))
        / 4000
    )
    assert 0.17 < interrupted < 0.23
    assert 0.035 < out < 0.065


def test_an_offering_is_out_for_a_whole_hour() -> None:
    world = World(WorldConfig(seed=4, capacity_failure_share=0.5))
    for key in ("a", "b", "c", "d"):
        for hour in range(10):
            assert len({world.out_of_capacity(key, hour * 3600 + s) for s in (0, 1200, 3599)}) == 1


def test_no_failures_asked_means_none() -> None:
    world = World(WorldConfig(capacity_failure_share=0.0, spot_interruption_share=0.0))
    assert not any(world.out_of_capacity(f"k{k}", h * 3600.0) for k in range(50) for h in range(20))
    assert all(world.fate(n, "Spot").interrupted_after is None for n in range(200))


@pytest.mark.parametrize(
    "settings",
    [
        {"spot_interruption_share": 1.5},
        {"capacity_failure_share": -0.1},
        {"boot_seconds": (180.0, 60.0)},
        {"join_seconds": (-1.0, 5.0)},
    ],
)
def test_bad_settings_are_refused(settings: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        WorldConfig(**settings)  # type: ignore[arg-type]
