"""Per-GPU bounds on the sum of placed limits, from a pool's oversubscription settings.

Role: one pure function, `limit_caps`, that turns a pool's `Oversubscription` (TFLOPS oversell
ratio, VRAM expansion to host memory / disk) and the node's host sizes into the largest sum of
TFLOPS and VRAM limits one GPU may carry (see docs/scheduling.md, "Oversubscription").

Must not: hold state or look at requests (requests always go against physical capacity).
"""

from __future__ import annotations

from gpupool.core.allocator.records import GpuInfo
from gpupool.core.allocator.request import Oversubscription

__all__ = ["UNBOUNDED", "limit_caps"]

UNBOUNDED = 2**62


def limit_caps(
    gpu: GpuInfo, policy: Oversubscription | None, host: tuple[int, int] | None, sharing: int
) -> tuple[int, int]:
    """(TFLOPS limit bound, VRAM limit bound) for one GPU; host = (memory, disk) bytes or unknown."""
    if policy is None:
        return UNBOUNDED, UNBOUNDED
    ratio = policy.tflops_oversell_ratio
    tflops = UNBOUNDED if ratio is None else gpu.tflops_capacity * ratio // 100
    if policy.vram_expand_to_host_mem == 0 and policy.vram_expand_to_host_disk == 0:
        return tflops, gpu.vram_capacity
    if host is None:
        return tflops, UNBOUNDED
    extra = host[0] * policy.vram_expand_to_host_mem // 100 + host[1] * policy.vram_expand_to_host_disk // 100
    return tflops, gpu.vram_capacity + extra // max(1, sharing)
