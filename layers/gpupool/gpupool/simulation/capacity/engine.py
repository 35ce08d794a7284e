"""The capacity simulation's engine: demand played through one policy's driver on a simulated clock.

Role: `run_policy(driver, demands, window_seconds=…)` steps the clock (`step_seconds`, default
15 s): pods of the trace arrive and leave; the driver moves its cloud and cluster on and decides (its
services / rules run each minute and after any change); the ready nodes it offers are synced
into the shared `Placement`, pods its drains evicted are pending again, and pending pods are
placed by the shared rule (a pod's time to capacity is from its arrival to its first
placement). Each minute the ledger samples demand, capacity, the GPUs pods hold, cost and the
pods waiting (`reserve`: min and warm in GPUs, for the idle beyond them), and the
`ViolationDetector` checks the driver's state. `Driver` is what both drivers offer.

Must not: decide capacity (the drivers do) or know which policy runs.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Protocol

from gpupool.simulation.capacity.demand_trace import Demand
from gpupool.simulation.capacity.ledger import Ledger, PolicyReport
from gpupool.simulation.capacity.placement import NodeShape, Placement, SimNode
from gpupool.simulation.capacity.violations import Limits, StateSample, ViolationDetector

__all__ = ["Driver", "Progress", "run_policy"]

Progress = Callable[[float], None]  # share of the window done, 0..1


class Driver(Protocol):
    name: str
    ledger: Ledger

    def advance(self, at: float, *, tick: bool, changed: bool) -> None: ...
    def ready_nodes(self) -> dict[str, NodeShape]: ...
    def evicted(self) -> list[str]: ...
    def pod_placed(self, pod: str, node: SimNode) -> None: ...
    def pod_left(self, pod: str, node: SimNode | None) -> None: ...
    def sample(self, at: float) -> StateSample: ...
    def finish(self) -> None: ...


def run_policy(
    driver: Driver,
    demands: Sequence[Demand],
    *,
    window_seconds: float,
    limits: Limits,
    step_seconds: float = 15.0,
    progress: Progress | None = None,
    reserve: tuple[int, int] = (0, 0),
) -> PolicyReport:
    if step_seconds <= 0 or 60 % step_seconds:
        raise ValueError(f"the step must divide a minute, got {step_seconds} s")
    arrivals = sorted(demands)
    departures: list[tuple[float, str]] = []
    placement = Placement()
    detector = ViolationDetector(limits)
    ledger = driver.ledger
    ledger.reserve = reserve
    present: dict[str, Demand] = {}
    next_arrival = 0
    changed = True
    steps = int(window_seconds // step_seconds)
    per_minute = int(60 // step_seconds)

    def placed(pod: str, node: str, at: float) -> None:
        ledger.placed(pod, at - present[pod].arrival)
        driver.pod_placed(pod, placement.nodes[node])

    for index in range(steps + 1):
        at = index * step_seconds
        # The trace's arrivals and departures up to `at`, in time order, each at its own time.
        while True:
            arrival = arrivals[next_arrival].arrival if next_arrival < len(arrivals) else None
            departure = departures[0][0] if departures else None
            if departure is not None and departure <= at and (arrival is None or departure <= arrival):
                _, name = heapq.heappop(departures)
                present.pop(name, None)
                node = placement.depart(name, departure)
                if node is not None:
                    driver.pod_left(name, placement.nodes.get(node))
                    changed = True
            elif arrival is not None and arrival <= at:
                demand = arrivals[next_arrival]
                next_arrival += 1
                present[demand.name] = demand
                heapq.heappush(departures, (demand.departure, demand.name))
                node = placement.arrive(demand, arrival)
                if node is not None:
                    placed(demand.name, node, arrival)
                changed = True
            else:
                break
        tick = index % per_minute == 0
        driver.advance(at, tick=tick, changed=changed)
        changed = bool(placement.sync_nodes(driver.ready_nodes(), at))
        for pod in driver.evicted():
            placement.requeue(pod, at)
            changed = True
        for pod, node in placement.place_pending(at):
            placed(pod, node, at)
            changed = True
        if tick:
            asked = float(sum((d.gpus for d in present.values()), start=Decimal(0)))
            in_use = float(sum((d.gpus for d, _n, _s in placement.placed.values()), start=Decimal(0)))
            ledger.sample(at, asked, waiting_pods=len(placement.pending), used_gpus=in_use)
            detector.check(driver.sample(at))
            if progress is not None:
                progress(at / window_seconds if window_seconds else 1.0)
    end = steps * step_seconds
    placement.close(end)
    ledger.gpu_seconds_used = placement.gpu_seconds
    driver.finish()
    pods = sum(1 for d in arrivals if d.arrival <= end)
    return ledger.report(until=end, pods=pods, violations=detector.result())
