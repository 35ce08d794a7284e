"""GPUResourceQuota for every request form (issue 33, attempts 4 and 7), through the relay's hub: the
webhook and the extender's bind convert TFLOPS, compute-percent, dedicated, gpu-count and VRAM by
the largest GPU known and hold each pod to `single` (the `compute` bounds included) and the namespace
to `total`; a refusal names the pod's own amounts and the bound, never what any namespace uses —
neither in the webhook's denial nor in /api/simulate-schedule's answer.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from gpupool.core.model.quota import GPUResourceQuota
from gpupool.scheduler.admission import Denial
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.ports import BindFailed

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, T, gpu_model, pool_model, tf_pod


def _quota(namespace: str, spec: dict[str, Any]) -> GPUResourceQuota:
    return GPUResourceQuota.model_validate(
        {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUResourceQuota",
            "metadata": {"name": "q", "namespace": namespace},
            "spec": spec,
        }
    )


def _hub(spec: dict[str, Any], *, gpus: bool = True) -> tuple[SchedulerHub, FakeWriter]:
    writer = FakeWriter()
    hub = SchedulerHub(writer)
    hub.apply_pool(pool_model())
    if gpus:
        for i in range(2):
            hub.apply_gpu(gpu_model(f"a-{i}", "a", tflops="100", vram="40Gi", index=i))
    hub.apply_quota(_quota("team", spec))
    return hub, writer


def _pod(name: str, notes: dict[str, str]) -> dict[str, Any]:
    pod = tf_pod(name)
    pod["metadata"]["annotations"] = {T + "gpupool": "shared", **notes}
    return pod


SINGLE_20_TFLOPS = {"single": {"maxRequests": {"tflops": "20"}, "maxLimits": {"tflops": "20"}}}
FORMS = {
    "compute-percent 100": {T + "compute-percent-request": "100", T + "vram-request": "1Gi"},
    "dedicated": {T + "dedicated-gpu": "true"},
    "tflops 15 x 2 GPUs": {T + "tflops-request": "15", T + "vram-request": "1Gi", T + "gpu-count": "2"},
    "tflops limit 30": {T + "tflops-request": "10", T + "tflops-limit": "30", T + "vram-request": "1Gi"},
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_request_form_is_held_to_the_per_pod_tflops_bound(form: str) -> None:
    hub, writer = _hub(SINGLE_20_TFLOPS)
    with pytest.raises(Denial, match=r"above single\.max(Requests|Limits)\.tflops 20 TFLOPS"):
        hub.admit(_pod("p", FORMS[form]), "team")
    # Admitted before any GPU was known (or around the webhook): the bind refuses it the same way.
    writer.add(_pod("p", FORMS[form]))
    with pytest.raises(BindFailed, match=r"above single\.max(Requests|Limits)\.tflops 20 TFLOPS"):
        hub.bind("team", "p", "uid-p", "a")
    assert hub.allocator.state.allocations == {}


def test_within_the_bound_every_form_is_admitted_and_bound() -> None:
    hub, writer = _hub(SINGLE_20_TFLOPS)
    fits = _pod("p", {T + "compute-percent-request": "20", T + "vram-request": "1Gi"})
    assert hub.admit(fits, "team").migrated
    writer.add(_pod("p", {T + "compute-percent-request": "20", T + "vram-request": "1Gi"}))
    assert hub.bind("team", "p", "uid-p", "a") is not None


def test_the_per_pod_compute_bound_is_read_for_percent_and_tflops_pods() -> None:
    spec = {"single": {"maxRequests": {"compute": "50"}, "maxLimits": {"compute": "60"}}}
    hub, _ = _hub(spec)
    with pytest.raises(Denial, match=r"above single\.maxRequests\.compute 50 % of a GPU"):
        hub.admit(_pod("p", {T + "compute-percent-request": "70", T + "vram-request": "1Gi"}), "team")
    with pytest.raises(
        Denial, match=r"80 % of a GPU \(TFLOPS, 1 GPU\(s\)\), above single\.maxRequests\.compute"
    ):
        hub.admit(_pod("p", {T + "tflops-request": "80", T + "vram-request": "1Gi"}), "team")
    with pytest.raises(Denial, match=r"above single\.maxLimits\.compute 60"):
        hub.admit(
            _pod(
                "p",
                {
                    T + "compute-percent-request": "40",
                    T + "compute-percent-limit": "90",
                    T + "vram-request": "1Gi",
                },
            ),
            "team",
        )
    with pytest.raises(Denial, match=r"single\.maxRequests\.compute"):
        hub.admit(_pod("p", {T + "dedicated-gpu": "true"}), "team")
    assert hub.admit(
        _pod("p", {T + "compute-percent-request": "50", T + "vram-request": "1Gi"}), "team"
    ).migrated


def test_the_per_pod_vram_bound_counts_every_gpu_and_dedicated_gpus_whole() -> None:
    hub, _ = _hub({"single": {"maxRequests": {"vram": "30Gi"}}})
    with pytest.raises(Denial, match=r"40Gi \(TFLOPS, 2 GPU\(s\)\), above single\.maxRequests\.vram 30Gi"):
        hub.admit(
            _pod("p", {T + "tflops-request": "1", T + "vram-request": "20Gi", T + "gpu-count": "2"}), "team"
        )
    with pytest.raises(Denial, match=r"40Gi \(dedicated GPUs"):
        hub.admit(_pod("p", {T + "dedicated-gpu": "true"}), "team")


def test_a_percent_pod_admitted_before_any_gpu_is_known_is_judged_at_bind() -> None:
    hub, writer = _hub(SINGLE_20_TFLOPS, gpus=False)
    assert hub.admit(_pod("p", FORMS["compute-percent 100"]), "team").migrated
    hub.apply_gpu(gpu_model("a-0", "a", tflops="100"))
    writer.add(_pod("p", FORMS["compute-percent 100"]))
    with pytest.raises(BindFailed, match="single"):
        hub.bind("team", "p", "uid-p", "a")


def test_the_namespace_total_counts_percent_pods_and_a_refusal_names_only_the_pods_numbers() -> None:
    hub, writer = _hub({"total": {"requests": {"tflops": "150"}}})
    for name in ("first", "second"):
        writer.add(_pod(name, {T + "compute-percent-request": "70", T + "vram-request": "1Gi"}))
        hub.bind("team", name, f"uid-{name}", "a")  # 70 + 70 TFLOPS held
    with pytest.raises(Denial) as refused:
        hub.admit(_pod("third", {T + "compute-percent-request": "20", T + "vram-request": "1Gi"}), "team")
    message = str(refused.value)
    assert "requests.tflops 20 TFLOPS" in message and "150 TFLOPS" in message
    assert "140" not in message and "160" not in message  # the namespace's use, before or after


def test_simulate_schedule_does_not_tell_another_namespaces_use() -> None:
    hub, writer = _hub({"total": {"requests": {"tflops": "150"}, "maxWorkers": 1}})
    writer.add(_pod("held", {T + "tflops-request": "70", T + "vram-request": "1Gi", T + "gpu-count": "2"}))
    hub.bind("team", "held", "uid-held", "a")
    probe = _pod("probe", {T + "tflops-request": "11", T + "vram-request": "1Gi"})
    probe["metadata"]["namespace"] = "team"
    with pytest.raises(Denial) as refused:
        hub.simulate(probe, "team")
    message = str(refused.value)
    assert "140" not in message and "151" not in message and "workers running" not in message
