"""Disruption budgets: how many of a pool's nodes consolidation may disrupt now (Karpenter's rules).

Role: `allowed_disruptions(budgets, nodes=…, disrupting=…, now=…)` reads a pool's
`nodeCompaction.budgets` as Karpenter reads a NodePool's `disruption.budgets`: no budget means one
of `10%`; a budget with `schedule` and `duration` is active only from each time its crontab fires
(UTC) until `duration` later, one without them always; a percentage is of the pool's nodes,
rounded up; the most restrictive active budget wins, less the nodes already disrupting (cordoned
or being deleted), never below zero. When no budget is active nothing limits it (Karpenter's
"unbounded outside the windows"). `cron_matches` is the 5-field crontab (`*`, lists, ranges,
steps, month and weekday names, `@hourly` … `@yearly`); day-of-month and day-of-week, both
restricted, match when either does, as cron does.

Must not: read the clock (`now` is passed in) or know what a node is; it counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta

from gpupool.core.model.base import duration_seconds
from gpupool.core.model.pool import DisruptionBudget

__all__ = ["DEFAULT_BUDGET", "allowed_disruptions", "budget_active", "cron_matches"]

DEFAULT_BUDGET = DisruptionBudget(nodes="10%")
UNBOUNDED = 1 << 30
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_NAMES = {
    3: {m: i + 1 for i, m in enumerate(_MONTHS)},
    4: {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])},
}
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
# The most minutes a schedule's window is searched back (a budget's duration beyond it is cut).
_MAX_WINDOW_MINUTES = 31 * 24 * 60


def _value(text: str, field: int) -> int:
    lowered = text.lower()
    names = _NAMES.get(field, {})
    if lowered in names:
        return names[lowered]
    if not lowered.isdigit():
        raise ValueError(f"crontab field {field + 1}: {text!r} is not a number or a name")
    return int(lowered)


def _field(text: str, field: int) -> frozenset[int]:
    low, high = _RANGES[field]
    values: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ValueError(f"crontab field {field + 1}: step must be positive in {part!r}")
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, last = base.split("-", 1)
            start, end = _value(first, field), _value(last, field)
        else:
            start = _value(base, field)
            end = high if step_text else start
        if not low <= start <= end <= high:
            raise ValueError(f"crontab field {field + 1}: {part!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    if field == 4 and 7 in values:  # Sunday is 0 or 7
        values.add(0)
    return frozenset(values)


def _parse(schedule: str) -> tuple[tuple[frozenset[int], ...], bool, bool]:
    text = _MACROS.get(schedule.strip().lower(), schedule)
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(f"crontab {schedule!r} must have 5 fields (minute hour day month weekday)")
    parsed = tuple(_field(f, i) for i, f in enumerate(fields))
    return parsed, fields[2] != "*", fields[4] != "*"


def cron_matches(schedule: str, at: datetime) -> bool:
    """Whether the crontab `schedule` fires in the minute of `at` (taken as UTC)."""
    (minutes, hours, days, months, weekdays), dom_set, dow_set = _parse(schedule)
    if at.minute not in minutes or at.hour not in hours or at.month not in months:
        return False
    dom, dow = at.day in days, (at.isoweekday() % 7) in weekdays
    if dom_set and dow_set:
        return dom or dow
    return dom and dow


def budget_active(budget: DisruptionBudget, now: datetime) -> bool:
    """Whether `budget` applies at `now`: always without a schedule, else when its crontab fired
    in the last `duration` (the firing minute counts, the minute `duration` later does not)."""
    if budget.schedule is None or budget.duration is None:
        return True
    minutes = min(_MAX_WINDOW_MINUTES, math.ceil(duration_seconds(budget.duration) / 60))
    start = now.replace(second=0, microsecond=0)
    window_end = now
    for back in range(minutes + 1):
        fired = start - timedelta(minutes=back)
        if fired + timedelta(seconds=duration_seconds(budget.duration)) <= window_end:
            break
        if cron_matches(budget.schedule, fired):
            return True
    return False


def _limit(budget: DisruptionBudget, nodes: int) -> int:
    if budget.nodes.endswith("%"):
        return math.ceil(nodes * int(budget.nodes[:-1]) / 100)
    return int(budget.nodes)


def allowed_disruptions(
    budgets: Sequence[DisruptionBudget], *, nodes: int, disrupting: int, now: datetime
) -> tuple[int, str]:
    """How many more nodes may be disrupted now, and why (see module docstring)."""
    chosen = list(budgets) or [DEFAULT_BUDGET]
    active = [b for b in chosen if budget_active(b, now)]
    if not active:
        return UNBOUNDED, "no disruption budget is active now"
    tightest = min(active, key=lambda b: _limit(b, nodes))
    limit = _limit(tightest, nodes)
    left = max(0, limit - disrupting)
    when = f" (schedule {tightest.schedule!r} for {tightest.duration})" if tightest.schedule else ""
    return left, (
        f"budget nodes {tightest.nodes}{when} of {nodes} node(s) allows {limit}, "
        f"{disrupting} disrupting: {left} more"
    )
