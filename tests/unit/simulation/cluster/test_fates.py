"""The simulated cloud's seeded fates: the same draws for the same question whoever asks, in any
order; fixed fates for the demo; a declared capacity failure holds from then on."""

from __future__ import annotations

import pytest

from gpupool.simulation.cluster.fates import CloudFates, FatesConfig, LaunchFate


def test_fates_depend_on_the_seed_and_the_launch_number_only() -> None:
    first, second = CloudFates(FatesConfig(seed=7)), CloudFates(FatesConfig(seed=7))
    forwards = [first.fate(n, "Spot") for n in range(50)]
    backwards = [second.fate(n, "Spot") for n in reversed(range(50))][::-1]
    assert forwards == backwards
    assert [CloudFates(FatesConfig(seed=8)).fate(n, "Spot") for n in range(50)] != forwards


def test_boot_and_join_stay_in_their_ranges_and_on_demand_is_never_interrupted() -> None:
    fates = CloudFates(FatesConfig(seed=1, spot_interruption_share=1.0))
    for n in range(200):
        fate = fates.fate(n, "OnDemand")
        assert 60 <= fate.boot_seconds <= 180 and 30 <= fate.join_seconds <= 90
        assert fate.interrupted_after is None
        spot = fates.fate(n, "Spot")
        assert spot.boot_seconds == fate.boot_seconds  # the capacity type changes only the interruption
        assert spot.interrupted_after is not None and 600 <= spot.interrupted_after <= 6 * 3600


def test_shares_come_out_near_what_is_asked() -> None:
    fates = CloudFates(FatesConfig(seed=2, spot_interruption_share=0.2, capacity_failure_share=0.05))
    interrupted = sum(fates.fate(n, "Spot").interrupted_after is not None for n in range(4000)) / 4000
    out = (
        sum(fates.out_of_capacity(f"type-{k}/zone/Spot", 3600.0 * h) for k in range(100) for h in range(40))
        / 4000
    )
    assert 0.17 < interrupted < 0.23
    assert 0.035 < out < 0.065


def test_an_offering_is_out_for_a_whole_hour() -> None:
    fates = CloudFates(FatesConfig(seed=4, capacity_failure_share=0.5))
    for key in ("a", "b", "c", "d"):
        for hour in range(10):
            assert len({fates.out_of_capacity(key, hour * 3600 + s) for s in (0, 1200, 3599)}) == 1


def test_no_failures_asked_means_none() -> None:
    fates = CloudFates(FatesConfig(capacity_failure_share=0.0, spot_interruption_share=0.0))
    assert not any(fates.out_of_capacity(f"k{k}", h * 3600.0) for k in range(50) for h in range(20))
    assert all(fates.fate(n, "Spot").interrupted_after is None for n in range(200))


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
        FatesConfig(**settings)  # type: ignore[arg-type]


def test_fixed_fates_are_the_same_for_every_launch_and_never_fail() -> None:
    fates = CloudFates(FatesConfig.fixed(boot_seconds=60.0, join_seconds=90.0))
    assert {fates.fate(n, "Spot") for n in range(50)} == {LaunchFate(60.0, 90.0, None)}
    assert not any(fates.out_of_capacity(f"t/z{z}/Spot", h * 3600.0) for z in range(5) for h in range(10))


def test_a_declared_capacity_failure_holds_for_every_capacity_type_of_that_type_and_zone() -> None:
    fates = CloudFates(FatesConfig(capacity_failure_share=0.0))
    fates.declare_out_of_capacity("g4dn.xlarge", "us-east-1a")
    for hour in range(24):
        assert fates.out_of_capacity("g4dn.xlarge/us-east-1a/OnDemand", hour * 3600.0)
        assert fates.out_of_capacity("g4dn.xlarge/us-east-1a/Spot", hour * 3600.0)
        assert not fates.out_of_capacity("g4dn.xlarge/us-east-1b/OnDemand", hour * 3600.0)
        assert not fates.out_of_capacity("g5.xlarge/us-east-1a/OnDemand", hour * 3600.0)
