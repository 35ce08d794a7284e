"""How `gpupool status` draws a `ClusterView` in a terminal, with rich.

Role: `render(view, header)` → one rich renderable: a header line (server, context, time, and in
`--watch` whether the watches are live or reconnecting), a panel per pool (capacity against
min / warm / max and the gap per dimension, nodes and GPUs, hourly cost against the budget,
claims by phase and each claim with its age and any stuck flag, warnings, the latest
decisions), and a table of nodes with a bar of each node's GPU allocation (the larger of its
TFLOPS and VRAM shares, like eks-node-viewer's) and one mark per GPU (`○` an idle one, `▁`…`█`
its allocation, `✗` an unusable one), its model, offering, price, age, workers and flags; then the
cluster's totals (pools, nodes, GPUs, cost per hour and per 30 days). Each pool's cost is given per
hour and per 30 days too. `console_for(renderable, terminal)` sizes the output: the terminal's
width, or — piped — as wide as the widest line, so nothing is cut at 80 columns. Small formatters
(`age`, `vram`, `money`) are shared with the docs capture.

Must not: read the cluster, compute facts (the core's `views` does) or print.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich import box
from rich.console import Console, Group, RenderableType
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

__all__ = ["Header", "age", "bar", "console_for", "money", "render", "vram"]

_GIB = 2**30
_BAR = 10
_IDLE = "○"  # a usable GPU nothing is allocated on: drawn, never a blank
_MARKS = "▁▂▃▄▅▆▇█"
HOURS_PER_30_DAYS = 24 * 30
_UNBOUNDED = 10_000  # columns to measure the natural width of what is printed into a pipe


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


def price_from(source: str | None) -> str:
    """A price's source in a table cell: `live <age>` or `catalog` (`--json` has the API, the read
    time and the catalog's source in full); `—` when the claim recorded none."""
    if not source:
        return "—"
    kind, _, rest = source.partition(": ")
    if kind == "live":
        return f"live {rest.rpartition(', ')[2].removesuffix(' old')}"
    return kind


def bar(share: float, width: int = _BAR) -> str:
    filled = round(share * width)
    return "█" * filled + "░" * (width - filled)


def _gpu_mark(gpu: GpuView) -> str:
    if not gpu.usable:
        return "✗"
    if gpu.allocated_share <= 0:
        return _IDLE
    return _MARKS[min(len(_MARKS) - 1, max(0, round(gpu.allocated_share * len(_MARKS)) - 1))]


def _cost(hourly: float | None) -> str:
    """`$1.578/h ≈ $1,136 per 30 days`."""
    if hourly is None:
        return "—"
    return f"{money(hourly)}/h ≈ ${hourly * HOURS_PER_30_DAYS:,.0f} per 30 days"


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
    for column in ("claim", "phase", "age", "offering", "$/h", "from", "node"):
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
            price_from(claim.price_source),
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
            f"cost {_cost(pool.hourly_cost)} · {budget}{max_note}"
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
    columns = (
        "node",
        "pool",
        "allocation",
        "GPUs",
        "model",
        "offering",
        "$/h",
        "price from",
        "age",
        "workers",
    )
    for column in columns:
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
            price_from(node.price_source),
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
    parts.append(_totals(view))
    for problem in view.unreadable:
        parts.append(Text(f"! {problem}", style="yellow"))
    return Group(*parts)


def _totals(view: ClusterView) -> Text:
    """The cluster's line: every pool's cost plus the GPU nodes in no pool."""
    pooled = sum(pool.hourly_cost for pool in view.pools)
    unpooled = sum(node.hourly_price or 0.0 for node in view.nodes if node.pool is None)
    gpus = sum(len(node.gpus) for node in view.nodes)
    idle = sum(1 for node in view.nodes for gpu in node.gpus if gpu.usable and gpu.allocated_share <= 0)
    return Text(
        f"cluster: {len(view.pools)} pool{'s' if len(view.pools) != 1 else ''} · {len(view.nodes)} GPU "
        f"node{'s' if len(view.nodes) != 1 else ''} · {gpus} GPUs ({idle} idle) · "
        f"cost {_cost(pooled + unpooled)}",
        style="bold",
    )


def console_for(renderable: RenderableType, *, terminal: bool, **options: object) -> Console:
    """A Console as wide as the terminal, or — not a terminal — as the widest line of `renderable`."""
    if terminal:
        return Console(**options)  # type: ignore[arg-type]
    probe = Console(width=_UNBOUNDED, color_system=None, force_terminal=False)
    width = probe.measure(renderable).maximum
    return Console(width=max(40, min(width, _UNBOUNDED)), **options)  # type: ignore[arg-type]
