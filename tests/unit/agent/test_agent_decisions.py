"""The agent's pure decisions, table by table: cgroup paths → pods, QoS compute targets, the VRAM
watch's grace and actions, the guardian's replay, worker shares and NVML product names → models."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpupool.core.model.foreign import Pod
from gpupool.scheduler.pod_record import record_annotations
from gpupool_incluster.agent.compute_plan import ShareRequest, plan_targets
from gpupool_incluster.agent.discovery import catalog_model, gpu_object_name, model_tflops
from gpupool_incluster.agent.guardian import replay, resume
from gpupool_incluster.agent.procs import parse_cgroup
from gpupool_incluster.agent.vram import VramUse, VramWatch
from gpupool_incluster.agent.workers import Worker, shares, worker_from_pod

UID = "1a2b3c4d-5e6f-4a0b-8c9d-0e1f2a3b4c5d"
SLICE = UID.replace("-", "_")
CID = "ab" * 32


@pytest.mark.parametrize(
    ("text", "container"),
    [
        (
            f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{SLICE}.slice/"
            f"cri-containerd-{CID}.scope\n",
            CID,
        ),
        (f"0::/kubepods/besteffort/pod{UID}/{CID}\n", CID),
        (f"12:memory:/kubepods/burstable/pod{UID}/{CID}\n11:cpu:/kubepods/burstable/pod{UID}/{CID}\n", CID),
        (f"0::/kubepods.slice/kubepods-pod{SLICE}.slice/crio-{CID}.scope\n", CID),
        (f"0::/kubepods.slice/kubepods-pod{SLICE}.slice\n", None),
    ],
    ids=["v2-systemd-containerd", "v2-cgroupfs", "v1-cgroupfs", "v2-systemd-crio", "pod-level"],
)
def test_cgroup_paths_name_the_pod(text: str, container: str | None) -> None:
    found = parse_cgroup(text)
    assert found is not None and found.pod_uid == UID and found.container_id == container


@pytest.mark.parametrize(
    "text",
    ["0::/user.slice/user-1000.slice/session-3.scope\n", "0::/system.slice/containerd.service\n", "", "junk"],
)
def test_processes_outside_pods_are_nobodys(text: str) -> None:
    assert parse_cgroup(text) is None


@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        # Requests fit: everyone may run up to its limit, even when limits add up past 100.
        ([("a", 1, 10, 25), ("b", 1, 10, 50), ("c", 1, 10, 75)], {"a": 25, "b": 50, "c": 75}),
        # Requests exceed the GPU: critical keeps its request, low yields what is left.
        ([("crit", 3, 60, 100), ("low", 0, 60, 100)], {"crit": 60, "low": 40}),
        # Burst goes by QoS too once the promises are over the GPU.
        ([("high", 2, 50, 80), ("med", 1, 30, 60), ("low", 0, 40, 90)], {"high": 50, "med": 30, "low": 20}),
        # Equal QoS: by name, deterministic.
        ([("b", 1, 70, 70), ("a", 1, 70, 70)], {"a": 70, "b": 30}),
        ([], {}),
    ],
)
def test_plan_targets(workers: list[tuple[str, int, float, float]], expected: dict[str, float]) -> None:
    planned = plan_targets([ShareRequest(k, r, q, lim) for k, r, q, lim in workers])
    assert planned == pytest.approx(expected)


def _use(used: int, *, key: str = "w", limit: int = 100) -> list[VramUse]:
    return [VramUse(key, "gpu-0", limit, ((11, used - used // 4), (12, used // 4)))]


def test_vram_watch_warns_then_acts_after_the_grace_and_forgets_recoveries() -> None:
    watch = VramWatch(grace_samples=2)
    assert watch.check(_use(90)) == []
    first = watch.check(_use(120))
    assert [a.kind for a in first] == ["warn"] and watch.suspects
    second = watch.check(_use(130))
    assert [(a.kind, a.pid) for a in second] == [("kill", 11)] and not watch.suspects
    assert "over its vram-limit of 100 bytes" in second[0].message
    assert [a.kind for a in watch.check(_use(120))] == ["warn"]  # a fresh grace after acting
    assert watch.check(_use(50)) == []  # back under: forgotten
    assert [a.kind for a in watch.check(_use(120))] == ["warn"]
    assert watch.check(_use(10**12, limit=0)) == []  # no limit: never enforced


def test_vram_watch_evict_policy_and_bad_grace() -> None:
    watch = VramWatch(policy="evict", grace_samples=1)
    assert [a.kind for a in watch.check(_use(200))] == ["warn", "evict"]
    with pytest.raises(ValueError, match="at least 1"):
        VramWatch(grace_samples=0)


def test_guardian_replay_keeps_only_pids_still_stopped() -> None:
    lines = ["S 10 500\n", "S 11 501\n", "C 10 500\n", "S 12", "bogus\n", "S x\n", "C 99\n"]
    assert replay(lines) == {11: "501", 12: "-"}


def test_guardian_resumes_only_pids_that_still_name_the_process_it_stopped() -> None:
    sent: list[int] = []
    starts = {11: "501", 12: "999", 13: None}  # 12 was reused by another process; 13 is gone
    resumed = resume(
        {11: "501", 12: "502", 13: "503", 14: "-"},
        start_of=starts.get,
        kill=lambda pid, sig: sent.append(pid),
    )
    assert resumed == sent == [11, 14]  # "-": the start was unknown when stopped (older agent)


def _pod(annotations: dict[str, str], labels: dict[str, str] | None = None, *, placed: bool = True) -> Pod:
    """A pod on node n; `placed`: with the record the relay's bind writes for its gpu-ids."""
    unrecorded = Pod.model_validate(
        {
            "metadata": {
                "name": "p",
                "namespace": "ns",
                "uid": UID,
                "labels": {"tensor-fusion.ai/enabled": "true"} if labels is None else labels,
                "annotations": annotations,
            },
            "spec": {"nodeName": "n"},
        }
    )
    ids = annotations.get("tensor-fusion.ai/gpu-ids")
    if not placed or ids is None:
        return unrecorded
    notes = {**annotations, **record_annotations(unrecorded, "n", ids.split(","))}
    return unrecorded.model_copy(
        update={"metadata": unrecorded.metadata.model_copy(update={"annotations": notes})}
    )


def test_only_scheduled_tensorfusion_pods_are_workers() -> None:
    ids = {"tensor-fusion.ai/gpu-ids": "gpu-a,gpu-b"}
    worker, problem = worker_from_pod(
        _pod({**ids, "tensor-fusion.ai/tflops-limit": "78", "tensor-fusion.ai/qos": "low"}), "n"
    )
    assert problem is None and worker is not None
    assert (worker.gpus, worker.qos, worker.tflops_limit, worker.rank) == (
        ("gpu-a", "gpu-b"),
        "low",
        78_000,
        0,
    )
    assert worker_from_pod(_pod({"tensor-fusion.ai/tflops-limit": "78"}), "n") == (None, None)  # never placed
    assert worker_from_pod(_pod(ids, labels={}), "n") == (None, None)  # not a TensorFusion pod
    none, why = worker_from_pod(_pod({**ids, "tensor-fusion.ai/vram-limit": "lots"}), "n")
    assert none is None and why is not None and "vram-limit" in why


@pytest.mark.parametrize(
    ("worker", "tflops", "expected"),
    [
        (
            Worker("u", "n", "p", ("g",), tflops_request=39_000, tflops_limit=78_000),
            Decimal(312),
            (12.5, 25.0),
        ),
        (Worker("u", "n", "p", ("g",), percent_request=20.0, percent_limit=50.0), Decimal(312), (20.0, 50.0)),
        (Worker("u", "n", "p", ("g",), tflops_request=10_000, tflops_limit=10_000), None, (100.0, 100.0)),
        (Worker("u", "n", "p", ("g",), dedicated=True, tflops_limit=1), Decimal(312), (100.0, 100.0)),
        (
            Worker("u", "n", "p", ("g",), tflops_request=500_000, tflops_limit=900_000),
            Decimal(312),
            (100.0, 100.0),
        ),
    ],
    ids=["tflops", "percent", "unknown-gpu", "dedicated", "capped"],
)
def test_shares(worker: Worker, tflops: Decimal | None, expected: tuple[float, float]) -> None:
    assert shares(worker, tflops) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("product", "model"),
    [
        ("NVIDIA A100-SXM4-40GB", "A100"),
        ("NVIDIA A10G", "A10G"),
        ("Tesla T4", "T4"),
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA L40S", "L40S"),
        ("Tesla V100-SXM2-16GB", "V100"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ],
)
def test_catalog_model_from_nvml_names(product: str, model: str) -> None:
    assert catalog_model(product) == model


def test_model_tflops_and_object_names() -> None:
    assert model_tflops("A100") == Decimal(312) and model_tflops("RTX 4090") is None
    assert gpu_object_name("GPU-8B2C0f3a-1111") == "gpu-8b2c0f3a-1111"
