"""Write the shipped sample trace: openb's columns and shape, a tenth of its size, seeded.

Role: `node_rows()` and `pod_rows(seed)` build the rows; `main()` writes them beside the package
(`python -m gpupool.simulation.traces.generate [DIR]`). Every figure below is a summary of
openb (Alibaba cluster-trace-gpu-v2023, alibaba/clusterdata, csv/openb_node_list_gpu_node.csv
and csv/openb_pod_list_default.csv: 1,213 nodes, 8,152 pods), not a row of it:
- nodes: openb's node mix by (GPU model, GPUs, CPU, memory), each count divided by ten (at
  least one, so every kind is present): 125 nodes, 630 GPUs;
- pods: 815 requests drawn with openb's frequencies of (GPUs, GPU share in thousandths, CPU,
  memory) — its 40 commonest shapes and its multi-GPU ones (2, 4 and 8 whole GPUs); a 2 %
  share created before the busy period and running to the trace's end, the rest created along
  openb's 20-quantiles of creation time and living openb's 20-quantiles of lifetime
  (interpolated between quantiles); QoS and phase in openb's shares.
The test suite regenerates the files and compares them byte for byte.

Must not: read openb (nothing here needs it) or be imported by the simulations.
"""

from __future__ import annotations

import csv
import io
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from gpupool.simulation.traces import SAMPLE_NODES, SAMPLE_PODS

__all__ = ["SEED", "main", "node_rows", "pod_rows", "render"]

SEED = 2023
PODS = 815
TRACE_END = 12_902_960  # openb's last deletion_time (seconds)
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = (
    "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
    "creation_time", "deletion_time", "scheduled_time",
)  # fmt: skip
# (model, GPUs per node, cpu_milli, memory_mib, openb's count of such nodes)
NODE_MIX = (
    ("G2", 8, 96000, 393216, 549), ("T4", 2, 104000, 524288, 387), ("P100", 2, 16000, 122880, 107),
    ("G3", 8, 128000, 786432, 39), ("V100M16", 4, 32000, 131072, 28), ("P100", 2, 64000, 262144, 22),
    ("V100M32", 8, 96000, 786432, 21), ("V100M16", 1, 8000, 32768, 19), ("T4", 4, 96000, 393216, 17),
    ("V100M32", 4, 48000, 376832, 9), ("V100M16", 8, 64000, 262144, 7), ("P100", 1, 8000, 61440, 3),
    ("P100", 2, 8000, 61440, 2), ("A10", 1, 128000, 1048576, 2),
)  # fmt: skip
# (num_gpu, gpu_milli, cpu_milli, memory_mib, openb's count of such pods)
POD_MIX = (
    (1, 810, 3152, 5600, 1047), (1, 1000, 11300, 49152, 857), (1, 1000, 11400, 48128, 534),
    (1, 1000, 3152, 5600, 470), (1, 470, 11908, 47104, 388), (0, 0, 12500, 57344, 364),
    (1, 470, 8000, 30517, 360), (0, 0, 32000, 49152, 284), (1, 1000, 18708, 64512, 255),
    (1, 650, 11908, 47104, 237), (1, 1000, 9810, 41560, 195), (0, 0, 8000, 30517, 163),
    (1, 1000, 12000, 24576, 158), (1, 1000, 15700, 58368, 158), (1, 1000, 11908, 47104, 153),
    (0, 0, 15400, 51200, 120), (1, 320, 4000, 22888, 111), (1, 1000, 16000, 32768, 108),
    (1, 1000, 8000, 16384, 104), (1, 1000, 4000, 24576, 104), (1, 1000, 12000, 16384, 99),
    (0, 0, 16500, 51200, 95), (1, 1000, 14200, 58368, 93), (1, 230, 4000, 30517, 84),
    (1, 1000, 24200, 93184, 84), (1, 320, 4000, 15258, 78), (1, 590, 3152, 5600, 75),
    (1, 320, 8000, 30517, 72), (1, 550, 4152, 10600, 72), (1, 1000, 11400, 77824, 65),
    (1, 1000, 8000, 32768, 55), (1, 160, 4000, 15258, 53), (1, 460, 6000, 6144, 51),
    (1, 1000, 11900, 77824, 51), (1, 370, 4152, 10600, 45), (1, 1000, 12000, 15360, 44),
    (1, 320, 4000, 30517, 43), (1, 1000, 8200, 33792, 41), (1, 1000, 4000, 31250, 40),
    (1, 1000, 15200, 80896, 36),
    (8, 1000, 64000, 262144, 44), (2, 1000, 24000, 98304, 16), (4, 1000, 48000, 196608, 15),
)  # fmt: skip
# openb's 20-quantiles (0 %, 5 %, …, 95 %) of creation_time and of lifetime, in seconds.
CREATION_QUANTILES = (
    0, 10192225, 10326485, 10460075, 10630406, 10736456, 10903598, 11084688, 11263957, 11386927,
    11516698, 11745793, 11924519, 12081008, 12194827, 12411255, 12540683, 12692300, 12781139,
    12831898, TRACE_END,
)  # fmt: skip
LIFETIME_QUANTILES = (
    1, 48, 80, 112, 146, 167, 202, 244, 301, 406, 540, 691, 883, 1122, 1422, 1974, 2700, 4006,
    6574, 16425, 200000,
)  # fmt: skip
EARLY_SHARE = 0.02  # created before the busy period, running to the end
QOS = (("LS", 4647), ("BE", 3398), ("Burstable", 100), ("Guaranteed", 7))
PHASES = (("Running", 5193), ("Failed", 1870), ("Pending", 897), ("Succeeded", 192))


def node_rows() -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for model, gpus, cpu, memory, count in NODE_MIX:
        for _ in range(max(1, round(count / 10))):
            rows.append((f"sample-node-{len(rows):04d}", cpu, memory, gpus, model))
    return rows


def _between(rng: random.Random, quantiles: Sequence[int]) -> int:
    """A value drawn between two neighbouring quantiles, uniformly within the pair."""
    index = rng.randrange(1, len(quantiles) - 1)
    low, high = quantiles[index], quantiles[index + 1]
    return round(low + (high - low) * rng.random())


def _weighted(rng: random.Random, choices: Sequence[tuple[str, int]]) -> str:
    return rng.choices([c for c, _ in choices], weights=[w for _, w in choices])[0]


def pod_rows(seed: int = SEED) -> list[tuple[object, ...]]:
    rng = random.Random(seed)
    shapes = [mix[:4] for mix in POD_MIX]
    weights = [mix[4] for mix in POD_MIX]
    rows: list[tuple[object, ...]] = []
    for number in range(PODS):
        gpus, milli, cpu, memory = rng.choices(shapes, weights=weights)[0]
        if rng.random() < EARLY_SHARE:
            created = rng.randrange(0, CREATION_QUANTILES[1])
            deleted = TRACE_END
        else:
            created = _between(rng, CREATION_QUANTILES)
            deleted = min(TRACE_END, created + _between(rng, LIFETIME_QUANTILES))
        qos, phase = _weighted(rng, QOS), _weighted(rng, PHASES)
        rows.append(
            (f"sample-pod-{number:04d}", cpu, memory, gpus, milli, "", qos, phase, created, deleted, created)
        )
    return rows


def render(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    folder = Path(args[0]) if args else Path(__file__).parent
    (folder / SAMPLE_NODES).write_text(render(NODE_COLUMNS, node_rows()), encoding="utf-8")
    (folder / SAMPLE_PODS).write_text(render(POD_COLUMNS, pod_rows()), encoding="utf-8")
    print(f"wrote {folder / SAMPLE_NODES} and {folder / SAMPLE_PODS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
