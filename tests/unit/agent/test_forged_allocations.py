"""The device plugin's Allocate and the agent's compute plan against a hostile tenant.

A tenant's pod that names victim GPUs in `tensor-fusion.ai/gpu-ids` with `qos: critical`, carries a
record copied from another pod or written for another node, or whose annotations were changed after
the relay recorded its allocation: Allocate refuses it — and never, while it is pending, a recorded
pod's Allocate beside it (issue 33) — and the agent enforces only what the relay recorded. Before the tenant-
isolation change (issue 22, Why 1) the forged pod was given all four GPUs and the compute plan gave it
100 % and the victim the 1 % floor.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from gpupool.core.model.foreign import Pod
from gpupool.scheduler.pod_record import ANNOTATION_ALLOCATION, record_annotations
from gpupool_incluster.agent.compute_plan import ShareRequest, plan_targets
from gpupool_incluster.agent.deviceplugin.allocate import AllocationRefused, resolve_grant
from gpupool_incluster.agent.workers import Worker, shares, worker_from_pod

T = "tensor-fusion.ai/"
NODE = "node-a"
VICTIM_GPUS = ["gpu-v0", "gpu-v1", "gpu-v2", "gpu-v3"]
UUIDS = {name: f"GPU-{name.upper()}" for name in [*VICTIM_GPUS, "gpu-a0"]}
SIZES = {T + "tflops-request": "50", T + "tflops-limit": "100", T + "vram-limit": "8Gi", T + "qos": "medium"}


def pod(name: str, annotations: dict[str, str], *, created: str, phase: str = "Pending") -> Pod:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": f"ns-{name}",
            "uid": f"00000000-0000-4000-8000-{abs(hash(name)) % 10**12:012d}",
            "creationTimestamp": created,
            "labels": {T + "enabled": "true"},
            "annotations": annotations,
        },
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "c", "resources": {"limits": {T + "index_0": "1"}}}],
        },
        "status": {"phase": phase},
    }
    return Pod.model_validate(body)


def bound(unbound: Pod, gpus: list[str], node: str = NODE) -> Pod:
    """The pod after the relay's bind: gpu-ids and the allocation record."""
    notes = {**unbound.metadata.annotations, **record_annotations(unbound, node, gpus)}
    return unbound.model_copy(update={"metadata": unbound.metadata.model_copy(update={"annotations": notes})})


def edited(target: Pod, **changes: str) -> Pod:
    notes = {**target.metadata.annotations, **changes}
    return target.model_copy(update={"metadata": target.metadata.model_copy(update={"annotations": notes})})


def victim() -> Pod:
    return bound(pod("victim", dict(SIZES), created="2026-01-01T00:00:00Z"), VICTIM_GPUS[:1])


def attacker(extra: dict[str, str] | None = None, *, phase: str = "Pending") -> Pod:
    forged = {**SIZES, T + "gpu-ids": ",".join(VICTIM_GPUS), T + "qos": "critical", **(extra or {})}
    return pod("attacker", forged, created="2026-01-01T00:00:05Z", phase=phase)


def running(target: Pod) -> Pod:
    return target.model_copy(update={"status": target.status.model_copy(update={"phase": "Running"})})


def grant(pods: list[Pod], allocated: set[str] | None = None) -> dict[str, str]:
    return resolve_grant(
        resource=T + "index_0",
        device_count=1,
        pods=pods,
        already_allocated=allocated or set(),
        uuid_by_gpu=UUIDS,
        node=NODE,
    ).envs


def test_a_pod_naming_victim_gpus_without_a_record_gets_nothing() -> None:
    with pytest.raises(AllocationRefused, match=r"pod ns-attacker/attacker has no allocation recorded"):
        grant([attacker()])


def test_an_unrecorded_claimant_never_blocks_a_recorded_pods_allocate() -> None:
    """Issue 33, attempt 2c: a squatter pending on the node made the victim's Allocate fail for good."""
    envs = grant([victim(), attacker()])
    assert (envs["NVIDIA_VISIBLE_DEVICES"], envs["GPUPOOL_GPU_IDS"]) == ("GPU-GPU-V0", "gpu-v0")
    older = pod("attacker", {**SIZES, T + "gpu-ids": ",".join(VICTIM_GPUS)}, created="2025-12-31T00:00:00Z")
    assert grant([older, victim()])["GPUPOOL_GPU_IDS"] == "gpu-v0"  # however long it has waited
    # The victim's grant may have been started in the squatter's container (the agent kills its GPU
    # processes): the victim, still pending, is granted again rather than refused.
    assert (
        grant([victim(), attacker()], allocated={victim().metadata.uid or ""})["GPUPOOL_GPU_IDS"] == "gpu-v0"
    )


def test_an_unrecorded_claimant_alone_is_refused() -> None:
    with pytest.raises(AllocationRefused, match=r"pod ns-attacker/attacker has no allocation recorded"):
        grant([attacker()])
    with pytest.raises(AllocationRefused, match=r"no allocation recorded"):  # the victim's is spent
        grant([running(victim()), attacker()])
    with pytest.raises(AllocationRefused, match=r"no pending gpupool worker"):  # nothing to grant again
        grant([victim()], allocated={victim().metadata.uid or ""})


def test_a_record_copied_from_the_victim_is_refused() -> None:
    stolen = victim().metadata.annotations[ANNOTATION_ALLOCATION]
    with pytest.raises(AllocationRefused, match=r"recorded allocation is for pod UID .*, not this pod"):
        grant([attacker({ANNOTATION_ALLOCATION: stolen, T + "gpu-ids": "gpu-v0"})])


def test_a_record_for_another_node_is_refused() -> None:
    elsewhere = bound(pod("victim", dict(SIZES), created="2026-01-01T00:00:00Z"), ["gpu-v0"], node="node-b")
    with pytest.raises(AllocationRefused, match=r"recorded for node 'node-b', not 'node-a'"):
        grant([elsewhere])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {T + "gpu-ids": ",".join(VICTIM_GPUS)},
            r"gpu-ids names gpu-v0,gpu-v1,gpu-v2,gpu-v3, the scheduler recorded gpu-v0",
        ),
        (
            {T + "qos": "critical"},
            r"annotation tensor-fusion\.ai/qos is 'critical', the scheduler placed it with 'medium'",
        ),
        ({T + "tflops-limit": "1000"}, r"tflops-limit is '1000'"),
        ({T + "vram-limit": "80Gi"}, r"vram-limit is '80Gi'"),
    ],
)
def test_annotations_changed_after_the_record_are_refused_by_allocate(
    change: dict[str, str], message: str
) -> None:
    with pytest.raises(AllocationRefused, match=message):
        grant([edited(victim(), **change)])


def test_allocate_hands_out_the_recorded_limits() -> None:
    envs = grant([victim()])
    assert (envs["GPUPOOL_QOS"], envs["GPUPOOL_TFLOPS_LIMIT"]) == ("medium", "100")
    assert envs["GPUPOOL_VRAM_LIMIT_BYTES"] == str(8 * 1024**3)


def test_the_agent_enforces_the_record_not_the_edited_annotations() -> None:
    tampered = edited(
        victim(), **{T + "qos": "critical", T + "tflops-limit": "1000", T + "gpu-ids": "gpu-v1"}
    )
    worker, problem = worker_from_pod(tampered, NODE)
    assert worker is not None and problem is not None and "enforcing the recorded allocation" in problem
    assert (worker.qos, worker.tflops_limit, worker.gpus) == ("medium", 100_000, ("gpu-v0",))


def test_a_forged_critical_pod_takes_nothing_from_the_victim_in_the_compute_plan() -> None:
    workers: list[Worker] = []
    for candidate in (running(victim()), attacker(phase="Running")):
        worker, _ = worker_from_pod(candidate, NODE)
        if worker is not None:
            workers.append(worker)
    assert [w.name for w in workers] == ["victim"]  # the forged pod is not a worker: never planned
    on_gpu = [ShareRequest(w.uid, w.rank, *shares(w, Decimal(100))) for w in workers]
    assert plan_targets(on_gpu) == {workers[0].uid: 100.0}


def test_a_pod_without_the_enabled_label_cannot_borrow_a_worker_record() -> None:
    stray = victim()
    stray = stray.model_copy(update={"metadata": stray.metadata.model_copy(update={"labels": {}})})
    with pytest.raises(AllocationRefused, match=r"not a TensorFusion worker"):
        grant([stray])
