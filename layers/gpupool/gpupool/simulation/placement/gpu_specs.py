"""Trace GPU model names → TFLOPS and VRAM per GPU, from the bundled catalog where it knows them.

Role: openb names models `P100`, `T4`, `V100M16`, `V100M32`, `A10`, and internal codes `G1`–`G3`.
A name the catalog knows (either cloud) takes its FP16 TFLOPS and VRAM; `<MODEL>M<GiB>` takes
the catalog's TFLOPS for `<MODEL>` and the VRAM its suffix says; any other name takes
`DEFAULT_SPEC` (documented in docs/placement.md). Placement in the simulator is by shares of a
GPU, so these figures set units, not who fits where.

Must not: read anything but the bundled catalog, or decide placement.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpupool.core.catalog import load_catalog
from gpupool.core.model.cloud import CLOUDS

__all__ = ["DEFAULT_SPEC", "GpuSpec", "catalog_specs", "spec_for"]

GIB = 1 << 30
_SUFFIX = re.compile(r"^(?P<base>.+?)M(?P<gib>\d+)$")


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One GPU: FP16 TFLOPS in milli-TFLOPS and VRAM in bytes; `known` when the catalog says so."""

    tflops_milli: int
    vram_bytes: int
    known: bool = True


DEFAULT_SPEC = GpuSpec(tflops_milli=100_000, vram_bytes=16 * GIB, known=False)


def catalog_specs() -> dict[str, GpuSpec]:
    """Every GPU model in the bundled AWS and Alibaba catalogs (the largest VRAM when several)."""
    specs: dict[str, GpuSpec] = {}
    for cloud in sorted(CLOUDS):  # alphabetical: on a tie in VRAM the first read stays
        for it in load_catalog(cloud).instance_types:
            spec = GpuSpec(math.ceil(it.tflops_per_gpu * 1000), it.vram_gib_per_gpu * GIB)
            old = specs.get(it.gpu_model)
            if old is None or spec.vram_bytes > old.vram_bytes:
                specs[it.gpu_model] = spec
    return specs


def spec_for(model: str, specs: dict[str, GpuSpec]) -> GpuSpec:
    """The spec of a trace model name (see the module docstring)."""
    if model in specs:
        return specs[model]
    match = _SUFFIX.match(model)
    if match and match["base"] in specs:
        return GpuSpec(specs[match["base"]].tflops_milli, int(match["gib"]) * GIB)
    return DEFAULT_SPEC
