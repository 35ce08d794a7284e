"""The allocator: filter, score, reserve and release fractional GPUs for pods.

Role: the one entry point the extender, the simulate API, the benchmark and the functions use.
It owns an `AllocatorState` plus namespace quota usage, runs `filters`, asks the pool's placement
policy (`placers.PLACERS`, by mode) to score and choose, and turns a choice into an
`Allocation`. Every refusal carries a reason a human can act on.

Must not: lock (the relay serialises calls), do I/O, read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.balanced_fit import BalancedFitScorer
from gpupool.core.allocator.filters import FilterOutcome, run_filters
from gpupool.core.allocator.fragmentation import FragmentationScorer
from gpupool.core.allocator.mix import RequestShape
from gpupool.core.allocator.placers import PLACERS, Placer
from gpupool.core.allocator.quota import QuotaUsage, pod_amounts, quota_failure, single_failure
from gpupool.core.allocator.reasons import node_reasons, stage_reasons
from gpupool.core.allocator.records import Allocation
from gpupool.core.allocator.request import GpuRequest, PlacementPolicy, QuotaLimits
from gpupool.core.allocator.rows import row_any
from gpupool.core.allocator.scoring import to_extender_priority
from gpupool.core.allocator.state import AllocatorState
from gpupool.core.model.placement_mode import PlacementMode

__all__ = ["AllocationError", "Allocator", "Chooser", "FilterResult", "Simulation", "StageReport"]

P = TypeVar("P")
# A placement rule from outside the modes (the simulator's baselines): given the state, the
# surviving (nodes × GPU slots) mask and the request, the chosen row and slots, or None.
Chooser = Callable[[AllocatorState, npt.NDArray[np.bool_], GpuRequest], "tuple[int, list[int]] | None"]


class AllocationError(Exception):
    """A reservation that cannot be made; the message says why."""


@dataclass(frozen=True, slots=True)
class FilterResult:
    """Nodes that can take the pod, and why each other node cannot."""

    passed: list[str]
    failed: dict[str, str]


@dataclass(frozen=True, slots=True)
class StageReport:
    stage: str
    before: list[str]
    after: list[str]
    reasons: dict[str, str]


@dataclass(frozen=True, slots=True)
class Simulation:
    """What scheduling the pod now would do; nothing is reserved."""

    node: str | None
    gpus: list[str]
    stages: list[StageReport]
    scores: dict[str, float]
    diagnosis: str | None = None
    node_reasons: dict[str, str] = field(default_factory=dict)


class Allocator:
    """Placement over one cluster's GPUs (all pools); callers serialise access."""

    def __init__(
        self, policy: PlacementPolicy | None = None, *, pool_modes: Mapping[str, PlacementMode] | None = None
    ) -> None:
        self.policy = policy or PlacementPolicy()
        self.pool_modes = dict(pool_modes or {})
        self.state = AllocatorState(
            vram_weight=self.policy.vram_weight, tflops_weight=self.policy.tflops_weight
        )
        self.quotas: dict[str, QuotaLimits] = {}
        self.usage: dict[str, QuotaUsage] = {}
        self.placers: dict[PlacementMode, Placer] = {mode: make() for mode, make in PLACERS.items()}

    # The two learning placers by their type, for the replay's rules for tasks without GPUs
    # (`simulation/placement/host_only`) and the tests that read their windows.
    def _placer_of(self, mode: PlacementMode, kind: type[P]) -> P:
        placer = self.placers[mode]
        assert isinstance(placer, kind)
        return placer

    @property
    def fragmentation(self) -> FragmentationScorer:
        return self._placer_of(PlacementMode.FRAGMENTATION_AWARE, FragmentationScorer)

    @property
    def balanced(self) -> BalancedFitScorer:
        return self._placer_of(PlacementMode.BALANCED_FIT, BalancedFitScorer)

    # ---- inputs -----------------------------------------------------------------------------
    def mode_for(self, pool: str) -> PlacementMode:
        return self.pool_modes.get(pool, self.policy.mode)

    def set_quota(self, namespace: str, limits: QuotaLimits | None) -> None:
        if limits is None:
            self.quotas.pop(namespace, None)
        else:
            self.quotas[namespace] = limits

    def add_allocation(self, allocation: Allocation) -> None:
        """Record what a pod already holds (rebuild at start, or a pod event)."""
        self.remove_allocation(allocation.key)
        self.state.add_allocation(allocation)
        self.usage.setdefault(allocation.namespace, QuotaUsage()).add(allocation)

    def remove_allocation(self, key: str) -> Allocation | None:
        allocation = self.state.remove_allocation(key)
        if allocation is not None:
            self.usage.setdefault(allocation.namespace, QuotaUsage()).add(allocation, sign=-1)
        return allocation

    # ---- decisions ----------------------------------------------------------------------------
    def _quota_failure(self, request: GpuRequest) -> str | None:
        """The per-pod bound or namespace total the request breaks, every request form converted
        by the largest GPU known (`quota.pod_amounts`); None when it fits or there is no quota."""
        limits = self.quotas.get(request.namespace)
        if limits is None:
            return None
        amounts = pod_amounts(
            request,
            largest_tflops=int(self.state.cap_t.max()) if self.state.cap_t.size else 0,
            largest_vram=int(self.state.cap_v.max()) if self.state.cap_v.size else 0,
        )
        single = single_failure(request.namespace, limits, amounts)
        if single is not None:
            return single
        return quota_failure(
            request.namespace,
            limits,
            self.usage.get(request.namespace, QuotaUsage()),
            tflops_request=amounts.tflops_request or 0,
            tflops_limit=amounts.tflops_limit or 0,
            vram_request=amounts.vram_request or 0,
            vram_limit=amounts.vram_limit or 0,
        )

    def _rows(self, nodes: Iterable[str]) -> tuple[np.ndarray, list[str]]:
        index = self.state.node_index
        names = list(nodes)
        found = np.fromiter((index.get(node, -1) for node in names), dtype=np.intp, count=len(names))
        known = found >= 0
        if known.all():
            return found, []
        return found[known], [name for name, ok in zip(names, known.tolist(), strict=True) if not ok]

    def _filter(
        self, request: GpuRequest, nodes: Iterable[str] | None, *, record: bool
    ) -> tuple[FilterOutcome, list[str]]:
        self.state.ensure_layout()
        rows, unknown = (None, []) if nodes is None else self._rows(nodes)
        outcome = run_filters(
            self.state,
            request,
            max_worker_per_node=self.policy.max_worker_per_node,
            candidate_rows=rows,
            quota_failure=self._quota_failure(request),
            record=record,
        )
        return outcome, unknown

    def filter(self, request: GpuRequest, nodes: Iterable[str]) -> FilterResult:
        """The extender's filter: which of `nodes` can take the pod, and why the others cannot."""
        outcome, unknown = self._filter(request, nodes, record=True)
        failed = dict.fromkeys(unknown, "no GPU managed by gpupool on this node")
        failed.update(node_reasons(self.state, request, outcome))
        alive_rows = np.nonzero(row_any(outcome.alive))[0]
        return FilterResult(passed=[self.state.node_names[r] for r in alive_rows.tolist()], failed=failed)

    def prioritize(self, request: GpuRequest, nodes: Iterable[str]) -> dict[str, int]:
        """The extender's prioritize: 0..10 per node (0 when no GPU on it fits)."""
        node_list = list(nodes)
        outcome, _ = self._filter(request, node_list, record=False)
        scores = self._node_scores(request, outcome.alive)
        index = self.state.node_index
        return {
            node: to_extender_priority(float(scores[index[node]])) if node in index else 0
            for node in node_list
        }

    def placer(self, pool: str) -> Placer:
        """The placement policy of `pool`'s mode (`placers.PLACERS`)."""
        return self.placers[self.mode_for(pool)]

    def _node_scores(self, request: GpuRequest, alive: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
        return self.placer(request.pool).node_scores(self.state, alive, RequestShape.of(request))

    def _choose(
        self,
        request: GpuRequest,
        alive: npt.NDArray[np.bool_],
        chooser: Chooser | None,
        shape: RequestShape | None = None,
    ) -> tuple[int, list[int]] | None:
        """The row and GPU slots the pod's mode (or `chooser`) picks among the surviving slots."""
        if chooser is not None:
            return chooser(self.state, alive, request)
        return self.placer(request.pool).choose(self.state, alive, shape or RequestShape.of(request))

    def reserve(
        self,
        request: GpuRequest,
        node: str | None = None,
        *,
        among: Iterable[str] | None = None,
        chooser: Chooser | None = None,
    ) -> Allocation:
        """Filter, score and hold GPUs for the pod; AllocationError says why not.

        `node` pins the pod to one node (a bind); `among` narrows the candidates to some nodes
        (what kube-scheduler's own filters left); `chooser` replaces the mode's choice.
        """
        if node is not None and among is not None:
            raise ValueError("give either node or among, not both")
        if request.key in self.state.allocations:
            held = self.state.allocations[request.key]
            raise AllocationError(
                f"pod {request.key} already holds GPUs {', '.join(held.gpus)} on {held.node}"
            )
        shape = RequestShape.of(request)
        for placer in self.placers.values():
            placer.record(shape)
        narrowed = among if node is None else [node]
        outcome, unknown = self._filter(request, narrowed, record=node is not None)
        if unknown and node is not None:
            raise AllocationError(f"node {node} has no GPU managed by gpupool")
        choice = self._choose(request, outcome.alive, chooser, shape)
        if choice is None:
            if node is not None:
                why = node_reasons(self.state, request, outcome).get(node, "no GPU fits")
                raise AllocationError(f"pod {request.key} no longer fits node {node}: {why}")
            raise AllocationError(f"no node can take pod {request.key}")
        allocation = self._allocation_of(request, outcome, *choice)
        self.add_allocation(allocation)
        return allocation

    def _allocation_of(
        self, request: GpuRequest, outcome: FilterOutcome, row: int, slots: list[int]
    ) -> Allocation:
        per_slot_vram = request.dedicated or request.gpu_share_milli is not None
        return Allocation(
            namespace=request.namespace,
            name=request.name,
            node=self.state.node_names[row],
            gpus=tuple(self.state.slot_names[s] for s in slots),
            tflops_requests=tuple(outcome.request_at(s) for s in slots),
            tflops_limits=tuple(outcome.limit_at(s) for s in slots),
            vram_request=outcome.vram_at(slots[0]),
            vram_limit=outcome.vram_limit_at(slots[0]),
            uid=request.uid,
            isolation=request.isolation,
            dedicated=request.dedicated,
            vram_requests=tuple(outcome.vram_at(s) for s in slots) if per_slot_vram else (),
        )

    def _place_all(self, requests: Iterable[GpuRequest], node: str) -> list[str] | None:
        """Place each request on `node` in turn, the placers learning nothing; the keys placed, or
        None (none left placed) when one does not fit."""
        placed: list[str] = []
        for request in requests:
            outcome, unknown = self._filter(request, [node], record=False)
            choice = None if unknown else self._choose(request, outcome.alive, None)
            if choice is None or request.key in self.state.allocations:
                self._unplace(placed)
                return None
            self.add_allocation(self._allocation_of(request, outcome, *choice))
            placed.append(request.key)
        return placed

    def crowds_out(self, first: GpuRequest, node: str, then: Sequence[GpuRequest]) -> bool:
        """Whether `first` on `node` would leave no room there for `then`, which fit there now
        (a what-if: the state is left as it was)."""
        fits_now = self._place_all(then, node)
        if fits_now is None:
            return False
        self._unplace(fits_now)
        taken = self._place_all([first], node)
        if taken is None:
            return False
        after = self._place_all(then, node)
        self._unplace([*(after or ()), *taken])
        return after is None

    def _unplace(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.remove_allocation(key)

    def release(self, key: str) -> Allocation | None:
        """Give back what pod `namespace/name` holds; None if it held nothing."""
        return self.remove_allocation(key)

    def simulate(self, request: GpuRequest) -> Simulation:
        """Where the pod would go now, with every stage's before/after and reasons; no side effects."""
        outcome, _ = self._filter(request, None, record=True)
        stages = [
            StageReport(
                stage=s.name,
                before=self._names(s.before),
                after=self._names(s.after),
                reasons=stage_reasons(self.state, request, outcome, s),
            )
            for s in outcome.stages
        ]
        scores = self._node_scores(request, outcome.alive)
        scored = {
            self.state.node_names[r]: float(scores[r]) for r in np.nonzero(~np.isnan(scores))[0].tolist()
        }
        choice = self._choose(request, outcome.alive, None)
        if choice is None:
            emptied = next((s.stage for s in stages if s.before and not s.after), None)
            diagnosis = (
                "no GPU in the cluster"
                if not self.state.gpus
                else f"no candidate left after stage {emptied!r}"
            )
            return Simulation(None, [], stages, scored, diagnosis, node_reasons(self.state, request, outcome))
        row, slots = choice
        return Simulation(
            self.state.node_names[row], [self.state.slot_names[s] for s in slots], stages, scored
        )

    def _names(self, mask: np.ndarray) -> list[str]:
        return (
            [self.state.slot_names[s] for s in np.nonzero(mask.ravel())[0].tolist()] if mask.shape[1] else []
        )
