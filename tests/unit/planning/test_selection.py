"""Exact offering selection: equal to brute-force enumeration (cost, coverage and every tie-break)
on many seeded and generated small cases, through the pure search and through the MILP path;
never past the headroom or the node limit; mixing types when that is cheaper than one type × N."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.reference.enumeration import select_by_enumeration
from benchmarks.reference.problem import Answer
from benchmarks.reference.single_type import select_single_type
from gpupool.core.planning.cheapest import Candidate, Selection, select_cheapest
from gpupool.core.planning.milp import milp_available


def _case(rng: random.Random) -> tuple[list[Candidate], dict[str, int | None], int]:
    count = rng.randint(1, 4)
    candidates = [
        Candidate(f"c{i}", rng.randint(1, 10) * 10, rng.randint(1, 10) * 8, rng.randint(1, 20))
        for i in range(count)
    ]
    limits: dict[str, int | None] = {
        "need_tflops": rng.randint(0, 150),
        "need_vram": rng.randint(0, 120),
        "cap_tflops": rng.choice([None, rng.randint(10, 200)]),
        "cap_vram": rng.choice([None, rng.randint(8, 160)]),
    }
    return candidates, limits, rng.randint(0, 5)


def _same(found: Selection, expected: Answer, candidates: list[Candidate]) -> None:
    """The planner's selection equals the reference's answer, count by count (names are unique)."""
    named = {c.name: n for c, n in zip(candidates, expected.counts, strict=True) if n}
    assert ({c.name: n for c, n in found.counts}, found.cost, found.nodes, found.tflops, found.vram) == (
        named,
        expected.cost,
        expected.nodes,
        expected.tflops,
        expected.vram,
    )


def _within(found: Selection, limits: dict[str, int | None], max_nodes: int) -> None:
    assert found.nodes <= max_nodes
    if limits["cap_tflops"] is not None:
        assert found.tflops <= limits["cap_tflops"]
    if limits["cap_vram"] is not None:
        assert found.vram <= limits["cap_vram"]


@pytest.mark.parametrize("seed", range(8))
def test_pure_search_equals_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        candidates, limits, max_nodes = _case(rng)
        expected = select_by_enumeration(candidates, **limits, max_nodes=max_nodes)  # type: ignore[arg-type]
        found = select_cheapest(candidates, **limits, max_nodes=max_nodes, accelerate=False)  # type: ignore[arg-type]
        _same(found, expected, candidates)
        _within(found, limits, max_nodes)
        assert found.proven_optimal


@pytest.mark.skipif(not milp_available(), reason="highspy not installed")
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name_budget", [None, 0], ids=["seeded-pure-names", "highs-names"])
def test_milp_path_equals_brute_force(seed: int, name_budget: int | None) -> None:
    """The MILP's plan, with ties settled by the seeded pure search or by HiGHS's name stage."""
    rng = random.Random(1000 + seed)
    for _ in range(40):
        candidates, limits, max_nodes = _case(rng)
        expected = select_by_enumeration(candidates, **limits, max_nodes=max_nodes)  # type: ignore[arg-type]
        found = select_cheapest(
            candidates,
            **limits,  # type: ignore[arg-type]
            max_nodes=max_nodes,
            pure_budget=0,
            name_budget=name_budget,
            fill_budget=0,
        )
        _same(found, expected, candidates)
        _within(found, limits, max_nodes)


@pytest.mark.parametrize("seed", range(6))
def test_fill_path_equals_brute_force(seed: int) -> None:
    """Reachability tables and targeted searches ("fill what max allows"), with both caps set."""
    rng = random.Random(2000 + seed)
    for _ in range(60):
        candidates, limits, max_nodes = _case(rng)
        limits["cap_tflops"] = limits["cap_tflops"] or rng.randint(0, 200)
        limits["cap_vram"] = limits["cap_vram"] or rng.randint(0, 160)
        expected = select_by_enumeration(candidates, **limits, max_nodes=max_nodes)  # type: ignore[arg-type]
        found = select_cheapest(
            candidates,
            **limits,  # type: ignore[arg-type]
            max_nodes=max_nodes,
            pure_budget=0,
            accelerate=False,
        )
        _same(found, expected, candidates)
        _within(found, limits, max_nodes)
        assert found.proven_optimal


sizes = st.tuples(st.integers(1, 12), st.integers(1, 12), st.integers(1, 30))


@settings(max_examples=150, deadline=None)
@given(
    specs=st.lists(sizes, min_size=1, max_size=3),
    need=st.tuples(st.integers(0, 60), st.integers(0, 60)),
    caps=st.tuples(st.none() | st.integers(0, 70), st.none() | st.integers(0, 70)),
    max_nodes=st.integers(0, 6),
)
def test_generated_cases_equal_brute_force(
    specs: list[tuple[int, int, int]],
    need: tuple[int, int],
    caps: tuple[int | None, int | None],
    max_nodes: int,
) -> None:
    candidates = [Candidate(f"t{i}", t, v, p) for i, (t, v, p) in enumerate(specs)]
    limits = {"need_tflops": need[0], "need_vram": need[1], "cap_tflops": caps[0], "cap_vram": caps[1]}
    expected = select_by_enumeration(candidates, **limits, max_nodes=max_nodes)  # type: ignore[arg-type]
    found = select_cheapest(candidates, **limits, max_nodes=max_nodes, accelerate=False)  # type: ignore[arg-type]
    _same(found, expected, candidates)


T4 = Candidate("g4dn.xlarge", 65, 16, 526)
A10G = Candidate("g5.xlarge", 125, 24, 1006)
BIG = Candidate("g4dn.12xlarge", 260, 64, 3912)


def test_mixing_types_beats_one_type_times_n() -> None:
    # 190 TFLOPS: 3 × T4 = 195 for 1578; 2 × A10G for 2012; T4 + A10G = 190 for 1532.
    mixed = select_cheapest([T4, A10G, BIG], need_tflops=190, need_vram=40)
    single = select_single_type([T4, A10G, BIG], need_tflops=190, need_vram=40)
    assert single is not None and single.cost == 1578
    assert mixed.cost == 1532 and {c.name: n for c, n in mixed.counts} == {"g4dn.xlarge": 1, "g5.xlarge": 1}


def test_never_past_the_headroom_fill_what_it_allows() -> None:
    found = select_cheapest([T4, A10G], need_tflops=400, need_vram=100, cap_tflops=200, cap_vram=64)
    assert not found.covers_need and found.tflops <= 200 and found.vram <= 64
    assert found.nodes > 0  # something fits, so something is planned


def test_node_limit_is_respected_and_configurable() -> None:
    found = select_cheapest([T4], need_tflops=65 * 10, need_vram=0, max_nodes=4)
    assert found.nodes == 4 and not found.covers_need
    assert select_cheapest([T4], need_tflops=65 * 10, need_vram=0).nodes == 10


def test_ties_prefer_fewer_nodes_then_names() -> None:
    one_big = Candidate("b-big", 20, 20, 10)
    two_small = Candidate("a-small", 10, 10, 5)
    assert select_cheapest([two_small, one_big], need_tflops=20, need_vram=20).names() == ("b-big",)
    twin_a, twin_b = Candidate("x", 10, 10, 5), Candidate("y", 10, 10, 5)
    assert select_cheapest([twin_b, twin_a], need_tflops=10, need_vram=10).names() == ("x",)


def test_nothing_to_do() -> None:
    assert select_cheapest([T4], need_tflops=0, need_vram=0).nodes == 0
    assert select_cheapest([], need_tflops=10, need_vram=10).nodes == 0
    assert select_single_type([T4], need_tflops=65 * 200, need_vram=0) is None  # over 100 nodes


def test_candidates_need_positive_size_and_price() -> None:
    with pytest.raises(ValueError, match="positive"):
        Candidate("free", 65, 16, 0)


SCRIPT = """
import highspy
from gpupool.core.planning.cheapest import Candidate, select_cheapest
other = highspy.Highs()
other.silent()
other.setOptionValue("threads", 2)
x = other.addIntegral(lb=0, ub=5)
other.minimize(x)
items = [Candidate("a", 10, 10, 5), Candidate("b", 7, 3, 2), Candidate("c", 4, 9, 3)]
found = select_cheapest(items, need_tflops=30, need_vram=20, pure_budget=0)
print(found.cost, found.proven_optimal)
"""


@pytest.mark.skipif(not milp_available(), reason="highspy not installed")
def test_milp_path_works_after_another_highs_model_set_up_the_thread_pool() -> None:
    """HiGHS refuses a thread count that differs from the process's pool; the accelerator adapts."""
    import subprocess
    import sys

    items = [Candidate("a", 10, 10, 5), Candidate("b", 7, 3, 2), Candidate("c", 4, 9, 3)]
    expected = select_by_enumeration(items, need_tflops=30, need_vram=20, max_nodes=8)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == [str(expected.cost), "True"]
