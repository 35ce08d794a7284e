"""The trace the simulations run on when none is given: openb's shape, generated, shipped as data.

Role: `SAMPLE_NODES` and `SAMPLE_PODS` name the two CSV files beside this module — a node list
(`sn, cpu_milli, memory_mib, gpu, model`) and a pod list (`name, cpu_milli, memory_mib, num_gpu,
gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time`) in the
columns of openb (Alibaba cluster-trace-gpu-v2023), about a tenth of its size. They are written
by `python -m gpupool.simulation.traces.generate` from the published trace's summary figures
(its node mix, its request mix, the spread of its creation times and lifetimes; see that
module) — no row of openb is copied. `sample_paths()` returns them as files, so an installed
`gpupool` finds them as a source checkout does.

Must not: parse the files (gpupool.simulation.openb does) or hold simulation logic.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["SAMPLE_NODES", "SAMPLE_PODS", "sample_paths"]

SAMPLE_NODES = "openb_shaped_node_list.csv"
SAMPLE_PODS = "openb_shaped_pod_list.csv"


def sample_paths() -> tuple[Path, Path]:
    """(node list, pod list) of the shipped sample, as paths on disk."""
    folder = resources.files(__name__)
    return Path(str(folder.joinpath(SAMPLE_NODES))), Path(str(folder.joinpath(SAMPLE_PODS)))
