"""`benchmarks/plan_cost.py` fails in both directions, and its references check themselves.

A scenario passes when the plan equals the reference's proven optimum; a reference that claims
a worse optimum (so the plan "beats" it), a CP-SAT reference that does not reach OPTIMAL, a plan
worse than the optimum, and a plan past maxResources each fail the scenario. The enumeration,
CP-SAT and cover-DP references agree on small problems, and `violations` catches an answer past
a cap or the node limit.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from benchmarks import plan_cost
from benchmarks.plan_cost_scenarios import catalog_scenarios, small_scenarios
from benchmarks.reference.cover_dp import cheapest_cover
from benchmarks.reference.cpsat import ReferenceFailed, Solved, solve_exactly
from benchmarks.reference.enumeration import enumerate_best
from benchmarks.reference.problem import Answer, Problem, violations
from gpupool.core.planning.capacity_plan import CapacityPlan
from gpupool.core.planning.selection import Candidate

pytestmark = pytest.mark.slow


def _scenario() -> Any:
    """A catalog scenario without max, so any extra node only adds cost."""
    return next(s for s in catalog_scenarios(random.Random(3), 20) if s.cap is None)


def test_a_correct_plan_passes() -> None:
    row = plan_cost.check(_scenario())
    assert row.failures == [] and row.nodes > 0


def test_a_reference_worse_than_the_plan_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def worse(problem: Problem) -> Solved:
        solved = solve_exactly(problem)
        answer = solved.answer
        return replace(solved, answer=replace(answer, cost=answer.cost + 1))

    monkeypatch.setattr(plan_cost, "solve_exactly", worse)
    monkeypatch.setattr(plan_cost, "cheapest_cover", lambda problem: None)  # CP-SAT decides
    failures = plan_cost.check(_scenario()).failures
    assert any("the reference is wrong" in f for f in failures)


def test_a_reference_that_is_not_proven_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def unproven(problem: Problem) -> Solved:
        raise ReferenceFailed("CP-SAT stage ended FEASIBLE, not OPTIMAL")

    monkeypatch.setattr(plan_cost, "solve_exactly", unproven)
    monkeypatch.setattr(plan_cost, "cheapest_cover", lambda problem: None)
    assert any("not OPTIMAL" in f for f in plan_cost.check(_scenario()).failures)


def test_a_plan_worse_than_the_optimum_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    real = plan_cost.plan_capacity

    def dearer(*args: Any, **kwargs: Any) -> CapacityPlan:
        plan = real(*args, **kwargs)
        return replace(plan, offerings=(*plan.offerings, plan.offerings[0]))

    monkeypatch.setattr(plan_cost, "plan_capacity", dearer)
    failures = plan_cost.check(_scenario()).failures
    assert any("worse than the optimum" in f for f in failures)


def test_a_plan_past_max_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = next(s for s in catalog_scenarios(random.Random(5), 60) if s.cap is not None)
    real = plan_cost.plan_capacity

    def past_max(*args: Any, **kwargs: Any) -> CapacityPlan:
        plan = real(*args, **kwargs)
        biggest = max(scenario.offerings, key=lambda o: o.tflops)
        return replace(plan, offerings=(*plan.offerings, *[biggest] * 50))

    monkeypatch.setattr(plan_cost, "plan_capacity", past_max)
    assert any("past maxResources" in f for f in plan_cost.check(scenario).failures)


def test_enumeration_cp_sat_and_the_cover_dp_agree_on_small_problems() -> None:
    for scenario in small_scenarios(random.Random(11), 12):
        assert plan_cost.check(scenario).failures == []
    rng = random.Random(4)
    compared = 0
    for _ in range(40):
        items = [
            Candidate(f"c{i}", rng.randint(1, 9) * 10, rng.randint(1, 9) * 8, rng.randint(1, 30))
            for i in range(3)
        ]
        problem = Problem(items, rng.randint(0, 120), rng.randint(0, 90), rng.choice([None, 80]), None, 4)
        enumerated, solved = enumerate_best(problem), solve_exactly(problem).answer
        assert (enumerated.coverage, enumerated.cost) == (solved.coverage, solved.cost)
        assert violations(problem, solved) == [] and violations(problem, enumerated) == []
        covered = cheapest_cover(problem)
        if covered is not None:
            assert (covered.coverage, covered.cost) == (enumerated.coverage, enumerated.cost)
            compared += 1
    assert compared >= 10


def test_violations_name_what_an_answer_breaks() -> None:
    items = [Candidate("a", 10, 8, 5)]
    problem = Problem(items, 30, 20, cap_tflops=20, cap_vram=None, max_nodes=2)
    answer = Answer.of(problem, [3])
    found = violations(problem, answer)
    assert any("node limit" in v for v in found) and any("cap 20" in v for v in found)
    assert "totals do not add up to the counts" in violations(problem, replace(answer, cost=1))


def test_a_cover_dp_answer_worse_than_the_plan_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def worse(problem: Problem) -> Answer | None:
        answer = cheapest_cover(problem)
        assert answer is not None  # the scenario has no max: the DP decides
        return replace(answer, cost=answer.cost + 1)

    monkeypatch.setattr(plan_cost, "cheapest_cover", worse)
    row = plan_cost.check(_scenario())
    assert row.method == "DP" and any("the reference is wrong" in f for f in row.failures)
