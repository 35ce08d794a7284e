"""Property tests of consolidation on generated pools: whatever it drains, it never breaks a
PodDisruptionBudget, a do-not-disrupt (TensorFusion's or Karpenter's, on the node, its GPUNode or
a pod, as a label or an annotation), min, warm or the disruption budgets (a count or a
percentage, and a scheduled one active or not at the time), and never moves a worker onto a GPU
that cannot hold its allocation (checked against the shares the generator placed, independently
of the allocator)."""

from __future__ import annotations

import math
from datetime import timedelta
from fractions import Fraction

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gpupool.core.decisions.consolidation import DisruptionAllowance, select_consolidation
from gpupool.core.model.common import LabelSelector
from tests.unit.decisions.builders import NOW
from tests.unit.decisions.consolidation_world import TFLOPS, VRAM_GIB, WNode, WPod, build, gpu_name

SHARES = [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1)]
DND = "tensor-fusion.ai/do-not-disrupt"
KARPENTER_DND = "karpenter.sh/do-not-disrupt"
POD_GUARDS = (DND, KARPENTER_DND)
# Scheduled budgets of no disruption: NOW (12:00 UTC) lies in the first's window, not the second's.
SCHEDULED = {
    "active": {"nodes": "0", "schedule": "0 12 * * *", "duration": "30m"},
    "inactive": {"nodes": "0", "schedule": "0 3 * * *", "duration": "1h"},
}


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, object]:
    count = draw(st.integers(2, 5))
    nodes: list[WNode] = []
    pods: list[WPod] = []
    for n in range(count):
        name = f"n{n}"
        gpus = draw(st.sampled_from([1, 2, 4]))
        guarded = draw(st.sampled_from(["", "", "node", "gpunode"]))
        nodes.append(
            WNode(
                name,
                gpus=gpus,
                price=draw(st.sampled_from(["0.3", "0.526", "1.2", "3.9"])),
                labels={DND: "true"} if guarded == "node" else {},
                gpu_node_labels={DND: "true"} if guarded == "gpunode" else {},
                unschedulable=draw(st.integers(0, 9)) == 0,
                age=timedelta(minutes=draw(st.sampled_from([2, 30, 600]))),
            )
        )
        free = [Fraction(1)] * gpus
        for k in range(draw(st.integers(0, 4))):
            share = draw(st.sampled_from(SHARES))
            if share == 1 and gpus > 1 and draw(st.booleans()):
                whole = [i for i, f in enumerate(free) if f == 1][:2]
                if len(whole) == 2:
                    for i in whole:
                        free[i] = Fraction(0)
                    pods.append(WPod(f"{name}-p{k}", name, gpus=tuple(whole), share=share))
                continue
            fitting = [i for i, f in enumerate(free) if f >= share]
            if not fitting:
                continue
            index = draw(st.sampled_from(fitting))
            free[index] -= share
            guard = {draw(st.sampled_from(POD_GUARDS)): "true"} if draw(st.integers(0, 5)) == 0 else {}
            as_label = draw(st.booleans())
            pods.append(
                WPod(
                    f"{name}-p{k}",
                    name,
                    gpus=(index,),
                    share=share,
                    annotations={} if as_label else guard,
                    labels={**({"app": "x"} if draw(st.booleans()) else {}), **(guard if as_label else {})},
                )
            )
    budget = draw(st.sampled_from(["0", "1", "2", "10%", "50%", "100%"]))
    scheduled = draw(st.sampled_from([None, "active", "inactive"]))
    minimum = draw(st.sampled_from([None, ("64", "16Gi"), ("128", "32Gi"), ("256", "64Gi")]))
    warm = draw(st.sampled_from([None, ("16", "4Gi"), ("64", "16Gi"), ("128", "32Gi")]))
    allowed = draw(st.integers(0, 3))
    return {
        "nodes": nodes,
        "pods": pods,
        "budget": budget,
        "scheduled": scheduled,
        "min": minimum,
        "warm": warm,
        "pdb": allowed,
    }


def _gib(text: str) -> int:
    return int(text.removesuffix("Gi"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_consolidation_never_breaks_a_guard(world: dict[str, object]) -> None:
    nodes: list[WNode] = world["nodes"]  # type: ignore[assignment]
    pods: list[WPod] = world["pods"]  # type: ignore[assignment]
    compaction = {
        "policy": "WhenUnderutilized",
        "budgets": [{"nodes": world["budget"]}]
        + ([SCHEDULED[str(world["scheduled"])]] if world["scheduled"] else []),
        "savingsThreshold": "0",
    }
    snap, gpus = build(nodes, pods, compaction=compaction, min_=world["min"], warm=world["warm"])  # type: ignore[arg-type]
    pdb = DisruptionAllowance("default", "x", LabelSelector(match_labels={"app": "x"}), world["pdb"])  # type: ignore[arg-type]
    choice, _reasons = select_consolidation(snap, gpus, pdbs=(pdb,), now=NOW, protection=timedelta(minutes=5))
    event("drained a node" if choice else "drained nothing")
    if choice is None:
        return
    by_name = {n.name: n for n in nodes}
    drained = by_name[choice.node]
    residents = [p for p in pods if p.node == choice.node]
    # do-not-disrupt (node, GPUNode, pods), age, cordon
    assert DND not in drained.labels and DND not in drained.gpu_node_labels and not drained.unschedulable
    assert drained.age >= timedelta(minutes=5)
    assert not any(key in {**p.annotations, **p.labels} for p in residents for key in POD_GUARDS)
    # the PodDisruptionBudget
    assert sum(1 for p in residents if p.labels.get("app") == "x") <= world["pdb"]  # type: ignore[operator]
    # the disruption budget: cordoned nodes are disrupting
    disrupting = sum(1 for n in nodes if n.unschedulable)
    budget = str(world["budget"])
    limit = math.ceil(len(nodes) * int(budget[:-1]) / 100) if budget.endswith("%") else int(budget)
    assert limit - disrupting >= 1
    assert world["scheduled"] != "active", "drained inside a scheduled window of no disruption"
    # min and warm, in TFLOPS and VRAM
    counted = list(nodes)
    total_t = sum(n.gpus for n in counted) * TFLOPS
    used = sum(p.share * len(p.gpus) for p in pods)
    after_gpus = sum(n.gpus for n in counted) - drained.gpus
    if world["min"] is not None:
        t, v = world["min"]  # type: ignore[misc]
        assert after_gpus * TFLOPS >= int(t) and after_gpus * VRAM_GIB >= _gib(v)
    if world["warm"] is not None:
        t, v = world["warm"]  # type: ignore[misc]
        free_after = after_gpus - used
        assert free_after * TFLOPS >= int(t) and free_after * VRAM_GIB >= _gib(v)
    assert total_t > 0
    # every move lands on GPUs that hold it, on a node that may take it
    free = {(n.name, i): Fraction(1) for n in nodes for i in range(n.gpus)}
    for p in pods:
        for i in p.gpus:
            free[(p.node, i)] -= p.share
    by_pod = {f"default/{p.name}": p for p in residents}
    assert {m.pod for m in choice.moves} == set(by_pod)
    for move in choice.moves:
        target = by_name[move.node]
        assert move.node != choice.node and not target.unschedulable
        pod = by_pod[move.pod]
        assert len(move.gpus) == len(pod.gpus)
        for gpu in move.gpus:
            index = next(i for i in range(target.gpus) if gpu_name(target.name, i) == gpu)
            free[(target.name, index)] -= pod.share
            assert free[(target.name, index)] >= 0, f"{move.pod} overfills {gpu}"
