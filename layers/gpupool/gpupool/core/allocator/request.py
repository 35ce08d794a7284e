"""What a pod asks the allocator for, and the pool policy it is placed under.

Role: plain, immutable value types in the allocator's internal units — TFLOPS in milli-TFLOPS
(int), VRAM in bytes (int) — so the hot path never touches `Quantity` or pydantic.

Must not: parse pods (see `pod_request`), hold state, or do I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class PlacementMode(StrEnum):
    """Placement modes (SchedulingConfigTemplate `placement.mode`): TensorFusion's three, plus ours.

    FragmentationAware places each pod where it grows the expected fragmentation of the cluster,
    measured against the recent mix of requests, the least; BalancedFit is Best-fit that keeps
    nodes' CPU and memory in step with their free GPUs and leaves GPU leftovers the recent
    requests can still use (see docs/placement.md).
    """

    COMPACT_FIRST = "CompactFirst"
    LOW_LOAD_FIRST = "LowLoadFirst"
    NODE_COMPACT_GPU_LOW_LOAD = "NodeCompactGPULowLoad"
    FRAGMENTATION_AWARE = "FragmentationAware"
    BALANCED_FIT = "BalancedFit"


@dataclass(frozen=True, slots=True)
class Oversubscription:
    """A pool's `capacityConfig.oversubscription`, used to bound the sum of *limits* per GPU.

    `tflops_oversell_ratio` is a percentage of physical TFLOPS (300 = 3x); `None` means no
    bound on limits. Requests are always placed against physical capacity (see docs/scheduling.md).
    """

    tflops_oversell_ratio: int | None = None
    vram_expand_to_host_mem: int = 0
    vram_expand_to_host_disk: int = 0


@dataclass(frozen=True, slots=True)
class PlacementPolicy:
    """GPUResourcesFit arguments plus the placement mode; defaults are TensorFusion's."""

    mode: PlacementMode = PlacementMode.NODE_COMPACT_GPU_LOW_LOAD
    vram_weight: float = 0.7
    tflops_weight: float = 0.3
    max_worker_per_node: int = 256

    def __post_init__(self) -> None:
        if not 0 <= self.vram_weight <= 1 or not 0 <= self.tflops_weight <= 1:
            raise ValueError("vramWeight and tflopsWeight must lie in 0..1")
        if abs(self.vram_weight + self.tflops_weight - 1) > 1e-9:
            raise ValueError("vramWeight + tflopsWeight must equal 1 so scores stay within 0..100")
        if self.max_worker_per_node < 1:
            raise ValueError("maxWorkerPerNode must be at least 1")


@dataclass(frozen=True, slots=True)
class MatchExpression:
    """One node selector requirement (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Expressions ANDed together; a pod's terms are ORed (Kubernetes semantics)."""

    match_expressions: tuple[MatchExpression, ...] = ()
    match_fields: tuple[MatchExpression, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeConstraints:
    """A pod's nodeSelector and required node affinity."""

    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[NodeSelectorTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.node_selector and not self.required_terms


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """One pod's GPU request, per GPU, in internal units."""

    namespace: str
    name: str
    pool: str
    tflops_request: int = 0
    tflops_limit: int = 0
    vram_request: int = 0
    vram_limit: int = 0
    compute_percent_request: float | None = None
    compute_percent_limit: float | None = None
    gpu_count: int = 1
    # A share of each GPU in thousandths (TFLOPS and VRAM alike, rounded down so shares that sum
    # to 1000 fill a GPU exactly); when set it replaces the TFLOPS and VRAM amounts above.
    gpu_share_milli: int | None = None
    gpu_model: str | None = None
    vendor: str | None = None
    # The pod's CPU (milli) and memory (bytes) requests: FragmentationAware and BalancedFit weigh
    # them against what nodes have left when told (AllocatorState.set_host_free); no filter uses them.
    cpu_milli: int = 0
    memory: int = 0
    gpu_indices: frozenset[int] | None = None
    qos: str = "medium"
    isolation: str = "soft"
    dedicated: bool = False
    uid: str = ""
    constraints: NodeConstraints = field(default_factory=NodeConstraints)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class QuotaLimits:
    """Namespace totals and per-pod bounds from a GPUResourceQuota (`None` = unbounded).

    Per pod (`single_*`): what one pod holds over all its GPUs — TFLOPS in milli, VRAM in bytes,
    compute in percent of one GPU (two GPUs at 50 % hold 100) — and its GPU count."""

    tflops_requests: int | None = None
    tflops_limits: int | None = None
    vram_requests: int | None = None
    vram_limits: int | None = None
    max_workers: int | None = None
    single_tflops_request: int | None = None
    single_tflops_limit: int | None = None
    single_vram_request: int | None = None
    single_vram_limit: int | None = None
    single_compute_request: float | None = None
    single_compute_limit: float | None = None
    single_gpu_count: int | None = None
