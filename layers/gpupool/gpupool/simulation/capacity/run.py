"""One `gpupool simulate capacity` run: the demand, the cloud's fates and the pool, through each policy.

Role: `CapacityRun` (days, cloud, policies, seed, fates and pool settings, step) and
`simulate(run, demands)`, which builds seeded `CloudFates` and plays the same demand through a
fresh driver per policy (gpupool's real services, in the pool's Provisioned or Karpenter
mode; TensorFusion's replayed rules), returning a `PolicyReport` each. `load_demand` reads a
trace file — an openb pod list is rescaled onto the window — or, when none is given, the
openb-shaped sample the package ships (`gpupool.simulation.traces`), so a fresh clone or an
installed `gpupool` runs with no data beside it.

Must not: print (the CLI does) or decide capacity.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpupool.simulation.capacity.demand_trace import Demand, load_openb, load_trace, trace_kind
from gpupool.simulation.capacity.engine import Driver, run_policy
from gpupool.simulation.capacity.gpupool_policy import GpupoolDriver
from gpupool.simulation.capacity.karpenter_side import KarpenterDriver
from gpupool.simulation.capacity.ledger import PolicyReport
from gpupool.simulation.capacity.pool_spec import CONSOLIDATING, PoolSpec, reserve_gpus
from gpupool.simulation.capacity.tensorfusion_side import TensorFusionDriver
from gpupool.simulation.capacity.violations import Limits
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig
from gpupool.simulation.traces import sample_paths

__all__ = ["POLICIES", "CapacityRun", "default_trace", "load_demand", "simulate"]

POLICIES = ("gpupool", "tensorfusion", CONSOLIDATING)


@dataclass(frozen=True)
class CapacityRun:
    days: float = 2.0
    policies: tuple[str, ...] = POLICIES
    fates: FatesConfig = field(default_factory=FatesConfig)
    pool: PoolSpec = field(default_factory=PoolSpec)
    step_seconds: float = 15.0

    def __post_init__(self) -> None:
        if not self.days > 0:
            raise ValueError(f"--days must be positive, got {self.days}")
        unknown = [p for p in self.policies if p not in POLICIES]
        if unknown or not self.policies:
            raise ValueError(
                f"unknown policy {', '.join(unknown) or '(none)'}: choose from {', '.join(POLICIES)}"
            )

    @property
    def window_seconds(self) -> float:
        return self.days * 86400

    @property
    def limits(self) -> Limits:
        spec = self.pool
        return Limits(spec.min_tflops, spec.min_vram, spec.max_tflops, spec.max_vram)


def default_trace() -> Path:
    """The openb-shaped pod list the package ships (`gpupool.simulation.traces`)."""
    return sample_paths()[1]


def load_demand(trace: Path | None, *, window_seconds: float) -> list[Demand]:
    """The demand of a trace file (an openb pod list rescaled onto the window), or of the
    shipped openb-shaped sample when `trace` is None."""
    path = trace or default_trace()
    if trace_kind(path) == "openb":
        return load_openb(path, window_seconds=window_seconds)
    return load_trace(path)


def _driver(policy: str, run: CapacityRun, fates: CloudFates) -> Driver:
    if policy in ("gpupool", CONSOLIDATING):
        spec = replace(run.pool, consolidation=policy == CONSOLIDATING)
        if spec.mode == "karpenter":
            return KarpenterDriver(spec, fates)
        return GpupoolDriver(spec, fates)
    return TensorFusionDriver(run.pool, fates)


@contextmanager
def quiet_service_log() -> Iterator[None]:
    """The services log every failed action (a launch out of capacity is one); a simulation
    counts them instead of printing thousands of lines."""
    logger = logging.getLogger("gpupool.service")
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


def simulate(
    run: CapacityRun,
    demands: Sequence[Demand],
    *,
    progress: Callable[[str, float], None] | None = None,
) -> list[PolicyReport]:
    """Each policy of `run` on the same seeded fates and demand, in the order given."""
    with quiet_service_log():
        return [_one(policy, run, demands, progress) for policy in run.policies]


def _one(
    policy: str, run: CapacityRun, demands: Sequence[Demand], progress: Callable[[str, float], None] | None
) -> PolicyReport:
    fates = CloudFates(run.fates)  # fresh fates per policy: the same seeded draws for each

    def step_progress(done: float) -> None:
        if progress is not None:
            progress(policy, done)

    return run_policy(
        _driver(policy, run, fates),
        demands,
        window_seconds=run.window_seconds,
        limits=run.limits,
        step_seconds=run.step_seconds,
        progress=step_progress,
        reserve=reserve_gpus(run.pool),
    )
