"""What a policy's run bought and what its pods got: the figures `gpupool simulate capacity` reports.

Role: `Ledger` is told by the engine and the drivers what happened — an instance launched or
ended (with its hourly price and GPUs), a pod placed for the first time (its time to capacity),
GPU-seconds used, counters (launches, terminations, compactions, interruptions handled, launch
failures, each reason consolidation gave for draining nothing), budget refusals with their
reasons — and samples demand, capacity and cost each minute for the plot, and keeps the peak
hourly run rate (what the live instances bill per hour, highest at any launch). `report()` turns
it into a `PolicyReport` (`to_json` is the `--json` row).

Cost: each instance bills its offering's hourly price from launch until it ends (or the
window closes), per second. GPU-hours bought: its GPUs over the same time. Used: the GPUs pods
hold, over the time they hold them. Idle: bought − used. Idle beyond min and warm: each minute,
the GPUs of live instances beyond max(min, GPUs pods hold + warm), min and warm counted in GPUs
of the pool's smallest GPU (`pool_spec.reserve_gpus`) — the idle a policy could avoid. The floor
under both: GPUs come whole, so a policy that holds min and warm every minute has, that minute,
at least ceil(max(min, used + warm)) GPUs of that size, and at least the fraction up to it idle
beyond min and warm; summed over the minutes, `floor_gpu_hours` and `floor_beyond_reserve`.

Must not: decide anything or read either policy's state.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

__all__ = ["CONSOLIDATION_REFUSED", "InstanceRecord", "Ledger", "PolicyReport", "Sample", "percentile"]

CONSOLIDATION_REFUSED = "consolidation refused:"  # a counter per reason consolidation drained nothing


@dataclass
class InstanceRecord:
    instance_id: str
    offering: str
    gpus: int
    hourly_price: Decimal
    launched: float
    ended: float | None = None

    def seconds(self, until: float) -> float:
        end = self.ended if self.ended is not None else until
        return max(0.0, min(end, until) - self.launched)


@dataclass(frozen=True)
class Sample:
    """One minute of the run: demand (GPUs asked by pods present), capacity (GPUs of live
    instances), cost so far (USD), and the pods present but waiting for capacity (unserved now)."""

    hours: float
    demand_gpus: float
    capacity_gpus: int
    cost: float
    waiting_pods: int = 0


def percentile(values: list[float], share: float) -> float | None:
    """The nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class PolicyReport:
    policy: str
    cost: float
    gpu_hours_bought: float
    gpu_hours_used: float
    ttc_p50: float | None
    ttc_p95: float | None
    ttc_max: float | None
    pods: int
    unserved: int
    counters: dict[str, int]
    violations: dict[str, int]
    budget_refusals: int
    budget_reasons: list[str]
    samples: list[Sample]
    peak_hourly_rate: Decimal = Decimal(0)
    idle_beyond_reserve: float = 0.0
    floor_gpu_hours: float = 0.0
    floor_beyond_reserve: float = 0.0

    @property
    def idle_gpu_hours(self) -> float:
        return self.gpu_hours_bought - self.gpu_hours_used

    def consolidation_refusals(self) -> dict[str, int]:
        """Each reason consolidation gave for draining nothing, and how often, most often first."""
        found = {
            k.removeprefix(CONSOLIDATION_REFUSED): v
            for k, v in self.counters.items()
            if k.startswith(CONSOLIDATION_REFUSED)
        }
        return dict(sorted(found.items(), key=lambda item: (-item[1], item[0])))

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "cost": round(self.cost, 2),
            "gpuHoursBought": round(self.gpu_hours_bought, 2),
            "gpuHoursUsed": round(self.gpu_hours_used, 2),
            "idleGpuHours": round(self.idle_gpu_hours, 2),
            "idleBeyondMinWarmGpuHours": round(self.idle_beyond_reserve, 2),
            "floorGpuHours": round(self.floor_gpu_hours, 2),
            "floorIdleBeyondMinWarmGpuHours": round(self.floor_beyond_reserve, 2),
            "drains": self.counters.get("drains", 0),
            "podsMoved": self.counters.get("pods_moved", 0),
            "p50TimeToCapacitySeconds": _round(self.ttc_p50),
            "p95TimeToCapacitySeconds": _round(self.ttc_p95),
            "maxTimeToCapacitySeconds": _round(self.ttc_max),
            "pods": self.pods,
            "unserved": self.unserved,
            "launches": self.counters.get("launches", 0),
            "launchFailures": self.counters.get("launch_failures", 0),
            "terminations": self.counters.get("terminations", 0),
            "compactions": self.counters.get("compactions", 0),
            "interruptionsHandled": self.counters.get("interruptions_handled", 0),
            "invocations": {
                k.split(":", 1)[1]: v
                for k, v in sorted(self.counters.items())
                if k.startswith("invocations:")
            },
            "consolidationRefusals": self.consolidation_refusals(),
            "violations": sum(self.violations.values()),
            "violationsByKind": dict(self.violations),
            "peakHourlyRate": float(self.peak_hourly_rate),
            "budgetRefusals": self.budget_refusals,
            "budgetReasons": self.budget_reasons,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


@dataclass
class Ledger:
    policy: str
    instances: dict[str, InstanceRecord] = field(default_factory=dict)
    counters: Counter[str] = field(default_factory=Counter)
    ttc: list[float] = field(default_factory=list)
    served: set[str] = field(default_factory=set)
    gpu_seconds_used: float = 0.0
    budget_refusals: int = 0
    budget_reasons: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    peak_hourly_rate: Decimal = Decimal(0)
    reserve: tuple[int, int] = (0, 0)  # minResources and warmResources in GPUs
    beyond_gpu_minutes: float = 0.0
    floor_gpu_minutes: float = 0.0
    floor_beyond_gpu_minutes: float = 0.0

    def launched(self, record: InstanceRecord) -> None:
        self.instances[record.instance_id] = record
        self.counters["launches"] += 1
        self.peak_hourly_rate = max(self.peak_hourly_rate, self.hourly_rate())

    def hourly_rate(self) -> Decimal:
        """What the live instances bill per hour now."""
        return sum((r.hourly_price for r in self.instances.values() if r.ended is None), Decimal(0))

    def ended(self, instance_id: str, at: float) -> None:
        record = self.instances.get(instance_id)
        if record is not None and record.ended is None:
            record.ended = at
            self.counters["terminations"] += 1

    def placed(self, pod: str, waited: float) -> None:
        """A pod placed; only its first placement counts as its time to capacity."""
        if pod not in self.served:
            self.served.add(pod)
            self.ttc.append(waited)

    def refused(self, reason: str) -> None:
        self.budget_refusals += 1
        if reason not in self.budget_reasons and len(self.budget_reasons) < 5:
            self.budget_reasons.append(reason)

    def cost(self, until: float) -> float:
        return sum(float(r.hourly_price) * r.seconds(until) / 3600 for r in self.instances.values())

    def live_gpus(self) -> int:
        return sum(r.gpus for r in self.instances.values() if r.ended is None)

    def sample(self, at: float, demand_gpus: float, *, waiting_pods: int = 0, used_gpus: float = 0.0) -> None:
        live = self.live_gpus()
        self.samples.append(Sample(at / 3600, demand_gpus, live, self.cost(at), waiting_pods))
        minimum, warm = self.reserve
        need = max(float(minimum), used_gpus + warm)
        self.beyond_gpu_minutes += max(0.0, live - need)
        whole = math.ceil(round(need, 9))  # a sum of shares a hair over a whole number is that number
        self.floor_gpu_minutes += whole
        self.floor_beyond_gpu_minutes += whole - need

    def report(self, *, until: float, pods: int, violations: dict[str, int]) -> PolicyReport:
        bought = sum(r.gpus * r.seconds(until) for r in self.instances.values()) / 3600
        return PolicyReport(
            policy=self.policy,
            cost=self.cost(until),
            gpu_hours_bought=bought,
            gpu_hours_used=self.gpu_seconds_used / 3600,
            ttc_p50=percentile(self.ttc, 0.50),
            ttc_p95=percentile(self.ttc, 0.95),
            ttc_max=max(self.ttc) if self.ttc else None,
            pods=pods,
            unserved=pods - len(self.served),
            counters=dict(self.counters),
            violations=violations,
            budget_refusals=self.budget_refusals,
            budget_reasons=list(self.budget_reasons),
            samples=list(self.samples),
            peak_hourly_rate=self.peak_hourly_rate,
            idle_beyond_reserve=self.beyond_gpu_minutes / 60,
            floor_gpu_hours=self.floor_gpu_minutes / 60,
            floor_beyond_reserve=self.floor_beyond_gpu_minutes / 60,
        )
