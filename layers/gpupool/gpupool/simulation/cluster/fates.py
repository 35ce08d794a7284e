"""The simulated cloud's fates: boot and join times, Spot interruptions, capacity failures.

Role: `FatesConfig` (the knobs, validated) and `CloudFates`, whose draws depend only on the seed
and on what is asked — the n-th launch of a run, an offering in a given hour — never on who asks
or in what order, so every policy of `gpupool simulate capacity` meets the same cloud:
- the n-th launch boots in `boot_seconds` (uniform, default 60–180 s: a GPU AMI's EC2 start) and
  its node joins `join_seconds` later (default 30–90 s: kubelet, device plugin, node agent);
- a Spot launch is interrupted with probability `spot_interruption_share` (default 0.2), at a
  time drawn uniformly from 10 minutes to 6 hours after launch, with a 2-minute notice;
- each offering (type / zone / capacity type) is out of capacity for a whole hour with
  probability `capacity_failure_share` (default 0.05): a launch of it then fails; and an
  instance type in a zone a story declares out of capacity (`declare_out_of_capacity`) is out
  from then on, whatever the capacity type.
The demo's stories use fixed fates (`FatesConfig.fixed`: every node joins after the same delay,
nothing fails unless declared).

Must not: know about any policy, the services, or a member of the simulated cluster.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["INTERRUPTION_NOTICE_SECONDS", "CloudFates", "FatesConfig", "LaunchFate"]

INTERRUPTION_NOTICE_SECONDS = 120.0
_INTERRUPTED_AFTER = (600.0, 6 * 3600.0)


@dataclass(frozen=True)
class FatesConfig:
    seed: int = 0
    boot_seconds: tuple[float, float] = (60.0, 180.0)
    join_seconds: tuple[float, float] = (30.0, 90.0)
    spot_interruption_share: float = 0.2
    capacity_failure_share: float = 0.05

    def __post_init__(self) -> None:
        for name, (low, high) in (("boot_seconds", self.boot_seconds), ("join_seconds", self.join_seconds)):
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be a range 0 <= low <= high, got {low}..{high}")
        for name, share in (
            ("spot interruption share", self.spot_interruption_share),
            ("capacity failure share", self.capacity_failure_share),
        ):
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"the {name} must be between 0 and 1, got {share}")

    @classmethod
    def fixed(cls, *, boot_seconds: float = 0.0, join_seconds: float = 0.0) -> FatesConfig:
        """Every launch boots and joins after the same times; no interruption, no failure drawn."""
        return cls(
            boot_seconds=(boot_seconds, boot_seconds),
            join_seconds=(join_seconds, join_seconds),
            spot_interruption_share=0.0,
            capacity_failure_share=0.0,
        )


@dataclass(frozen=True)
class LaunchFate:
    """What happens to one launched instance, in seconds after its launch."""

    boot_seconds: float
    join_seconds: float  # after boot
    interrupted_after: float | None  # None: never interrupted (On-Demand, or spared)


class CloudFates:
    def __init__(self, config: FatesConfig) -> None:
        self.config = config
        self._declared: set[str] = set()  # "instance type/zone" out of capacity from now on

    def fate(self, launch_number: int, capacity_type: str) -> LaunchFate:
        """The fate of a run's `launch_number`-th launch (the same draws for every policy)."""
        rng = random.Random(f"{self.config.seed}/launch/{launch_number}")
        boot = rng.uniform(*self.config.boot_seconds)
        join = rng.uniform(*self.config.join_seconds)
        interrupted = rng.random() < self.config.spot_interruption_share
        after = rng.uniform(*_INTERRUPTED_AFTER)
        spot = capacity_type.lower() == "spot"
        return LaunchFate(boot, join, after if spot and interrupted else None)

    def declare_out_of_capacity(self, instance_type: str, zone: str) -> None:
        """From now on, `instance_type` in `zone` has no capacity, whatever the capacity type."""
        self._declared.add(f"{instance_type}/{zone}")

    def out_of_capacity(self, offering_key: str, at_seconds: float) -> bool:
        """Whether `offering_key` (`type/zone/capacity type`) has no capacity in the hour holding
        `at_seconds`."""
        if self._declared and offering_key.rsplit("/", 1)[0] in self._declared:
            return True
        if self.config.capacity_failure_share <= 0:
            return False
        hour = int(at_seconds // 3600)
        rng = random.Random(f"{self.config.seed}/capacity/{offering_key}/{hour}")
        return rng.random() < self.config.capacity_failure_share
