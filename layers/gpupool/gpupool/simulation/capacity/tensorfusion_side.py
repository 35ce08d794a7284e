"""TensorFusion's side: its replayed rules (`tensorfusion_rules`) meeting the same cloud fates.

Role: `TensorFusionDriver` keeps TensorFusion's view — claims and their nodes, in memory, as
its controller does — and, at the same moments gpupool's launch runs (each minute and after
any change), applies `tf_gap` / `tf_choose`; every compaction period, `tf_compaction`. What
it launches meets the simulated cloud's fates in the same launch order as gpupool's (the n-th launch
boots and joins as gpupool's n-th).
Rules of the replay that are TensorFusion's, not choices of this module (see
shared/TENSORFUSION-FACTS.md): on AWS TensorFusion's RunInstances passes no market options,
so every node is On-Demand (the pool's Spot offerings are never launched; nothing is
interrupted), and the same holds for Alibaba without `spotPriceLimit` in extraParams; a claim
whose launch fails for capacity stays pending and its controller retries the same offering
on every reconcile (no timeout, no other offering); nodes are usable once joined.

Must not: import gpupool's planning or decisions, or the services (only the catalog's offerings
and this simulation's own records).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from gpupool.core.planning.plan import OfferingRef
from gpupool.simulation.capacity.ledger import InstanceRecord, Ledger
from gpupool.simulation.capacity.placement import NodeShape, SimNode
from gpupool.simulation.capacity.pool_spec import PoolSpec, pool_offerings
from gpupool.simulation.capacity.sizes import OfferingSize
from gpupool.simulation.capacity.tensorfusion_rules import (
    Resources,
    TFNode,
    TFOffering,
    tf_choose,
    tf_compaction,
    tf_gap,
)
from gpupool.simulation.capacity.violations import StateSample
from gpupool.simulation.cluster.fates import INTERRUPTION_NOTICE_SECONDS, CloudFates, LaunchFate
from gpupool.testing.memory_ports import START

__all__ = ["TensorFusionDriver"]

COMPACTION_PERIOD_SECONDS = 300.0


@dataclass
class _Claim:
    name: str
    offering: OfferingRef
    size: OfferingSize
    instance_id: str | None = None
    launched: float = 0.0
    fate: LaunchFate | None = None
    joined_at: float | None = None
    ended: bool = False
    free: Decimal = Decimal(0)  # free GPU share, as the node agent reports it
    workers: int = 0

    @property
    def resources(self) -> Resources:
        return Resources(self.size.tflops, self.size.vram_gib)


class TensorFusionDriver:
    name = "tensorfusion"

    def __init__(self, spec: PoolSpec, fates: CloudFates, *, start: datetime = START) -> None:
        self.spec, self.fates, self.start = spec, fates, start
        allowed = [
            o
            for o in pool_offerings(spec)
            if o.instance_type in spec.instance_types and o.capacity_type == "OnDemand"
        ]
        self._refs = {(o.instance_type, o.zone or ""): o for o in allowed}
        self.offerings = [
            TFOffering(
                instance_type=o.instance_type,
                zone=o.zone or "",
                capacity_type=o.capacity_type,
                size=Resources(OfferingSize.of(o).tflops, OfferingSize.of(o).vram_gib),
                on_demand_price=Decimal(o.hourly_price),
            )
            for o in allowed
        ]
        self.rng = random.Random(f"{fates.config.seed}/tensorfusion-zones")
        self.claims: dict[str, _Claim] = {}
        self.ledger = Ledger("tensorfusion")
        self._launches = 0
        self._claim_ids = itertools.count(1)
        self._last_compaction = 0.0
        self._min = Resources(spec.min_tflops, spec.min_vram)
        self._warm = Resources(spec.warm_tflops, spec.warm_vram)
        self._max = Resources(spec.max_tflops, spec.max_vram)

    # ---- its controller ---------------------------------------------------------------------
    def _try_launch(self, claim: _Claim, at: float) -> None:
        if self.fates.out_of_capacity(claim.offering.key, at):
            self.ledger.counters["launch_failures"] += 1
            return
        claim.instance_id = f"tf-{self._launches:06d}"
        claim.fate = self.fates.fate(self._launches, claim.offering.capacity_type)
        claim.launched = at
        self._launches += 1
        self.ledger.launched(
            InstanceRecord(
                claim.instance_id, claim.offering.key, claim.size.gpus, claim.size.hourly_price, at
            )
        )

    def _end(self, claim: _Claim, at: float) -> None:
        claim.ended = True
        if claim.instance_id is not None:
            self.ledger.ended(claim.instance_id, at)
        del self.claims[claim.name]

    def _totals(self) -> tuple[Resources, Resources, Resources]:
        total = available = in_flight = Resources()
        for claim in self.claims.values():
            if claim.joined_at is None:
                in_flight += claim.resources
                continue
            total += claim.resources
            shape = claim.size.shape
            available += Resources(claim.free * shape.tflops_per_gpu, claim.free * shape.vram_per_gpu)
        return total, available, in_flight

    def _expand(self, at: float) -> None:
        total, available, in_flight = self._totals()
        need = tf_gap(
            min_=self._min,
            warm=self._warm,
            total=total,
            available=available,
            in_flight=in_flight,
            running=total.covers(self._min),
        )
        choice = tf_choose(need, self.offerings, total=total, max_=self._max, rng=self.rng)
        if choice is None:
            return
        ref = self._refs[(choice.offering.instance_type, choice.offering.zone)]
        for _ in range(choice.count):
            name = f"tf-claim-{next(self._claim_ids):06d}"
            claim = _Claim(name, ref, OfferingSize.of(ref))
            claim.free = Decimal(claim.size.shape.gpus)
            self.claims[name] = claim
            self._try_launch(claim, at)

    def _compact(self, at: float) -> None:
        total, available, _ = self._totals()
        now = self.start + timedelta(seconds=at)
        nodes = [
            TFNode(c.name, c.resources, self.start + timedelta(seconds=c.joined_at), True, c.workers)
            for c in self.claims.values()
            if c.joined_at is not None
        ]
        pending = sum(1 for c in self.claims.values() if c.joined_at is None)
        removed = tf_compaction(
            nodes,
            min_=self._min,
            warm=self._warm,
            total=total,
            available=available,
            pending_claims=pending,
            now=now,
        )
        for name in removed:
            self._end(self.claims[name], at)
            self.ledger.counters["compactions"] += 1

    # ---- the engine's interface -------------------------------------------------------------
    def advance(self, at: float, *, tick: bool, changed: bool) -> None:
        for claim in list(self.claims.values()):
            fate = claim.fate
            if claim.instance_id is None:
                if tick or changed:
                    self._try_launch(claim, at)
                continue
            if fate is None:
                continue
            if claim.joined_at is None and at >= claim.launched + fate.boot_seconds + fate.join_seconds:
                claim.joined_at = at
                changed = True
            lost_at = None if fate.interrupted_after is None else claim.launched + fate.interrupted_after
            if lost_at is not None and at >= lost_at + INTERRUPTION_NOTICE_SECONDS:
                self._end(claim, at)  # no interruption handling: the node is simply gone
                changed = True
        if tick or changed:
            self._expand(at)
        if tick and at - self._last_compaction >= COMPACTION_PERIOD_SECONDS:
            self._last_compaction = at
            self._compact(at)

    def ready_nodes(self) -> dict[str, NodeShape]:
        return {c.name: c.size.shape for c in self.claims.values() if c.joined_at is not None}

    def evicted(self) -> list[str]:
        return []

    def pod_placed(self, pod: str, node: SimNode) -> None:
        self._usage(node)

    def pod_left(self, pod: str, node: SimNode | None) -> None:
        if node is not None:
            self._usage(node)

    def _usage(self, node: SimNode) -> None:
        claim = self.claims.get(node.name)
        if claim is not None:
            claim.free, claim.workers = node.free_share, len(node.pods)

    def sample(self, at: float) -> StateSample:
        live = [c for c in self.claims.values() if c.instance_id is not None]
        return StateSample(
            at=at,
            tflops=sum((c.size.tflops for c in live), start=Decimal(0)),
            vram=sum((c.size.vram_gib for c in live), start=Decimal(0)),
            instance_claims={str(c.instance_id): c.name for c in live},
            claims=frozenset(self.claims),
        )

    def finish(self) -> None:
        """Nothing to collect: TensorFusion enforces no budget, so it refuses nothing."""
