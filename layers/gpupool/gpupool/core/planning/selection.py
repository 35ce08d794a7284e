"""The selection's vocabulary: candidates, selections and the exact order of objectives.

Role: integer candidates (TFLOPS, VRAM, price units), a chosen multiset with its totals, the
coverage measure, and the one key that orders selections — most coverage, then least cost, then
fewest nodes, then the sorted candidate names. Shared by the search (`search`), the
entry point (`cheapest`), the MILP accelerator and the reference solvers.

Must not: search, solve or know about pools; it only describes and compares selections.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "UNBOUNDED",
    "Candidate",
    "Selection",
    "alone_cost",
    "build_selection",
    "ceil_div",
    "coverage",
    "distinct_sizes",
    "order_key",
]

UNBOUNDED = 1 << 62


@dataclass(frozen=True, slots=True)
class Candidate:
    """One offering as the solver sees it: sizes and price in integer units (e.g. mTFLOPS, MiB, µUSD)."""

    name: str
    tflops: int
    vram: int
    price: int

    def __post_init__(self) -> None:
        if self.tflops <= 0 or self.vram <= 0 or self.price <= 0:
            raise ValueError(f"candidate {self.name} needs positive size and price")


@dataclass(frozen=True, slots=True)
class Selection:
    """Chosen counts (positive only, by name) with their totals."""

    counts: tuple[tuple[Candidate, int], ...]
    tflops: int
    vram: int
    cost: int
    nodes: int
    covers_need: bool
    need: tuple[int, int] = (0, 0)
    proven_optimal: bool = True

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(c.name for c, n in self.counts for _ in range(n)))


def coverage(tflops: int, vram: int, need_t: int, need_v: int) -> int:
    """Σ_d min(offered_d, need_d) / need_d, scaled by need_t × need_v to stay an integer."""
    scale_t, scale_v = max(need_t, 1), max(need_v, 1)
    covered_t = min(tflops, need_t) if need_t else 1
    covered_v = min(vram, need_v) if need_v else 1
    return covered_t * scale_v + covered_v * scale_t


def build_selection(
    items: Sequence[Candidate], counts: Sequence[int], need_t: int, need_v: int, *, proven: bool = True
) -> Selection:
    chosen = tuple(sorted(((c, n) for c, n in zip(items, counts, strict=True) if n), key=lambda p: p[0].name))
    tflops = sum(c.tflops * n for c, n in chosen)
    vram = sum(c.vram * n for c, n in chosen)
    return Selection(
        counts=chosen,
        tflops=tflops,
        vram=vram,
        cost=sum(c.price * n for c, n in chosen),
        nodes=sum(n for _, n in chosen),
        covers_need=tflops >= need_t and vram >= need_v,
        need=(need_t, need_v),
        proven_optimal=proven,
    )


def order_key(selection: Selection) -> tuple[int, int, int, tuple[str, ...]]:
    """The selection's order of objectives as one exact key (smaller is better)."""
    reached = coverage(selection.tflops, selection.vram, *selection.need)
    return (-reached, selection.cost, selection.nodes, selection.names())


def distinct_sizes(candidates: Sequence[Candidate]) -> list[Candidate]:
    """One candidate per (TFLOPS, VRAM): the cheapest, then the first-named (no tie-break can
    prefer another of the same size)."""
    best: dict[tuple[int, int], Candidate] = {}
    for c in candidates:
        kept = best.get((c.tflops, c.vram))
        if kept is None or (c.price, c.name) < (kept.price, kept.name):
            best[(c.tflops, c.vram)] = c
    return list(best.values())


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def alone_cost(c: Candidate, need_t: int, need_v: int) -> int:
    return c.price * max(ceil_div(need_t, c.tflops), ceil_div(need_v, c.vram), 1)
