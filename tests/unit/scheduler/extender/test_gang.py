"""Gang keys and the GangBook: which pods form a gang, when a gang is complete, and how an
incomplete gang times out (time passed in)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpupool.core.model.foreign import Pod
from gpupool.scheduler.extender.gang import GangBook, GangSpec, gang_of, parse_go_duration

T = "tensor-fusion.ai/"
START = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
MIN, TIMEOUT = T + "gang-min-members", T + "gang-timeout"


def member(annotations: dict[str, str], *, workload: str | None = "train", owner: str | None = None) -> Pod:
    labels = {T + "workload": workload} if workload else {}
    owners = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner, "controller": True}] if owner else []
    metadata = {"name": "p", "namespace": "ml", "labels": labels, "annotations": annotations}
    return Pod.model_validate({"metadata": {**metadata, "ownerReferences": owners}})


@pytest.mark.parametrize(
    ("annotations", "workload", "expected"),
    [
        ({MIN: "4"}, "train", GangSpec("ml/train", 4, None)),
        (
            {MIN: "4", TIMEOUT: "90s"},
            "train",
            GangSpec("ml/train", 4, timedelta(seconds=90)),
        ),
        ({MIN: "2", TIMEOUT: "0s"}, "train", GangSpec("ml/train", 2, None)),
        (
            {MIN: "2", TIMEOUT: "1h30m"},
            "t",
            GangSpec("ml/t", 2, timedelta(minutes=90)),
        ),
        ({MIN: "0"}, "train", None),
        ({MIN: "four"}, "train", None),
        ({MIN: "4"}, None, None),
        ({}, "train", None),
    ],
)
def test_gang_keys(annotations: dict[str, str], workload: str | None, expected: GangSpec | None) -> None:
    assert gang_of(member(annotations, workload=workload)) == expected


def test_without_a_workload_label_the_controlling_owner_is_the_group() -> None:
    pod = member({MIN: "4"}, workload=None, owner="train-job")
    assert gang_of(pod) == GangSpec("ml/Job/train-job", 4, None)


@pytest.mark.parametrize(
    ("text", "seconds"), [("1.5s", 1.5), ("2m", 120), ("1h", 3600), ("soon", None), ("5", None)]
)
def test_go_durations(text: str, seconds: float | None) -> None:
    parsed = parse_go_duration(text)
    assert (parsed.total_seconds() if parsed is not None else None) == seconds


def test_a_gang_completes_when_min_members_hold_their_gpus() -> None:
    book, spec = GangBook(), GangSpec("ml/train", 3, timedelta(minutes=1))
    verdicts = [book.arrive(spec, f"ml/p{i}", now=START + timedelta(seconds=i)) for i in range(3)]
    assert [v.complete for v in verdicts] == [False, False, True]
    assert verdicts[0].deadline == START + timedelta(minutes=1)
    assert "waiting for 2 more member(s)" in verdicts[0].reason("ml/train")
    assert book.arrive(spec, "ml/p1", now=START).complete, "a retry of a member of a complete gang binds"
    assert book.expire(now=START + timedelta(hours=1)) == {}, "a complete gang never expires"


def test_an_incomplete_gang_expires_at_its_timeout_with_its_members() -> None:
    book, spec = GangBook(), GangSpec("ml/train", 4, timedelta(seconds=30))
    for i in range(3):
        book.arrive(spec, f"ml/p{i}", now=START)
    assert book.waiting("ml/p0")
    assert book.expire(now=START + timedelta(seconds=29)) == {}
    assert book.expire(now=START + timedelta(seconds=30)) == {"ml/train": ["ml/p0", "ml/p1", "ml/p2"]}
    assert not book.waiting("ml/p0")
    assert not book.arrive(spec, "ml/p0", now=START + timedelta(minutes=1)).complete, (
        "a fresh attempt starts over"
    )


def test_without_a_timeout_a_gang_waits_and_forgetting_members_empties_it() -> None:
    book, spec = GangBook(), GangSpec("ml/train", 2, None)
    book.arrive(spec, "ml/p0", now=START)
    assert book.expire(now=START + timedelta(days=30)) == {}
    book.forget("ml/p0")
    assert not book.waiting("ml/p0")
    assert not book.arrive(spec, "ml/p1", now=START).complete
