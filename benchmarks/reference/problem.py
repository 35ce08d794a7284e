"""The selection problem as the reference solvers state it, with their own feasibility check.

Role: `Problem` (integer sizes and prices per item, the need, the caps — None for no max — and
the node limit), `Answer` (counts per item with their totals), `coverage` (Σ_d min(offered_d,
need_d) / need_d, scaled to an integer by need_t × need_v; a dimension with no need counts as
covered) and `violations` (what an answer breaks: negative counts, a cap, the node limit, or
totals that do not add up). Written for the benchmark and the tests: it imports nothing from
gpupool, so a mistake in the planner's arithmetic cannot hide in the check.

Must not: import gpupool, or be imported by it (the shipped package never needs it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Answer", "Item", "Problem", "coverage", "violations"]


class Item(Protocol):
    """Anything with a name, integer sizes and an integer price (the planner's Candidate fits)."""

    @property
    def name(self) -> str: ...
    @property
    def tflops(self) -> int: ...
    @property
    def vram(self) -> int: ...
    @property
    def price(self) -> int: ...


@dataclass(frozen=True)
class Problem:
    items: Sequence[Item]
    need_tflops: int
    need_vram: int
    cap_tflops: int | None = None
    cap_vram: int | None = None
    max_nodes: int = 100


@dataclass(frozen=True)
class Answer:
    """Counts in `items` order, with the totals they add up to."""

    counts: tuple[int, ...]
    tflops: int
    vram: int
    cost: int
    nodes: int
    coverage: int

    @classmethod
    def of(cls, problem: Problem, counts: Sequence[int]) -> Answer:
        items = problem.items
        tflops = sum(i.tflops * n for i, n in zip(items, counts, strict=True))
        vram = sum(i.vram * n for i, n in zip(items, counts, strict=True))
        return cls(
            counts=tuple(counts),
            tflops=tflops,
            vram=vram,
            cost=sum(i.price * n for i, n in zip(items, counts, strict=True)),
            nodes=sum(counts),
            coverage=coverage(tflops, vram, problem.need_tflops, problem.need_vram),
        )

    def named(self, problem: Problem) -> dict[str, int]:
        return {i.name: n for i, n in zip(problem.items, self.counts, strict=True) if n}


def coverage(tflops: int, vram: int, need_tflops: int, need_vram: int) -> int:
    """Σ_d min(offered_d, need_d) / need_d × need_t × need_v (an absent need counts as met)."""
    scale_t, scale_v = max(need_tflops, 1), max(need_vram, 1)
    met_t = min(tflops, need_tflops) if need_tflops > 0 else 1
    met_v = min(vram, need_vram) if need_vram > 0 else 1
    return met_t * scale_v + met_v * scale_t


def violations(problem: Problem, answer: Answer) -> list[str]:
    """Every way `answer` breaks the problem's limits or misstates its own totals."""
    found = []
    if len(answer.counts) != len(problem.items) or any(n < 0 for n in answer.counts):
        return ["counts do not match the items or are negative"]
    if Answer.of(problem, answer.counts) != answer:
        found.append("totals do not add up to the counts")
    if answer.nodes > problem.max_nodes:
        found.append(f"{answer.nodes} nodes > node limit {problem.max_nodes}")
    if problem.cap_tflops is not None and answer.tflops > problem.cap_tflops:
        found.append(f"{answer.tflops} mTFLOPS > cap {problem.cap_tflops}")
    if problem.cap_vram is not None and answer.vram > problem.cap_vram:
        found.append(f"{answer.vram} MiB > cap {problem.cap_vram}")
    return found
