"""The selection is deterministic: 50 hard cases give the same plans on an idle and a loaded machine.

Hard means HiGHS decides: 40 distinct offerings shaped like GPU instances with near-equal unit
prices, solved with the pure search's budgets at 0 so the coverage, cost and name stages all run
in HiGHS; 6 of the 50 are clipped by max ("fill what max allows": HiGHS's coverage stage).
The first pass runs as the tests run; the second runs while busy processes (one per CPU, plus
one) compete for every core. HiGHS works under node limits and one thread, never a wall-clock
limit, so both passes must return the same counts, cost and proof flag, case by case.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gpupool.core.planning.cheapest import select_cheapest
from gpupool.core.planning.selection import Candidate

pytestmark = pytest.mark.slow
OFFERINGS = 40
Case = tuple[list[Candidate], dict[str, Any], dict[str, int]]


def hard_cases(seed: int = 20261201) -> list[Case]:
    rng = random.Random(seed)
    cases: list[Case] = []
    for index in range(50):
        clipped = index % 8 == 7
        candidates = []
        for i in range(OFFERINGS):
            gpus = rng.choice([1, 1, 1, 2, 4, 8])
            tflops = rng.choice([65, 121, 125, 312, 362, 989])
            vram = rng.choice([16, 24, 32, 40, 48, 80, 141])
            price = int(tflops * gpus * rng.uniform(0.006, 0.0065) * 10**6)  # near-equal unit prices
            candidates.append(Candidate(f"offering-{i:03d}", tflops * gpus * 1000, vram * gpus * 1024, price))
        need_t, need_v = rng.randint(65, 4000) * 1000, rng.randint(16, 800) * 1024
        units: dict[str, Any] = {"need_tflops": need_t, "need_vram": need_v}
        if clipped:
            units |= {"cap_tflops": int(need_t * rng.uniform(0.5, 1.0)), "cap_vram": int(need_v * 0.9)}
        cases.append((candidates, units, {"pure_budget": 0, "name_budget": 0, "fill_budget": 0}))
    return cases


def solve_all(cases: list[Case]) -> list[tuple[tuple[str, ...], int, bool]]:
    plans = []
    for candidates, units, budgets in cases:
        found = select_cheapest(candidates, **units, **budgets)
        plans.append((found.names(), found.cost, found.proven_optimal))
    return plans


@contextmanager
def cpu_load() -> Iterator[None]:
    """Busy processes on every core (and one more) for as long as the block runs."""
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range((os.cpu_count() or 2) + 1)
    ]
    try:
        yield
    finally:
        for process in busy:
            process.kill()
        for process in busy:
            process.wait(timeout=10)


def test_the_same_50_hard_cases_give_the_same_plans_under_cpu_load() -> None:
    cases = hard_cases()
    assert sum("cap_tflops" in units for _, units, _ in cases) == 6
    idle = solve_all(cases)
    with cpu_load():
        loaded = solve_all(cases)
    assert [plan[0] for plan in idle] != [()] * len(idle)
    for index, (first, second) in enumerate(zip(idle, loaded, strict=True)):
        assert first == second, f"case {index}: {first} != {second}"
