"""The usable-GPUs Node label: the Node change that makes kube-scheduler retry a refused pod.

Role: name the label (`gpupool.io/usable-gpus=<count>`) and plan which Nodes must carry which
value. kube-scheduler retries a pod only on a cluster event it watches, or after the pod has sat
5 minutes in its unschedulable queue (pkg/scheduler/backend/queue/scheduling_queue.go:
`flushUnschedulablePodsLeftover`, `DefaultPodMaxInUnschedulablePodsDuration`). A pod the
extender refused has no rejecting plugin, so any event some plugin registers requeues it
(`isPodWorthRequeuing`: "no failed plugins" → queue after backoff) — a Node added, or its
labels, taints, conditions or allocatable changed, an assigned pod deleted. GPU objects are
custom resources kube-scheduler does not watch: a node whose GPUs are published after it joined
(the agent starts after the kubelet) would leave the pods that wait for it Pending until some
unrelated event or the 5-minute flush. The relay keeps this label equal to the count of the
node's usable GPUs it sees, so the GPUs appearing (or coming back) is a Node label update —
an event NodeAffinity registers — and kube-scheduler asks the extender again at once.

Must not: write anything (the relay's keeper does), or label a node the Node watch has not shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Final

from gpupool.core.allocator.records import RUNNING, GpuInfo

__all__ = ["LABEL_USABLE_GPUS", "plan_usable_gpu_labels", "usable_gpus_per_node"]

LABEL_USABLE_GPUS: Final = "gpupool.io/usable-gpus"


def usable_gpus_per_node(gpus: Iterable[GpuInfo]) -> dict[str, int]:
    """How many GPUs each node has that placement may use (phase Running, not marked missing)."""
    counts: dict[str, int] = {}
    for gpu in gpus:
        if gpu.phase == RUNNING:
            counts[gpu.node] = counts.get(gpu.node, 0) + 1
    return counts


def plan_usable_gpu_labels(
    counts: Mapping[str, int], labelled: Mapping[str, str], known: Set[str]
) -> dict[str, str | None]:
    """The label value each known node must change to (None: remove the label).

    `counts`: usable GPUs per node; `labelled`: the label's value on each Node that carries it;
    `known`: nodes whose Node object exists (a node not seen yet is left alone, so nothing is
    written to a Node that may not exist). A node with no usable GPU loses the label, so the
    next GPU to appear is a change again.
    """
    changes: dict[str, str | None] = {}
    for node in sorted(known):
        wanted = str(counts[node]) if counts.get(node) else None
        if labelled.get(node) != wanted:
            changes[node] = wanted
    return changes
