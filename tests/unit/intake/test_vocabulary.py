"""The shared vocabulary (gpupool.core.vocabulary): each relay event type's definition agrees with the
routing of the cause it becomes and reads its own wire data back; only the pool- and cluster-wide
types coalesce; and the pod predicates — a TensorFusion pod, its pool, an unschedulable one — as
TensorFusion's webhook and controllers label pods (table tests on the typed Pod model).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpupool.core.intake.relay import CAUSES, intake_cloudevent, relay_cause
from gpupool.core.intake.routing import route
from gpupool.core.model.foreign import Pod
from gpupool.core.vocabulary.events import (
    NODE_READY,
    POD_UNSCHEDULABLE,
    RELAY_EVENT_TYPES,
    RELAY_TYPES,
    TYPE_PREFIX,
    NodeData,
    PodData,
    relay_event_named,
    relay_event_of_type,
)
from gpupool.core.vocabulary.pods import is_tensorfusion_pod, is_unschedulable, pool_of

EVENTS = Path(__file__).resolve().parents[3] / "events" / "k8s"
T = "tensor-fusion.ai/"
UNSCHEDULABLE = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]


def _sample(event_type: str) -> dict[str, Any]:
    for path in EVENTS.glob("*.json"):
        loaded: dict[str, Any] = json.loads(path.read_text())
        if loaded["type"] == event_type:
            return loaded
    raise AssertionError(f"no sample of {event_type}")


@pytest.mark.parametrize("event_type", RELAY_EVENT_TYPES, ids=lambda t: t.name)
def test_each_event_types_cause_is_one_its_function_handles(event_type: Any) -> None:
    cause = intake_cloudevent(_sample(event_type.type))
    assert route(event_type.function, cause) == cause


@pytest.mark.parametrize("event_type", RELAY_EVENT_TYPES, ids=lambda t: t.name)
def test_each_event_type_reads_back_the_data_it_writes(event_type: Any) -> None:
    data = event_type.data.model_validate(_sample(event_type.type)["data"])
    assert event_type.data.model_validate(data.wire()) == data
    assert relay_cause(event_type, data.wire(), event_id="e-1") == relay_cause(
        event_type, _sample(event_type.type)["data"], event_id="e-1"
    )


def test_every_event_type_has_its_cause_and_no_other_is_listed() -> None:
    assert set(CAUSES) == {t.name for t in RELAY_EVENT_TYPES}


def test_names_and_types_are_unique_and_prefixed() -> None:
    names = [t.name for t in RELAY_EVENT_TYPES]
    assert len(set(names)) == len(names)
    assert tuple(TYPE_PREFIX + name for name in names) == RELAY_TYPES
    assert relay_event_named("node.ready") is NODE_READY
    assert relay_event_of_type(TYPE_PREFIX + "pod.unschedulable") is POD_UNSCHEDULABLE
    assert relay_event_named(TYPE_PREFIX + "node.ready") is None  # a short name is not a type
    assert relay_event_of_type("node.ready") is None
    assert relay_event_named("pool.exploded") is None


def test_only_pool_and_cluster_wide_types_coalesce() -> None:
    coalesced = {t.name for t in RELAY_EVENT_TYPES if t.coalesced}
    assert coalesced == {"pod.unschedulable", "pool.changed", "cluster.changed", "pool.manual-compaction"}
    assert {t.function for t in RELAY_EVENT_TYPES if not t.coalesced} == {"bind"}


def test_wire_data_leaves_absent_fields_out() -> None:
    assert NodeData(node="n").wire() == {"node": "n"}
    assert PodData(namespace="ns", name="p", pool="a").wire() == {"namespace": "ns", "name": "p", "pool": "a"}


def _pod(
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    conditions: list[dict[str, str]] | None = None,
    **spec: Any,
) -> Pod:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "labels": labels or {}}
    meta["annotations"] = annotations or {}
    if "deletionTimestamp" in spec:
        meta["deletionTimestamp"] = spec.pop("deletionTimestamp")
    return Pod.model_validate(
        {
            "metadata": meta,
            "spec": spec,
            "status": {"conditions": UNSCHEDULABLE if conditions is None else conditions},
        }
    )


ENABLED = {f"{T}enabled": "true"}
TF_SCHEDULER = {"schedulerName": "tensor-fusion-scheduler"}

# (case, pod, a TensorFusion pod?, unschedulable?)
PODS: list[tuple[str, Pod, bool, bool]] = [
    ("admitted by a webhook (enabled=true)", _pod(ENABLED, **TF_SCHEDULER), True, True),
    ("local-GPU worker", _pod({**ENABLED, f"{T}component": "worker"}, **TF_SCHEDULER), True, True),
    ("remote-vGPU worker (no enabled label)", _pod({f"{T}component": "worker"}, **TF_SCHEDULER), True, True),
    ("remote-vGPU client", _pod({**ENABLED, f"{T}component": "client"}), True, False),
    ("native pod routed to our scheduler (progressive migration)", _pod(**TF_SCHEDULER), False, False),
    ("enabled=false", _pod({f"{T}enabled": "false"}), False, False),
    ("plain pod", _pod(), False, False),
    ("bound", _pod(ENABLED, nodeName="n1"), True, False),
    ("being deleted", _pod(ENABLED, deletionTimestamp="2026-12-01T00:00:00Z"), True, False),
    (
        "not scheduled for another reason",
        _pod(ENABLED, conditions=[{**UNSCHEDULABLE[0], "reason": "X"}]),
        True,
        False,
    ),
    (
        "PodScheduled true",
        _pod(ENABLED, conditions=[{"type": "PodScheduled", "status": "True"}]),
        True,
        False,
    ),
    ("no conditions yet", _pod(ENABLED, conditions=[]), True, False),
]


@pytest.mark.parametrize(("case", "pod", "ours", "waiting"), PODS, ids=[p[0] for p in PODS])
def test_pod_predicates(case: str, pod: Pod, ours: bool, waiting: bool) -> None:
    assert is_tensorfusion_pod(pod) is ours, case
    assert is_unschedulable(pod) is waiting, case


def test_a_pods_pool_is_its_annotation_else_its_label() -> None:
    assert pool_of(_pod(annotations={f"{T}gpupool": "a"}, labels={f"{T}gpupool": "a"})) == "a"
    assert pool_of(_pod(annotations={f"{T}gpupool": "a"})) == "a"  # gpupool's webhook writes it
    assert pool_of(_pod(labels={f"{T}gpupool": "b"})) == "b"  # TensorFusion's webhook writes the label
    assert pool_of(_pod(annotations={f"{T}gpupool": ""}, labels={f"{T}gpupool": "b"})) == "b"
    assert pool_of(_pod()) is None
