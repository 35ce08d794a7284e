"""Human-readable lines for outcomes and timelines (`gpupool invoke`, `gpupool demo`).

Role: turn an outcome's JSON (`{"plan": {"actions", "reasons"}, "applied", "errors"}`) and
the demo's timeline entries (`gpupool.sandbox.demo.timeline.TimelineEntry`) into short lines a
person reads top to bottom.

Must not: decide or apply anything, or hide an error (every error line is printed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpupool.sandbox.demo.timeline import TimelineEntry

__all__ = ["action_line", "applied_line", "outcome_lines", "render_timeline"]

_TARGETS = ("pool", "claim", "node", "instance_id")


def _targets(row: Mapping[str, Any]) -> str:
    return " ".join(f"{key.removesuffix('_id')}={row[key]}" for key in _TARGETS if row.get(key))


def action_line(action: Mapping[str, Any]) -> str:
    """`kind key=value …` plus what matters for that kind (offering, phase, reason, labels)."""
    kind = str(action.get("kind", "?"))
    parts = [kind, _targets(action)]
    offering = action.get("offering")
    if isinstance(offering, Mapping):
        where = "/".join(
            str(offering.get(k)) for k in ("instance_type", "zone", "capacity_type") if offering.get(k)
        )
        parts.append(f"({where}, ${offering.get('hourly_price')}/h)")
    manifest = action.get("manifest")
    if kind == "create-claim" and isinstance(manifest, Mapping):
        spec = manifest.get("spec") or {}
        tflops = spec.get("tflopsOffered", spec.get("tflops_offered"))
        vram = spec.get("vramOffered", spec.get("vram_offered"))
        where = "/".join(str(spec[k]) for k in ("instance_type", "instanceType", "zone") if spec.get(k))
        parts.append(f"({where}: {tflops} TFLOPS, {vram} VRAM)")
    if action.get("phase"):
        parts.append(f"→ {action['phase']}")
    for key in ("reason", "event_reason"):
        if action.get(key):
            parts.append(f"[{action[key]}]")
    if kind == "record-event" and action.get("message"):
        parts.append(f"“{action['message']}”")
    if isinstance(action.get("labels"), Mapping):
        parts.append(", ".join(f"{k}={v}" for k, v in action["labels"].items()))
    return " ".join(p for p in parts if p)


def applied_line(row: Mapping[str, Any]) -> str:
    detail = f" ({row['detail']})" if row.get("detail") else ""
    return f"{row.get('result', '?'):8} {row.get('action', '?')} {_targets(row)}{detail}".rstrip()


def outcome_lines(outcome: Mapping[str, Any], *, indent: str = "  ", dry_run: bool = False) -> list[str]:
    """The plan's actions, the reasons, what was applied and the errors, as indented lines."""
    plan = outcome.get("plan") or {}
    actions = list(plan.get("actions") or [])
    lines = [f"{indent}plan: {len(actions)} action(s)"]
    lines += [f"{indent}  - {action_line(a)}" for a in actions]
    reasons = list(plan.get("reasons") or [])
    if reasons:
        lines.append(f"{indent}why:")
        lines += [f"{indent}  - {reason}" for reason in reasons]
    applied = list(outcome.get("applied") or [])
    if dry_run:
        lines.append(f"{indent}dry run: nothing applied")
    elif applied:
        lines.append(f"{indent}applied:")
        lines += [f"{indent}  - {applied_line(row)}" for row in applied]
    for error in outcome.get("errors") or []:
        lines.append(f"{indent}error: {error}")
    return lines


def render_timeline(entries: Iterable[TimelineEntry], *, start: datetime, verbose: bool = False) -> list[str]:
    """`+MM:SS  actor  summary`, then the details and (for function calls) reasons and actions."""
    lines: list[str] = []
    for entry in entries:
        elapsed = int((entry.at - start).total_seconds())
        stamp = f"+{elapsed // 60:02d}:{elapsed % 60:02d}"
        lines.append(f"{stamp}  {entry.actor:<18} {entry.summary}")
        pad = " " * 27
        lines += [f"{pad}{detail}" for detail in entry.details]
        if entry.outcome is None:
            continue
        if verbose:
            lines += outcome_lines(entry.outcome, indent=pad)
            continue
        plan = entry.outcome.get("plan") or {}
        lines += [f"{pad}why: {reason}" for reason in plan.get("reasons") or []]
        lines += [
            f"{pad}did: {applied_line(row)}"
            for row in entry.outcome.get("applied") or []
            if row.get("action") not in ("patch-pool-status",)
        ]
        lines += [f"{pad}error: {error}" for error in entry.outcome.get("errors") or []]
    return lines
