"""Expansion reservations (pure): which NodeClaims reserve a node and for whom (forgeries make
none), how long a reservation holds, and which pods it keeps off the node — only those that would
crowd the waiting pod out — with the allocator's state left as it was."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpupool.core.allocator import Allocator, GpuInfo, GpuRequest
from gpupool.core.allocator.quota import QuotaUsage
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.vocabulary.expansions import PLACEMENT_GRACE
from gpupool.scheduler.extender import (
    Reservation,
    handle_filter,
    holding,
    parse_extender_args,
    reservation_of,
    reserve_for_bind,
)
from gpupool.scheduler.extender.handle import failure_reason
from gpupool.scheduler.extender.reservation import reserved_refusals

GI = 1 << 30
T = "tensor-fusion.ai/"
NOW = datetime(2026, 12, 7, 21, 0, tzinfo=UTC)


def nodeclaim(**overrides: Any) -> KarpenterNodeClaim:
    """An expansion AutoSelect made for team/intended, its node `new` named; `overrides` replace
    `labels`, `annotations`, `node` or add `deletionTimestamp`."""
    metadata: dict[str, Any] = {
        "name": "gpu-abc12",
        "labels": overrides.get("labels", {T + "expansion-source": "template-node"}),
        "annotations": overrides.get("annotations", {"gpupool.io/expansion-for": "team/intended"}),
    }
    if "deletionTimestamp" in overrides:
        metadata["deletionTimestamp"] = overrides["deletionTimestamp"]
    return KarpenterNodeClaim.model_validate(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": metadata,
            "spec": {"requirements": []},
            "status": {"nodeName": overrides.get("node", "new")},
        }
    )


def test_an_expansion_nodeclaim_reserves_its_node_for_its_pod() -> None:
    assert reservation_of(nodeclaim()) == Reservation(node="new", nodeclaim="gpu-abc12", pod="team/intended")


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        ({"labels": {}}, "no expansion-source label: not an expansion gpupool made"),
        ({"annotations": {}}, "no expansion-for annotation"),
        ({"annotations": {"gpupool.io/expansion-for": "intended"}}, "no namespace"),
        ({"annotations": {"gpupool.io/expansion-for": "team/Intended/x"}}, "not a pod key"),
        ({"annotations": {"gpupool.io/expansion-for": "/intended"}}, "empty namespace"),
        ({"node": None}, "its node not named yet"),
        ({"deletionTimestamp": "2026-12-07T21:00:00Z"}, "being deleted"),
    ],
)
def test_any_other_nodeclaim_reserves_nothing(overrides: dict[str, Any], why: str) -> None:
    assert reservation_of(nodeclaim(**overrides)) is None, why


def test_a_reservation_holds_until_placement_grace_after_the_gpus_were_reported() -> None:
    assert holding(NOW, now=NOW)
    assert holding(NOW, now=NOW + PLACEMENT_GRACE - timedelta(milliseconds=1))
    assert not holding(NOW, now=NOW + PLACEMENT_GRACE), "fails open on time"
    assert not holding(None, now=NOW), "no GPU reported (or no creation time): nothing to hold"


def allocator(gpus: int = 1) -> Allocator:
    built = Allocator()
    for index in range(gpus):
        built.state.upsert_gpu(
            GpuInfo(
                name=f"new-{index}",
                node="new",
                pool="shared",
                tflops_capacity=100_000,
                vram_capacity=40 * GI,
                tflops_available=100_000,
            )
        )
    return built


def request(name: str, tflops: int = 100_000, vram: int = 40 * GI) -> GpuRequest:
    return GpuRequest(namespace="team", name=name, pool="shared", tflops_request=tflops, vram_request=vram)


def pod(name: str, tflops: str = "100", vram: str = "40Gi") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "uid": f"uid-{name}",
            "labels": {T + "enabled": "true"},
            "annotations": {T + "tflops-request": tflops, T + "vram-request": vram, T + "gpupool": "shared"},
        },
        "spec": {"containers": [{"name": "c"}]},
    }


RESERVED = Reservation(node="new", nodeclaim="gpu-abc12", pod="team/intended")


def test_a_pod_that_would_crowd_the_intended_one_out_is_refused_and_the_state_kept() -> None:
    built = allocator()
    held = {"new": (RESERVED, request("intended"))}
    refused = reserved_refusals(built, request("thief"), ["new"], held)
    assert refused["new"].startswith(
        "reserved: node new was made (NodeClaim gpu-abc12) for pod team/intended"
    )
    assert built.state.allocations == {} and built.usage.get("team", QuotaUsage()) == QuotaUsage()
    assert built.reserve(request("thief"), "new").gpus == ("new-0",), "the what-if left the GPU free"
    built.release("team/thief")
    assert reserved_refusals(built, request("intended"), ["new"], held) == {}, "its own pod passes"


def test_the_filter_and_bind_refuse_it_the_intended_pod_passes() -> None:
    built = allocator()
    held = {"new": (RESERVED, request("intended"))}
    args = parse_extender_args({"Pod": pod("thief"), "NodeNames": ["new"]})
    answer = handle_filter(built, args, default_pool="shared", reservations=held)
    assert answer["NodeNames"] == [] and "reserved:" in answer["FailedNodes"]["new"]
    assert failure_reason(answer) == "reserved"
    with pytest.raises(Exception, match="reserved: node new"):
        reserve_for_bind(built, pod("thief"), "new", default_pool="shared", reservations=held)
    assert built.state.allocations == {}
    mine = parse_extender_args({"Pod": pod("intended"), "NodeNames": ["new"]})
    assert handle_filter(built, mine, default_pool="shared", reservations=held)["NodeNames"] == ["new"]
    assert reserve_for_bind(built, pod("intended"), "new", default_pool="shared", reservations=held)


def test_a_pod_that_leaves_room_for_the_intended_one_shares_the_node() -> None:
    built = allocator()
    held = {"new": (RESERVED, request("intended", tflops=50_000, vram=20 * GI))}
    assert reserved_refusals(built, request("small", tflops=40_000, vram=10 * GI), ["new"], held) == {}
    assert reserved_refusals(built, request("big", tflops=60_000, vram=10 * GI), ["new"], held) != {}


def test_the_reservation_protects_nothing_once_the_pod_is_placed_or_when_it_cannot_fit() -> None:
    built = allocator()
    held = {"new": (RESERVED, request("intended"))}
    built.reserve(request("intended"), "new")
    assert reserved_refusals(built, request("late", tflops=1_000, vram=GI), ["new"], held) == {}
    built.release("team/intended")
    too_big = {"new": (RESERVED, request("intended", vram=80 * GI))}
    assert reserved_refusals(built, request("thief"), ["new"], too_big) == {}, "fails open"


def test_a_node_without_reservation_is_left_alone() -> None:
    assert reserved_refusals(allocator(), request("thief"), ["new"], {}) == {}
