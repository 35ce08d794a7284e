"""Disruption budgets as Karpenter reads them: default 10 %, percent rounded up, most restrictive
active budget, schedule windows, disrupting nodes subtracted; and the crontab matcher."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpupool.core.decisions.disruption_budget import (
    UNBOUNDED,
    allowed_disruptions,
    budget_active,
    cron_matches,
)
from gpupool.core.model.pool import DisruptionBudget

NOON = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("budgets", "nodes", "disrupting", "allowed"),
    [
        ([], 10, 0, 1),  # default 10 %
        ([], 11, 0, 2),  # rounded up
        ([], 3, 0, 1),
        ([{"nodes": "3"}], 10, 1, 2),
        ([{"nodes": "3"}], 10, 5, 0),  # never below zero
        ([{"nodes": "50%"}, {"nodes": "2"}], 10, 0, 2),  # most restrictive
        ([{"nodes": "0"}], 10, 0, 0),
        ([{"nodes": "100%"}], 4, 0, 4),
    ],
)
def test_allowed(budgets: list[dict[str, str]], nodes: int, disrupting: int, allowed: int) -> None:
    parsed = [DisruptionBudget.model_validate(b) for b in budgets]
    assert allowed_disruptions(parsed, nodes=nodes, disrupting=disrupting, now=NOON)[0] == allowed


def test_inactive_scheduled_budgets_leave_disruption_unbounded() -> None:
    night = DisruptionBudget.model_validate({"nodes": "0", "schedule": "0 22 * * *", "duration": "8h"})
    assert allowed_disruptions([night], nodes=5, disrupting=0, now=NOON)[0] == UNBOUNDED
    assert allowed_disruptions([night], nodes=5, disrupting=0, now=NOON.replace(hour=3))[0] == 0


@pytest.mark.parametrize(
    ("schedule", "duration", "hour", "minute", "active"),
    [
        ("0 9 * * mon-fri", "8h", 12, 0, True),
        ("0 9 * * mon-fri", "3h", 12, 0, False),  # 09:00 + 3h ends at 12:00, exclusive
        ("0 9 * * sat,sun", "8h", 12, 0, False),
        ("@daily", "13h", 12, 59, True),
        ("*/30 * * * *", "10m", 12, 5, True),
        ("*/30 * * * *", "10m", 12, 15, False),
    ],
)
def test_schedule_windows(schedule: str, duration: str, hour: int, minute: int, active: bool) -> None:
    budget = DisruptionBudget.model_validate({"nodes": "1", "schedule": schedule, "duration": duration})
    assert budget_active(budget, NOON.replace(hour=hour, minute=minute)) is active


def test_cron_day_fields_or_when_both_restricted() -> None:
    # The 5th of January 2026 is a Monday: "0 12 1 * mon" fires on day 1 or any Monday.
    assert cron_matches("0 12 1 * mon", NOON)
    assert not cron_matches("0 12 2 * tue", NOON)
    assert cron_matches("0 12 5 jan *", NOON)
    assert cron_matches("0 12 * * 7", NOON.replace(day=4))  # Sunday as 7


@pytest.mark.parametrize("bad", ["0 12 * *", "61 * * * *", "x * * * *", "*/0 * * * *"])
def test_bad_crontabs_raise(bad: str) -> None:
    with pytest.raises(ValueError):
        cron_matches(bad, NOON)


@pytest.mark.parametrize("bad", [{"nodes": "101%"}, {"nodes": "-1"}, {"nodes": "1", "schedule": "@daily"}])
def test_bad_budgets_are_refused(bad: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        DisruptionBudget.model_validate(bad)
