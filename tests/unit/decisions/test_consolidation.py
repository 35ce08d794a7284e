"""plan_consolidation table tests: which under-used node is drained, and every guard that keeps one.

Covers: opt-in (WhenEmpty plans nothing), the allocator's fit (two half-used nodes become one;
a worker that fits no other GPU keeps its node; QoS-free GPU count and isolation through the
allocator), do-not-disrupt on node, GPUNode and pod, PodDisruptionBudgets, min and warm, the
budgets (count, percent, schedule), the savings threshold, claims in flight, the protection
window, AutoSelect's hand-off to Karpenter (drain, then should-delete; a node no NodePool owns left
alone), and the actions in order.
"""

from __future__ import annotations

from datetime import timedelta
from fractions import Fraction

import pytest

from gpupool.core.decisions.consolidation import (
    DisruptionAllowance,
    plan_consolidation,
    select_consolidation,
    selector_matches,
)
from gpupool.core.model.common import LabelSelector
from gpupool.core.planning.plan import CordonNode, DeleteClaim, DrainNode, LabelNode, RecordEvent
from tests.unit.decisions.builders import NOW, pool
from tests.unit.decisions.consolidation_world import UNDER, WNode, WPod, build

PROTECTION = timedelta(minutes=5)
HALF = Fraction(1, 2)


def _two_half_used(**pod_overrides: object) -> tuple[list[WNode], list[WPod]]:
    nodes = [WNode("n-a", price="0.9"), WNode("n-b", price="0.5")]
    pods = [WPod("p-a", "n-a", **pod_overrides), WPod("p-b", "n-b")]  # type: ignore[arg-type]
    return nodes, pods


def _choose(nodes: list[WNode], pods: list[WPod], **kwargs: object) -> tuple[str | None, list[str]]:
    compaction = kwargs.pop("compaction", UNDER)
    pdbs = kwargs.pop("pdbs", ())
    snap, gpus = build(nodes, pods, compaction=compaction, **kwargs)  # type: ignore[arg-type]
    choice, reasons = select_consolidation(snap, gpus, pdbs=pdbs, now=NOW, protection=PROTECTION)  # type: ignore[arg-type]
    return (choice.node if choice else None), reasons


def test_two_half_used_nodes_become_one_the_dearer_drained() -> None:
    nodes, pods = _two_half_used()
    snap, gpus = build(nodes, pods, compaction=UNDER)
    plan = plan_consolidation(snap, gpus, now=NOW, protection=PROTECTION)
    kinds = [type(a) for a in plan.actions]
    assert kinds == [CordonNode, DrainNode, DeleteClaim, RecordEvent]
    assert {a.node for a in plan.actions if hasattr(a, "node")} == {"n-a"}
    assert any("fit the free GPUs of n-b" in r for r in plan.reasons)


def test_when_empty_policy_never_consolidates() -> None:
    nodes, pods = _two_half_used()
    assert _choose(nodes, pods, compaction={"policy": "WhenEmpty"})[0] is None
    assert _choose(nodes, pods, compaction=None)[0] is None


def test_a_worker_that_fits_no_other_gpu_keeps_its_node() -> None:
    # n-b has a whole GPU free in all, but in two halves: n-a's three quarters fit neither.
    nodes = [WNode("n-a"), WNode("n-b", gpus=2)]
    pods = [
        WPod("p-a", "n-a", share=Fraction(3, 4)),
        WPod("p-b0", "n-b", gpus=(0,), share=HALF),
        WPod("p-b1", "n-b", gpus=(1,), share=HALF),
    ]
    chosen, reasons = _choose(nodes, pods)
    assert chosen is None
    assert any(r.startswith("node n-a") and "fits no other node" in r for r in reasons)


def test_multi_gpu_worker_needs_that_many_gpus_on_one_node() -> None:
    nodes = [WNode("n-a", gpus=2, price="2"), WNode("n-b", gpus=2), WNode("n-c", gpus=2)]
    pods = [
        WPod("p-two", "n-a", gpus=(0, 1), share=Fraction(1)),
        WPod("p-b", "n-b", gpus=(0,), share=Fraction(1, 4)),
        WPod("p-c", "n-c", gpus=(0,), share=Fraction(1, 4)),
    ]
    chosen, _ = _choose(nodes, pods)
    # n-a's worker needs two whole GPUs on one node: nowhere; n-b's quarter fits n-c (and back).
    assert chosen in ("n-b", "n-c")


@pytest.mark.parametrize(
    ("where", "key"),
    [
        ("node", "tensor-fusion.ai/do-not-disrupt"),
        ("pod", "tensor-fusion.ai/do-not-disrupt"),
        ("pod", "karpenter.sh/do-not-disrupt"),
    ],
)
def test_do_not_disrupt_keeps_the_node(where: str, key: str) -> None:
    nodes = [
        WNode("n-a", price="0.9", labels={key: "true"} if where == "node" else {}),
        WNode("n-b", price="0.5"),
    ]
    pods = [WPod("p-a", "n-a", annotations={key: "true"} if where == "pod" else {}), WPod("p-b", "n-b")]
    chosen, reasons = _choose(nodes, pods)
    assert chosen == "n-b"  # the other one still may move
    assert any("n-a" in r and "do-not-disrupt" in r for r in reasons)


def test_a_pod_disruption_budget_with_no_room_keeps_the_node() -> None:
    nodes, pods = _two_half_used(labels={"app": "x"})
    pdb = DisruptionAllowance("default", "x", LabelSelector(match_labels={"app": "x"}), 0)
    chosen, reasons = _choose(nodes, pods, pdbs=(pdb,))
    assert chosen == "n-b"
    assert any("PodDisruptionBudget default/x allows 0" in r for r in reasons)
    roomy = DisruptionAllowance("default", "x", LabelSelector(match_labels={"app": "x"}), 1)
    assert _choose(nodes, pods, pdbs=(roomy,))[0] == "n-a"


def test_min_and_warm_hold_after_the_move() -> None:
    nodes, pods = _two_half_used()
    # Two nodes of 64 TFLOPS; min 128 leaves no room to remove one.
    assert _choose(nodes, pods, min_=("128", "16Gi"))[0] is None
    # Available is 64 now; removing a node leaves 0 available: warm 32 refuses.
    chosen, reasons = _choose(nodes, pods, warm=("32", "1Gi"))
    assert chosen is None
    assert any("available tflops would drop" in r for r in reasons)


def test_budget_zero_or_scheduled_window_blocks() -> None:
    nodes, pods = _two_half_used()
    blocked = {"policy": "WhenUnderutilized", "budgets": [{"nodes": "0"}]}
    chosen, reasons = _choose(nodes, pods, compaction=blocked)
    assert chosen is None and any("budget nodes 0" in r for r in reasons)
    # NOW is 12:00 UTC: a zero budget from 11:00 for 2h is active, one from 13:00 is not.
    active = {
        "policy": "WhenUnderutilized",
        "budgets": [{"nodes": "0", "schedule": "0 11 * * *", "duration": "2h"}],
    }
    later = {
        "policy": "WhenUnderutilized",
        "budgets": [{"nodes": "0", "schedule": "0 13 * * *", "duration": "2h"}],
    }
    assert _choose(nodes, pods, compaction=active)[0] is None
    assert _choose(nodes, pods, compaction=later)[0] == "n-a"


def test_nodes_already_disrupting_use_the_budget() -> None:
    nodes = [WNode("n-a", price="0.9"), WNode("n-b", price="0.5"), WNode("n-c", unschedulable=True)]
    pods = [WPod("p-a", "n-a"), WPod("p-b", "n-b")]
    one = {"policy": "WhenUnderutilized", "budgets": [{"nodes": "1"}]}
    chosen, reasons = _choose(nodes, pods, compaction=one)
    assert chosen is None and any("1 disrupting: 0 more" in r for r in reasons)
    # The default budget (10 % of 3 nodes, rounded up: 1) is used up the same way.
    assert _choose(nodes, pods, compaction={"policy": "WhenUnderutilized"})[0] is None


def test_a_cordoned_node_counts_once_in_the_pool_a_percentage_is_of() -> None:
    # 4 nodes, 50 %: 2 may be disrupting; 2 are cordoned already, so none more. Counting the
    # cordoned ones twice (6 nodes: 3) let a third go — found by the property test.
    nodes = [
        WNode("n-a", price="0.9"),
        WNode("n-b", price="0.5"),
        WNode("n-c", unschedulable=True),
        WNode("n-d", unschedulable=True),
    ]
    pods = [WPod("p-a", "n-a"), WPod("p-b", "n-b")]
    half = {"policy": "WhenUnderutilized", "budgets": [{"nodes": "50%"}]}
    chosen, reasons = _choose(nodes, pods, compaction=half)
    assert chosen is None and any("consolidation waits" in r for r in reasons)
    three = [*nodes[:3], WNode("n-e"), WNode("n-f")]  # 5 nodes, 50 % → 3, 1 cordoned: 2 more
    assert _choose(three, pods, compaction=half)[0] == "n-a"


def test_the_saving_must_pass_the_threshold() -> None:
    nodes, pods = _two_half_used()
    dear = {**UNDER, "savingsThreshold": "5", "consolidationWindow": "1h"}
    chosen, reasons = _choose(nodes, pods, compaction=dear)
    assert chosen is None and any("not above the threshold $5" in r for r in reasons)
    longer = {**UNDER, "savingsThreshold": "5", "consolidationWindow": "10h"}
    assert _choose(nodes, pods, compaction=longer)[0] == "n-a"


def test_in_flight_claims_and_young_nodes_wait() -> None:
    nodes, pods = _two_half_used()
    chosen, reasons = _choose([*nodes, WNode("n-new", phase="Creating")], pods)
    assert chosen is None and any("in flight" in r for r in reasons)
    young = [WNode("n-a", price="0.9", age=timedelta(minutes=2)), WNode("n-b", price="0.5")]
    assert _choose(young, pods)[0] == "n-b"


def test_isolation_is_the_allocators() -> None:
    # A hard-isolated worker may not share a GPU: the other node's half-used GPU cannot take it.
    nodes, pods = _two_half_used(annotations={"tensor-fusion.ai/isolation": "hard"})
    chosen, _ = _choose(nodes, pods)
    assert chosen != "n-a"


def test_autoselect_drains_a_karpenter_node_and_leaves_its_removal_to_karpenter() -> None:
    owned = {"karpenter.sh/nodepool": "gpu"}
    nodes = [WNode("n-a", price="0.9", labels=owned), WNode("n-b", price="0.5", labels=owned)]
    pods = [WPod("p-a", "n-a"), WPod("p-b", "n-b")]
    snap, gpus = build(nodes, pods, the_pool=pool(min_=None, mode="AutoSelect"), compaction=UNDER)
    plan = plan_consolidation(snap, gpus, now=NOW, protection=PROTECTION)
    assert [a.kind for a in plan.actions] == ["cordon-node", "drain-node", "label-node", "record-event"]
    label = plan.actions[2]
    assert isinstance(label, LabelNode) and label.node == "n-a"
    assert label.labels == {"tensor-fusion.ai/should-delete": "true"}, "Karpenter removes it once empty"
    assert not any(isinstance(a, DeleteClaim) for a in plan.actions), "no claim: Karpenter owns the node"


def test_autoselect_leaves_a_node_no_nodepool_owns() -> None:
    nodes, pods = _two_half_used()
    snap, gpus = build(nodes, pods, the_pool=pool(min_=None, mode="AutoSelect"), compaction=UNDER)
    plan = plan_consolidation(snap, gpus, now=NOW, protection=PROTECTION)
    assert plan.actions == ()
    assert any("no Karpenter NodePool owns it" in r for r in plan.reasons)


def test_selector_matches_expressions() -> None:
    sel = LabelSelector.model_validate(
        {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "NotIn", "values": ["x"]}]}
    )
    assert selector_matches(sel, {"a": "1"})
    assert not selector_matches(sel, {"a": "1", "b": "x"})
    assert selector_matches(LabelSelector(), {})


def test_a_pdb_selectors_expressions_read_as_kubernetes_reads_them() -> None:
    """In, NotIn, Exists, DoesNotExist on a present and an absent label (labels.Selector's table)."""
    cases = [
        ("In", ["x", "y"], {"b": "y"}, True),
        ("In", ["x"], {"b": "z"}, False),
        ("In", ["x"], {}, False),
        ("NotIn", ["x"], {}, True),
        ("NotIn", ["x"], {"b": "y"}, True),
        ("Exists", [], {"b": ""}, True),
        ("Exists", [], {}, False),
        ("DoesNotExist", [], {}, True),
        ("DoesNotExist", [], {"b": "x"}, False),
    ]
    for operator, values, labels, selected in cases:
        sel = LabelSelector.model_validate(
            {"matchExpressions": [{"key": "b", "operator": operator, "values": values}]}
        )
        assert selector_matches(sel, labels) is selected, (operator, values, labels)
