"""One definition of "this pod asks gpupool for GPUs" (issue 33, attempts 2 and 3), end to end
through the relay: the webhook refuses a stranger that asks for `tensor-fusion.ai/index_*` or names
tensor-fusion-scheduler, the extender's filter and bind refuse it if it arrives anyway (created
before the upgrade, or in a namespace the webhook does not see), every pod bound carries its
allocation record, and the device plugin serves only a pod the same predicate accepts. The chart's
pod guard evaluates the same rule in CEL: tests/unit/test_chart_pod_guard.py.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from gpupool.core.model.foreign import Pod
from gpupool.core.vocabulary.pods import asks_gpupool_for_gpus, may_use_the_gpu_scheduler
from gpupool.scheduler.admission import Denial
from gpupool.scheduler.extender import ExtenderArgs, handle_filter
from gpupool.scheduler.pod_record import ANNOTATION_ALLOCATION
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.ports import BindFailed

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, T, gpu_model, pool_model, tf_pod


def _hub() -> tuple[SchedulerHub, FakeWriter]:
    writer = FakeWriter()
    hub = SchedulerHub(writer)
    hub.apply_pool(pool_model())
    hub.apply_gpu(gpu_model("a-0", "a", available_tflops="100"))
    return hub, writer


def _stranger() -> dict[str, Any]:
    """Attempt 2: no enabled label, no GPU annotations, the scheduler, an index resource, a node."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "squatter", "namespace": "evil", "uid": "uid-squatter", "annotations": {}},
        "spec": {
            "schedulerName": "tensor-fusion-scheduler",
            "nodeSelector": {"kubernetes.io/hostname": "a"},
            "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {T + "index_0": "1"}}}],
        },
    }


def _dedicated_alone() -> dict[str, Any]:
    """Attempt 3: labelled, `dedicated-gpu: "true"` and nothing else."""
    pod = tf_pod("whole", namespace="evil")
    pod["metadata"]["annotations"] = {T + "dedicated-gpu": "true"}
    return pod


def test_the_predicate_tells_gpu_pods_native_pods_and_strangers_apart() -> None:
    assert asks_gpupool_for_gpus(Pod.model_validate(tf_pod("w")))
    assert asks_gpupool_for_gpus(Pod.model_validate(_dedicated_alone()))
    unlabelled = tf_pod("u")
    unlabelled["metadata"]["labels"] = {}
    assert not asks_gpupool_for_gpus(Pod.model_validate(unlabelled))
    assert not may_use_the_gpu_scheduler(Pod.model_validate(_stranger()))
    native = _stranger()
    native["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1"
    assert may_use_the_gpu_scheduler(Pod.model_validate(native))
    assert not asks_gpupool_for_gpus(Pod.model_validate(native))


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda pod: None, "index_"),
        (lambda pod: pod["spec"]["containers"][0]["resources"].clear(), "names tensor-fusion-scheduler"),
        (lambda pod: pod["spec"].pop("schedulerName"), "index_"),
    ],
    ids=["index-and-scheduler", "scheduler-only", "index-only"],
)
def test_the_webhook_refuses_a_stranger_asking_for_index_resources_or_the_scheduler(
    change: Any, says: str
) -> None:
    hub, _ = _hub()
    pod = _stranger()
    change(pod)
    with pytest.raises(Denial, match=says):
        hub.admit(pod, "evil")


def test_a_stranger_that_got_past_admission_is_never_placed_nor_bound() -> None:
    hub, writer = _hub()
    pod = _stranger()
    writer.add(pod)
    answer = handle_filter(
        hub.allocator, ExtenderArgs(pod=pod, node_names=["a"], nodes=None), default_pool=hub.default_pool
    )
    assert answer["NodeNames"] == [] and "not gpupool for GPUs" in answer["FailedAndUnresolvableNodes"]["a"]
    with pytest.raises(BindFailed, match="does not ask gpupool for GPUs"):
        hub.bind("evil", "squatter", "uid-squatter", "a")
    assert writer.pods["evil/squatter"]["spec"].get("nodeName") is None
    assert hub.allocator.state.allocations == {}


def test_dedicated_alone_is_bound_with_its_gpus_and_record() -> None:
    hub, writer = _hub()
    mutation = hub.admit(copy.deepcopy(_dedicated_alone()), "evil")
    assert mutation.migrated
    pod = _dedicated_alone()
    writer.add(pod)
    allocation = hub.bind("evil", "whole", "uid-whole", "a")
    assert allocation is not None and allocation.gpus == ("a-0",) and allocation.dedicated
    notes = writer.pods["evil/whole"]["metadata"]["annotations"]
    assert notes[T + "gpu-ids"] == "a-0" and ANNOTATION_ALLOCATION in notes
    assert writer.pods["evil/whole"]["spec"]["nodeName"] == "a"
