"""Exact choice of the cheapest multiset of offerings that covers a capacity gap.

Role: given candidates (each with integer TFLOPS, VRAM and hourly price units), a need and a
headroom (what maxResources still allows), pick counts minimising, in this order:
1. the uncovered part of the need (0 whenever a full cover fits under the headroom; otherwise
   "fill what max allows": maximise Σ_d min(offered_d, need_d) / need_d),
2. the hourly cost, 3. the number of nodes, 4. the sorted candidate names (a stable tie-break).
Offered capacity never exceeds the headroom and the node count never exceeds `max_nodes`.

Method: branch and bound (`search`) over candidates of distinct sizes, ordered by their
reduced price against the root LP's optimal dual. A short first pass finds a plan; reduced-cost
fixing drops the candidates that cannot beat it and the search restarts on the rest. A search
that outgrows PURE_SEARCH_BUDGET goes to the HiGHS MILP (`milp`) for the coverage and
cost stages; the MILP's plan then seeds the pure search again, which, knowing the optimal cost,
only enumerates equal plans and settles the node and name tie-breaks exactly (and proves the
optimum in exact integers). Only when that seeded search also outgrows NAME_SEARCH_BUDGET does
HiGHS settle the names (approximately, by weights). Pure Python but for the optional HiGHS, so
the Lambda layer stays small. `benchmarks/reference` holds the checks the tests and benchmark use.

Must not: know about pools, catalogs or clouds (see `capacity_plan`), read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpupool.core.planning.bound import node_price
from gpupool.core.planning.fill import fill_exactly, small_enough
from gpupool.core.planning.milp import MilpPlan, milp_available, solve_by_milp
from gpupool.core.planning.search import BranchAndBound, reduced_cost_order
from gpupool.core.planning.selection import (
    UNBOUNDED,
    Candidate,
    Selection,
    build_selection,
    distinct_sizes,
    order_key,
)

__all__ = ["DEFAULT_MAX_NODES", "Candidate", "Selection", "select_cheapest"]


DEFAULT_MAX_NODES = 100
# Nodes the pure search may visit before the MILP accelerator takes over (when installed), and
# before it gives up without one, returning its best plan marked not proven optimal.
PURE_SEARCH_BUDGET = 2_000
# The first pass searches the FIRST_PASS_CANDIDATES first candidates (nearest the LP optimum)
# for at most FIRST_PASS_BUDGET nodes; its plan lets reduced-cost fixing drop candidates.
FIRST_PASS_CANDIDATES = 4
FIRST_PASS_BUDGET = 400
# Nodes of the pure search seeded with the MILP's plan (tie-breaks among optimal plans).
NAME_SEARCH_BUDGET = 8_000
# Nodes of the targeted searches that settle "fill what max allows" exactly (fill).
FILL_SEARCH_BUDGET = 50_000
UNACCELERATED_SEARCH_BUDGET = 2_000_000


def _settle_ties(search: BranchAndBound, plan: MilpPlan, name_budget: int) -> Selection:
    """Seed the pure search with the MILP's plan and let it finish exactly; else HiGHS's names."""
    need_t, need_v = search.need_t, search.need_v
    search.seed(plan.counts)  # the better of both plans by exact integers
    if search.covers():
        seeded = search.narrowed(name_budget)
        if seeded.finish():
            return seeded.result()
    named = build_selection(search.items, plan.prefer_earlier_names(), need_t, need_v)
    return min(named, search.result(), key=order_key)


def select_cheapest(
    candidates: Sequence[Candidate],
    *,
    need_tflops: int,
    need_vram: int,
    cap_tflops: int | None = None,
    cap_vram: int | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    accelerate: bool = True,
    pure_budget: int | None = None,
    name_budget: int | None = None,
    fill_budget: int | None = None,
) -> Selection:
    """The exact best selection (see the module docstring for the order of objectives).

    A search that outgrows PURE_SEARCH_BUDGET nodes is finished by the HiGHS MILP in
    `milp` when `accelerate` and highspy is installed, else by the pure search with
    UNACCELERATED_SEARCH_BUDGET nodes. If neither proves the optimum, the best plan found is
    returned with `proven_optimal=False` (the planner reports it as a reason). `pure_budget` and
    `name_budget` override PURE_SEARCH_BUDGET and NAME_SEARCH_BUDGET (tests use 0 to exercise the
    MILP path and its name stage).
    """
    need_t, need_v = max(need_tflops, 0), max(need_vram, 0)
    cap_t = UNBOUNDED if cap_tflops is None else max(cap_tflops, 0)
    cap_v = UNBOUNDED if cap_vram is None else max(cap_vram, 0)
    if max_nodes < 0:
        raise ValueError("max_nodes must not be negative")
    if (need_t == 0 and need_v == 0) or not candidates:
        return build_selection([], [], need_t, need_v)
    distinct = distinct_sizes(candidates)
    lam = node_price([(c.tflops, c.vram, c.price) for c in distinct], (need_t, need_v), max_nodes)
    items = reduced_cost_order(distinct, (need_t, need_v), lam)
    budget = PURE_SEARCH_BUDGET if pure_budget is None else pure_budget
    limits = ((need_t, need_v), (cap_t, cap_v), max_nodes)
    # First pass: the best plan from the few candidates nearest the LP optimum (a short search).
    first = BranchAndBound(items[:FIRST_PASS_CANDIDATES], *limits, min(budget, FIRST_PASS_BUDGET), lam)
    if first.finish() and len(items) <= FIRST_PASS_CANDIDATES:
        return first.result()
    search = BranchAndBound(items, *limits, 0, lam)
    if first.best_counts:
        search.seed(first.best_counts + [0] * (len(items) - len(first.items)))
    # Drop candidates that cannot beat that plan, then search all the rest from it.
    search = search.narrowed(max(budget - FIRST_PASS_BUDGET, 0))
    if search.finish():
        return search.result()
    if fill_budget is None:
        fill_budget = FILL_SEARCH_BUDGET
    if (
        fill_budget
        and not search.covers()
        and max(cap_t, cap_v) < UNBOUNDED
        and small_enough(items, cap_t, cap_v)
    ):
        filled = fill_exactly(items, (need_t, need_v), (cap_t, cap_v), max_nodes, fill_budget)
        if filled is not None:
            return filled
    if accelerate and milp_available():
        plan = solve_by_milp(search.items, need=(need_t, need_v), cap=(cap_t, cap_v), max_nodes=max_nodes)
        if plan is not None:
            return _settle_ties(search, plan, NAME_SEARCH_BUDGET if name_budget is None else name_budget)
    else:
        search.budget = UNACCELERATED_SEARCH_BUDGET
        if search.finish():
            return search.result()
    return search.result(proven=False)
