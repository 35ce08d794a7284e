"""The replay ledger's window against every signature window (issue 33, a surviving mutation): a
finished delivery's record outlives the longest time a captured request still authenticates — the
HMAC timestamp (±5 min), SigV4 (15 min) and FC's `x-acs-date` (±15 min) — so a replay at any
moment its signature is still good is `done`, never acted on again. A window cut below that (say
10 min) lets a request captured at minute 0 be acted on again at minute 14 with a date still
inside FC's tolerance.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpupool.core.intake import acs3, signature
from gpupool.service.deliveries import REPLAY_WINDOW, DeliveryOnce
from gpupool.testing.memory_ports import MemoryDeliveryLedger

T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
# The longest a captured request (dated when the relay sent it) still authenticates.
LONGEST = timedelta(seconds=max(acs3.TOLERANCE_SECONDS, signature.TOLERANCE_SECONDS, 15 * 60))


def test_the_window_outlives_every_signature_window() -> None:
    assert REPLAY_WINDOW > LONGEST


@pytest.mark.parametrize(
    "after", [timedelta(minutes=10, seconds=1), timedelta(minutes=14, seconds=59), LONGEST]
)
def test_a_replay_while_its_signature_is_still_good_is_done(after: timedelta) -> None:
    ledger = MemoryDeliveryLedger()
    clock = [T0]
    first = DeliveryOnce(ledger, function="bind", event_id="e1", now=lambda: clock[0], holder="a")
    assert first.begin() == "first"
    first.finish()
    clock[0] = T0 + after
    replay = DeliveryOnce(ledger, function="bind", event_id="e1", now=lambda: clock[0], holder="b")
    assert replay.begin() == "done"
