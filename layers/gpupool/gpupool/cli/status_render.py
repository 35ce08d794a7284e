"""How `gpupool status` draws a `ClusterView` in a terminal, with rich.

Role: `render(view, header)` → one rich renderable: a header line (server, context, time, and in
`--watch` whether the watches are live or reconnecting), a panel per pool (capacity against
min / warm / max and the gap per dimension, nodes and GPUs, hourly cost against the budget,
claims by phase and each claim with its age and any stuck flag, warnings, the latest
decisions), and a table of nodes with a bar of each node's GPU allocation (the larger of its
TFLOPS and VRAM shares, like eks-node-viewer's) and one mark per GPU, its model, offering,
price, age, workers and flags. Small formatters (`age`, `vram`, `money`) are shared with the
docs capture.

Must not: read the cluster, compute facts (the core's `views` does) or print.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich import box
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gpupool.core.views.facts import (
    Amount,
    ClaimView,
    ClusterView,
    GpuView,
    NodeView,
    PoolView,
    duration_text,
)

__all__ = ["Header", "age", "bar", "money", "render", "vram"]

_GIB = 2**30
_BAR = 10
_MARKS = " ▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Header:
    server: str
    context: str | None
    state: str | None = None  # --watch: "live", "reconnecting: …"


def age(seconds: int | None) -> str:
    return duration_text(seconds)


def vram(value: float | None) -> str:
    if value is None:
        return "—"
    if value == 0:
        return "0"
    gib = value / _GIB
    return f"{gib:.0f}Gi" if gib == int(gib) else f"{gib:.1f}Gi"


def tflops(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def money(value: float | None) -> str:
    return "—" if value is None else f"${value:.3f}"


def bar(share: float, width: int = _BAR) -> str:
    filled = round(share * width)
    return "█" * filled + "░" * (width - filled)


def _gpu_mark(gpu: GpuView) -> str:
    if not gpu.usable:
        return "✗"
    return _MARKS[round(gpu.allocated_share * (len(_MARKS) - 1))]


def _node_share(node: NodeView) -> float:
    total = sum(g.tflops_total for g in node.gpus if g.usable)
    if total > 0:
        return 1 - sum(g.tflops_available for g in node.gpus if g.usable) / total
    return max((g.allocated_share for g in node.gpus), default=0.0)


def _amounts(pool: PoolView) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in ("", "total", "available", "in flight", "min", "warm", "max", "gap"):
        table.add_column(column, justify="right" if column else "left")
    rows: tuple[tuple[str, Amount, Callable[[float | None], str]], ...] = (
        ("TFLOPS", pool.tflops, tflops),
        ("VRAM", pool.vram, vram),
    )
    for name, amount, show in rows:
        values = (
            amount.total,
            amount.available,
            amount.in_flight,
            amount.minimum,
            amount.warm,
            amount.maximum,
        )
        gap = Text(show(amount.gap), style="bold red" if amount.gap > 0 else "")
        table.add_row(name, *(show(v) for v in values), gap)
    return table


def _offering(instance_type: str | None, zone: str | None, capacity_type: str | None) -> str:
    return " ".join(part for part in (instance_type, zone, capacity_type) if part) or "—"


def _claims(claims: tuple[ClaimView, ...]) -> Table:
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold underline")
    for column in ("claim", "phase", "age", "offering", "$/h", "node"):
        table.add_column(column, no_wrap=True)
    table.add_column("note", overflow="fold")  # what wraps on a narrow terminal
    for claim in claims:
        note = Text(claim.stuck, style="bold red") if claim.stuck else Text(claim.reason or "")
        table.add_row(
            claim.name,
            claim.phase,
            age(claim.age_seconds),
            _offering(claim.instance_type, claim.zone, claim.capacity_type),
            money(claim.hourly_price),
            claim.node or "—",
            note,
        )
    return table


def _pool(pool: PoolView) -> Panel:
    parts: list[RenderableType] = [_amounts(pool)]
    budget = "no budget"
    if pool.budget is not None:
        use = f"{pool.budget.use_percent:.1f} % used" if pool.budget.use_percent is not None else "no ratio"
        budget = (
            f"budget {pool.budget.field} ${pool.budget.amount:g} = {money(pool.budget.hourly_ceiling)}/h, "
            f"{use} ({pool.budget.strategy})"
        )
    max_note = " · maxResources reached" if pool.max_reached else ""
    parts.append(
        Text(
            f"nodes {pool.nodes} ({pool.ready_nodes} ready) · GPUs {pool.gpus} · "
            f"cost {money(pool.hourly_cost)}/h · {budget}{max_note}"
        )
    )
    phases = " · ".join(f"{phase} {count}" for phase, count in pool.claims_by_phase.items()) or "none"
    kinds = sorted({c.kind for c in pool.claims})
    parts.append(Text(f"claims ({', '.join(kinds) or 'GPUNodeClaim'}): {phases}"))
    if pool.claims:
        parts.append(_claims(pool.claims))
    if pool.warnings:
        parts.append(Text("warnings:", style="bold yellow"))
        parts += [Text(f"  ! {w}", style="yellow") for w in pool.warnings]
    if pool.decisions:
        parts.append(Text("latest decisions:", style="bold"))
        for decision in pool.decisions:
            when = decision.at.strftime("%H:%M:%S") if decision.at else "—"
            times = f" ×{decision.count}" if decision.count > 1 else ""
            style = "yellow" if decision.type == "Warning" else ""
            parts.append(
                Text(f"  {when} {decision.reason}{times} {decision.object}: {decision.message}", style=style)
            )
    title = f"pool {pool.name} · {pool.mode} · {pool.phase or '—'}"
    if pool.provisioning_phase:
        title += f" ({pool.provisioning_phase})"
    return Panel(Group(*parts), title=title, title_align="left", box=box.ROUNDED)


def _nodes(nodes: tuple[NodeView, ...]) -> Table:
    table = Table(
        box=None,
        padding=(0, 1),
        pad_edge=False,
        header_style="bold underline",
        title="nodes",
        title_justify="left",
    )
    for column in ("node", "pool", "allocation", "GPUs", "model", "offering", "$/h", "age", "workers"):
        table.add_column(column, no_wrap=True)
    table.add_column("flags", overflow="fold")  # what wraps on a narrow terminal
    for node in nodes:
        share = _node_share(node)
        table.add_row(
            node.name,
            node.pool or "(none)",
            f"{bar(share)} {share * 100:3.0f}%",
            "".join(_gpu_mark(g) for g in node.gpus) or "—",
            node.gpu_model or "—",
            _offering(node.instance_type, None, node.capacity_type),
            money(node.hourly_price),
            age(node.age_seconds),
            str(node.workers),
            Text(", ".join(node.flags), style="yellow" if node.flags else ""),
        )
    return table


def render(view: ClusterView, header: Header) -> RenderableType:
    when = view.generated_at.strftime("%Y-%m-%d %H:%M:%SZ")
    context = f" ({header.context})" if header.context else ""
    line = Text(f"gpupool status · {header.server}{context} · {when}", style="bold")
    if header.state:
        line.append(f" · watch: {header.state}", style="green" if header.state == "live" else "bold red")
    parts: list[RenderableType] = [line]
    if not view.pools:
        parts.append(Text("no GPUPool in this cluster"))
    parts += [_pool(pool) for pool in view.pools]
    if view.nodes:
        parts.append(_nodes(view.nodes))
    for problem in view.unreadable:
        parts.append(Text(f"! {problem}", style="yellow"))
    return Group(*parts)
