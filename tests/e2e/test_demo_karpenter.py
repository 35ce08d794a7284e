"""`gpupool demo --mode karpenter|autoselect`: both stories in-process, through the real handlers,
with the simulated Karpenter on Karpenter's CRD rules; checked from the JSON timeline (no error,
the decisive events in order) and a readable text run; another cloud is refused with one line."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from gpupool.cli.main import main


def _demo(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["demo", *args])
    return code, out.getvalue()


def _summaries(timeline: list[dict[str, Any]]) -> list[str]:
    return [f"{e['actor']}: {e['summary']}" for e in timeline]


def test_karpenter_story_fails_over_a_capacity_error_and_binds_the_minimum() -> None:
    code, text = _demo("--mode", "karpenter", "--json")
    assert code == 0
    timeline = json.loads(text)["timeline"]
    lines = _summaries(timeline)
    failed = next(i for i, line in enumerate(lines) if "insufficient-capacity" in line)
    marked = next(
        i
        for i, e in enumerate(timeline)
        if any(
            r.get("action") == "mark-offering-unavailable"
            for r in (e.get("outcome") or {}).get("applied") or []
        )
    )
    assert failed < marked, "the refill skips the offering Karpenter could not launch"
    assert sum("registered" in line for line in lines) == 2
    bound = [
        r
        for e in timeline
        for r in (e.get("outcome") or {}).get("applied") or []
        if r.get("action") == "set-claim-phase" and "Bound" in str(r.get("detail"))
    ]
    assert len(bound) == 2


def test_autoselect_story_places_every_pod_but_the_one_short_of_cpu() -> None:
    code, text = _demo("--mode", "autoselect")
    assert code == 0
    assert "pods still pending: too-big" in text
    assert "more than GPU capacity is missing: it requests cpu 64" in text
    assert text.count("NodeClaim gpu-") >= 20
    # The template is a NodeClaim Karpenter made from a NodePool without a zone requirement; the
    # expansions are pinned to what it launched, and when Karpenter deletes them for capacity each
    # pod gets one on the next candidate at the next tick.
    assert "no zone requirement" in text and "(g4dn.xlarge/us-east-1a)" in text
    assert text.count("insufficient-capacity") >= 15
    assert text.count("was deleted before its node registered") >= 15
    assert "(g4dn.xlarge/us-east-1b)" in text


def test_the_karpenter_stories_refuse_another_cloud_and_start_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for mode in ("karpenter", "autoselect"):
        assert main(["demo", "--mode", mode, "--cloud", "alibaba"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.strip() == (
            f"gpupool demo: error: --mode {mode} plays on AWS only (an EC2NodeClass, g4dn / g5): drop --cloud"
        )
