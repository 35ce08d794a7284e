"""The chart's guards after issue 33, evaluated as the API server does (tests/unit/admission_policy.py):
the pod guard refuses a stranger asking for index resources or naming tensor-fusion-scheduler (the
same predicate as `gpupool.core.vocabulary.pods`, checked case by case), judges `pods/status` as it
judges `pods`, and holds the relay's own pod writes to the scheduler-owned annotations; the node
guard holds the relay's node writes to the used-by taint and the usable-GPUs label.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupool.core.model.foreign import Pod
from gpupool.core.vocabulary.pods import may_use_the_gpu_scheduler

helm = pytest.importorskip("helm_python")
pytest.importorskip("celpy")
sys.path.insert(0, str(Path(__file__).parent))
from admission_policy import evaluate  # noqa: E402

CHART = Path(__file__).resolve().parents[2] / "incluster" / "chart"
T = "tensor-fusion.ai/"
RELAY = "system:serviceaccount:gpupool-system:gp-scheduler"


def _policies() -> dict[str, dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render({}, name="gp", namespace="gpupool-system")
    docs = [d for d in yaml.safe_load_all(rendered.get("gpupool/templates/pod-guard.yaml", "")) if d]
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"}


@pytest.fixture(scope="module")
def pods() -> dict[str, Any]:
    return _policies()["gp-pod-guard"]


@pytest.fixture(scope="module")
def nodes() -> dict[str, Any]:
    return _policies()["gp-node-guard"]


def _pod(
    *,
    labels: dict[str, str] | None = None,
    notes: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    scheduler: str | None = "tensor-fusion-scheduler",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": limits or {}}}]}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "tenant-a",
            "labels": labels or {},
            "annotations": notes or {},
        },
        "spec": spec,
    }


ENABLED = {T + "enabled": "true"}
INDEX = {T + "index_0": "1"}
CASES = {
    # attempt 2: no label, no annotations, the scheduler, an index resource
    "stranger-index-and-scheduler": _pod(limits=INDEX),
    "stranger-scheduler-only": _pod(),
    "stranger-index-only": _pod(limits=INDEX, scheduler=None),
    "annotations-without-label": _pod(notes={T + "tflops-request": "10"}, limits=INDEX),
    "label-without-annotations": _pod(labels=ENABLED, limits=INDEX),
    "dedicated-false": _pod(labels=ENABLED, notes={T + "dedicated-gpu": "false"}, limits=INDEX),
    "labelled-with-native-gpu-and-annotations": _pod(
        labels=ENABLED, notes={T + "vram-limit": "1Gi"}, limits=INDEX | {"nvidia.com/gpu": "1"}
    ),
    "worker": _pod(labels=ENABLED, notes={T + "vram-limit": "4Gi", T + "tflops-limit": "10"}, limits=INDEX),
    "percent-worker": _pod(labels=ENABLED, notes={T + "compute-percent-request": "20"}, limits=INDEX),
    # attempt 3 is admitted (and then bound with its GPUs and record)
    "dedicated-alone": _pod(labels=ENABLED, notes={T + "dedicated-gpu": " True"}, limits=INDEX),
    "native-routed": _pod(limits=INDEX | {"nvidia.com/gpu": "1"}),
    "plain": _pod(scheduler=None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_guard_and_the_vocabulary_agree_on_who_may_use_the_gpu_scheduler(
    pods: dict[str, Any], case: str
) -> None:
    pod = CASES[case]
    verdict = evaluate(pods, operation="CREATE", obj=pod)
    uses = (
        "schedulerName" in pod["spec"] or INDEX.keys() & pod["spec"]["containers"][0]["resources"]["limits"]
    )
    allowed = not uses or may_use_the_gpu_scheduler(Pod.model_validate(pod))
    assert (verdict is None) == allowed, verdict
    if not allowed:
        assert verdict is not None and (
            "asks gpupool for GPUs" in verdict or "must name that scheduler" in verdict
        )


def test_pods_status_is_judged_as_pods_is(pods: dict[str, Any]) -> None:
    """Attempt 8: gpu-ids and the record rewritten through the status subresource."""
    before = CASES["worker"]
    forged = copy.deepcopy(before)
    forged["metadata"]["annotations"] |= {T + "gpu-ids": "gpu-v0", "gpupool.io/allocation": "{}"}
    verdict = evaluate(pods, operation="UPDATE", obj=forged, old=before, resource="pods/status")
    assert "written by tensor-fusion-scheduler" in (verdict or "")
    qos = copy.deepcopy(before)
    qos["metadata"]["annotations"][T + "qos"] = "critical"
    assert evaluate(pods, operation="UPDATE", obj=qos, old=before, resource="pods/status") is not None
    unlabelled = copy.deepcopy(before)
    unlabelled["metadata"]["labels"] = {}
    assert evaluate(pods, operation="UPDATE", obj=unlabelled, old=before, resource="pods/status") is not None
    status_only = copy.deepcopy(before)
    status_only["status"] = {"phase": "Running"}
    assert evaluate(pods, operation="UPDATE", obj=status_only, old=before, resource="pods/status") is None


def test_the_relay_may_write_the_scheduler_owned_annotations_and_nothing_else(pods: dict[str, Any]) -> None:
    before = CASES["worker"]
    bound = copy.deepcopy(before)
    bound["metadata"]["annotations"] |= {T + "gpu-ids": "gpu-a0", "gpupool.io/allocation": "{}"}
    assert evaluate(pods, operation="UPDATE", obj=bound, old=before, username=RELAY) is None
    edits = {
        "qos": lambda p: p["metadata"]["annotations"].__setitem__(T + "qos", "critical"),
        "other-annotation": lambda p: p["metadata"]["annotations"].__setitem__("team", "x"),
        "drop-annotation": lambda p: p["metadata"]["annotations"].pop(T + "vram-limit"),
        "label": lambda p: p["metadata"]["labels"].__setitem__("app", "x"),
        "spec": lambda p: p["spec"].__setitem__("nodeName", "n"),
        "image": lambda p: p["spec"]["containers"][0].__setitem__("image", "evil"),
    }
    for name, edit in edits.items():
        after = copy.deepcopy(bound)
        edit(after)
        verdict = evaluate(pods, operation="UPDATE", obj=after, old=before, username=RELAY)
        assert "nothing else" in (verdict or "") or "fixed when it is created" in (verdict or ""), name
    assert evaluate(pods, operation="CREATE", obj=before, username=RELAY) is not None
    status = copy.deepcopy(before)
    status["status"] = {"conditions": [{"type": "PodScheduled", "status": "False"}]}
    assert (
        evaluate(pods, operation="UPDATE", obj=status, old=before, username=RELAY, resource="pods/status")
        is None
    )


def _node(taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "labels": {"zone": "a"}, "annotations": {}},
        "spec": {"providerID": "aws:///i-1", "taints": taints or []},
    }


USED_BY = {"key": T + "used-by", "value": "tensor-fusion", "effect": "PreferNoSchedule"}


def test_the_relay_may_only_add_or_remove_the_used_by_taint_on_a_node(nodes: dict[str, Any]) -> None:
    before = _node([{"key": "gpu", "effect": "NoSchedule"}])
    tainted = _node([{"key": "gpu", "effect": "NoSchedule"}, USED_BY])
    assert (
        evaluate(nodes, operation="UPDATE", obj=tainted, old=before, username=RELAY, resource="nodes") is None
    )
    assert (
        evaluate(nodes, operation="UPDATE", obj=before, old=tainted, username=RELAY, resource="nodes") is None
    )
    edits = {
        "other-taint": lambda n: n["spec"]["taints"].append({"key": "x", "effect": "NoExecute"}),
        "drop-taint": lambda n: n["spec"]["taints"].pop(0),
        "cordon": lambda n: n["spec"].__setitem__("unschedulable", True),
        "label": lambda n: n["metadata"]["labels"].__setitem__("zone", "b"),
        "annotation": lambda n: n["metadata"]["annotations"].__setitem__("x", "y"),
        "provider": lambda n: n["spec"].__setitem__("providerID", "aws:///i-2"),
    }
    for name, edit in edits.items():
        after = copy.deepcopy(before)
        edit(after)
        verdict = evaluate(nodes, operation="UPDATE", obj=after, old=before, username=RELAY, resource="nodes")
        assert "used-by taint" in (verdict or ""), name
    cordon = copy.deepcopy(before)
    cordon["spec"]["unschedulable"] = True
    assert evaluate(nodes, operation="UPDATE", obj=cordon, old=before, resource="nodes") is None  # others


def test_the_relay_may_set_the_usable_gpus_label_to_a_count_and_nothing_else(nodes: dict[str, Any]) -> None:
    """kube-scheduler's cue that a node's GPUs changed (gpupool.core.allocator.usable_gpus): the
    relay sets it to a count or removes it; any other label, or any other value, is refused."""
    before = _node()
    labelled = _node()
    labelled["metadata"]["labels"]["gpupool.io/usable-gpus"] = "8"
    recounted = copy.deepcopy(labelled)
    recounted["metadata"]["labels"]["gpupool.io/usable-gpus"] = "1"
    for old, new in ((before, labelled), (labelled, recounted), (labelled, before)):
        assert evaluate(nodes, operation="UPDATE", obj=new, old=old, username=RELAY, resource="nodes") is None
    refused = {
        "not a count": "lots",
        "zero": "0",
        "leading zero": "08",
        "too large": "99999",
        "empty": "",
    }
    for name, value in refused.items():
        after = copy.deepcopy(before)
        after["metadata"]["labels"]["gpupool.io/usable-gpus"] = value
        verdict = evaluate(nodes, operation="UPDATE", obj=after, old=before, username=RELAY, resource="nodes")
        assert "usable-gpus" in (verdict or ""), name
    smuggled = {
        "another label too": lambda n: n["metadata"]["labels"].__setitem__("zone", "b"),
        "a label dropped": lambda n: n["metadata"]["labels"].pop("zone"),
        "a label added": lambda n: n["metadata"]["labels"].__setitem__("gpupool.io/usable-gpus-2", "1"),
    }
    for name, edit in smuggled.items():
        after = copy.deepcopy(labelled)
        edit(after)
        verdict = evaluate(nodes, operation="UPDATE", obj=after, old=before, username=RELAY, resource="nodes")
        assert "usable-gpus" in (verdict or ""), name
