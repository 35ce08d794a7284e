"""`gpupool status`'s drawing details: an idle GPU is drawn (`○`), never a blank, and each allocated
one by its share; costs are given per hour and per 30 days at that rate; piped, the output is as wide
as its widest line (nothing cut at 80 columns), on a terminal as wide as the terminal; a price names
where it came from (live and its age, or the catalog)."""

from __future__ import annotations

import io

from rich.text import Text

from gpupool.cli.status_render import _cost, _gpu_mark, console_for, price_from
from gpupool.core.views.facts import GpuView


def _gpu(share: float, *, usable: bool = True) -> GpuView:
    return GpuView(
        name="g",
        index=0,
        model="T4",
        tflops_total=100.0,
        tflops_available=100.0 * (1 - share),
        vram_total=16,
        vram_available=16,
        usable=usable,
    )


def test_an_idle_gpu_is_drawn_and_every_allocation_has_a_mark() -> None:
    assert _gpu_mark(_gpu(0.0)) == "○"
    assert _gpu_mark(_gpu(0.01)) == "▁"
    assert _gpu_mark(_gpu(0.5)) == "▄"
    assert _gpu_mark(_gpu(1.0)) == "█"
    assert _gpu_mark(_gpu(0.0, usable=False)) == "✗"
    assert all(_gpu_mark(_gpu(i / 100)).strip() for i in range(101))


def test_cost_per_hour_and_per_30_days() -> None:
    assert _cost(1.578) == "$1.578/h ≈ $1,136 per 30 days"
    assert _cost(None) == "—"


def test_piped_output_is_as_wide_as_its_widest_line() -> None:
    line = Text("x" * 300)
    out = io.StringIO()
    console_for(line, terminal=False, file=out).print(line)
    assert out.getvalue() == "x" * 300 + "\n"


def test_a_price_names_where_it_came_from() -> None:
    assert price_from("live: AWS Pricing API 2026-12-07T17:00:00Z, 4m old") == "live 4m"
    assert price_from("catalog: AWS EC2 On-Demand pricing page, shipped catalog") == "catalog"
    assert price_from(None) == "—"
