"""Variants of a trace the placement benchmark generates itself: more model constraints, more multi-GPU tasks.

Role: the FGD paper evaluates its policy on openb variants (Weng et al., ATC '23, §6.4–6.5: 33 %
of GPU tasks with a GPU-type constraint, the production share it reports; multi-GPU tasks
sampled until they hold a larger share of the GPU demand, up to 50 %). These are our own
generators of the same kinds, seeded, so the benchmark can rerun them:

- `with_gpu_specs`: each GPU task, with probability `share`, gets a `gpu_spec` — one model, or with
  probability 1/4 two — drawn in proportion to the cluster's GPUs of each model, among the models
  with a node that could hold the task (enough GPUs, CPU and memory), so no constraint is
  unsatisfiable by construction.
- `with_multi_gpu`: copies of the trace's multi-GPU tasks, drawn uniformly, are added until the
  multi-GPU tasks hold `share` of the GPU demand; each copy is named `NAME-xI` (I counts copies)
  and takes the creation time of a task drawn uniformly, so copies spread over the trace.

`pod_list_csv` writes a pod list in openb's columns, so the feasibility checker and the CLI read
a variant as they read the trace.

Must not: read files, place tasks, or draw from any generator but the one seeded here.
"""

from __future__ import annotations

import csv
import io
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from gpupool.simulation.openb import TraceError, TraceNode, TraceTask

__all__ = ["pod_list_csv", "with_gpu_specs", "with_multi_gpu"]


def with_gpu_specs(
    nodes: Sequence[TraceNode], tasks: Sequence[TraceTask], *, share: float = 0.33, seed: int = 1
) -> list[TraceTask]:
    """The tasks, `share` of the GPU ones constrained to one or two GPU models (see the module)."""
    if not 0 <= share <= 1:
        raise TraceError(f"the share of constrained GPU tasks must lie in 0..1, got {share}")
    rng = random.Random(seed)
    gpus: Counter[str] = Counter()
    for node in nodes:
        if node.gpus:
            gpus[node.model] += node.gpus
    models = sorted(gpus)
    out: list[TraceTask] = []
    for task in tasks:
        if task.num_gpu and rng.random() < share:
            hosts = [
                m
                for m in models
                if any(
                    n.model == m
                    and n.gpus >= task.num_gpu
                    and n.cpu_milli >= task.cpu_milli
                    and n.memory_mib >= task.memory_mib
                    for n in nodes
                )
            ]
            wanted = 1 if rng.random() < 0.75 else 2
            chosen: set[str] = set()
            while hosts and len(chosen) < min(wanted, len(hosts)):
                chosen.add(rng.choices(hosts, weights=[gpus[m] for m in hosts])[0])
            if chosen:
                task = replace(task, gpu_spec=tuple(sorted(chosen)))
        out.append(task)
    return out


def with_multi_gpu(tasks: Sequence[TraceTask], *, share: float = 0.5, seed: int = 1) -> list[TraceTask]:
    """The tasks plus copies of multi-GPU ones until those hold `share` of the GPU demand."""
    if not 0 <= share < 1:
        raise TraceError(f"the multi-GPU share of the GPU demand must lie in 0..1 (below 1), got {share}")
    multi = [t for t in tasks if t.num_gpu > 1]
    if not multi:
        raise TraceError("the trace has no multi-GPU task to copy")
    rng = random.Random(seed)
    times = [t.creation_time for t in tasks]
    total = sum(t.gpu_demand_milli for t in tasks)
    held = sum(t.gpu_demand_milli for t in multi)
    out = list(tasks)
    copies = 0
    while held < share * total:
        task = rng.choice(multi)
        out.append(replace(task, name=f"{task.name}-x{copies}", creation_time=rng.choice(times)))
        held += task.gpu_demand_milli
        total += task.gpu_demand_milli
        copies += 1
    return out


def pod_list_csv(tasks: Sequence[TraceTask]) -> str:
    """The tasks as an openb pod list (name, CPU, memory, GPUs, milli, gpu_spec, creation and
    deletion time)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"]
    writer.writerow([*columns, "creation_time", "deletion_time"])
    for t in tasks:
        times = ["" if v is None else v for v in (t.creation_time, t.deletion_time)]
        writer.writerow(
            [t.name, t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli, "|".join(t.gpu_spec), *times]
        )
    return out.getvalue()
