"""One suite, two implementations of the Cluster port: KubeCluster on the embedded API server and the
service tests' FakeCluster, so the fake the service is tested against stays honest.

Covers the contract points the service relies on: create returns uid and resourceVersion and
refuses a duplicate; status and metadata writes with a stale resourceVersion are Conflict and
change nothing; a finalizer holds a deleted claim until it is removed; pool spec, annotation
and status writes; the provisioning Lease (one holder, expiry, release by the holder only);
NotFound for missing objects; node and GPUNode summaries as a `kubectl get` row holds them; nodes picked
by labels and pods by `spec.nodeName` ("" for none) and `status.phase`, in the API server's order;
PodDisruptionBudgets with their selector and `status.disruptionsAllowed`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from gpupool.adapters.kube.auth import KubeAccess, build_api_client
from gpupool.adapters.kube.cluster import KubeCluster
from gpupool.core.model.base import OwnerReference
from gpupool.core.model.constants import FINALIZER
from gpupool.core.model.foreign import Node, Pod, PodDisruptionBudget
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaimStatus
from gpupool.core.model.pool import GPUPoolStatus
from gpupool.core.quantity import Quantity
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.service.errors import AlreadyExists, Conflict, NotFound
from gpupool.service.ports import ClaimMetadataPatch
from tests.service.fakes import FakeClock, FakeCluster

from .conftest import FIXED_NOW, make_claim, make_pool

MINUTE = timedelta(minutes=1)


@pytest.fixture(params=["embedded-api", "fake"])
def port(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "fake":
        yield FakeCluster(FakeClock(FIXED_NOW))
        return
    with EmbeddedKubeAPI() as api:
        access = KubeAccess(mode="kubeconfig", kubeconfig_path=str(api.kubeconfig_path))
        yield KubeCluster(build_api_client(access), now=lambda: FIXED_NOW)


def _version(obj: Any) -> str:
    version: str = obj.metadata.resource_version or ""
    return version


def test_create_returns_identity_and_refuses_a_duplicate(port: Any) -> None:
    created = port.create_claim(make_claim(finalizers=[FINALIZER]))
    assert created.metadata.uid and _version(created)
    assert created.metadata.finalizers == [FINALIZER]
    assert port.get_claim("pool-a-x1").metadata.uid == created.metadata.uid
    with pytest.raises(AlreadyExists):
        port.create_claim(make_claim())


def test_stale_status_write_is_a_conflict_and_changes_nothing(port: Any) -> None:
    stale = _version(port.create_claim(make_claim()))
    port.update_claim_status("pool-a-x1", GPUNodeClaimStatus(phase="Creating"), resource_version=stale)
    with pytest.raises(Conflict):
        port.update_claim_status("pool-a-x1", GPUNodeClaimStatus(phase="Failed"), resource_version=stale)
    with pytest.raises(Conflict):
        port.patch_claim_metadata("pool-a-x1", ClaimMetadataPatch(labels={"a": "b"}, resource_version=stale))
    current = port.get_claim("pool-a-x1")
    assert current.status.phase == "Creating" and "a" not in current.metadata.labels


def test_finalizer_holds_a_deleted_claim(port: Any) -> None:
    port.create_claim(make_claim(finalizers=[FINALIZER]))
    port.delete_claim("pool-a-x1")
    port.delete_claim("pool-a-x1")
    held = port.get_claim("pool-a-x1")
    assert held.metadata.deletion_timestamp is not None
    port.patch_claim_metadata("pool-a-x1", ClaimMetadataPatch(finalizers=(), resource_version=_version(held)))
    with pytest.raises(NotFound):
        port.get_claim("pool-a-x1")
    with pytest.raises(NotFound):
        port.delete_claim("pool-a-x1")


def test_claim_without_finalizer_goes_at_once(port: Any) -> None:
    port.create_claim(make_claim())
    port.delete_claim("pool-a-x1")
    assert port.list_claims() == []


def test_pool_writes(port: Any) -> None:
    created = port.create_pool(make_pool())
    with pytest.raises(AlreadyExists):
        port.create_pool(make_pool())
    status = port.update_pool_status(
        "pool-a", GPUPoolStatus(phase="Running"), resource_version=_version(created)
    )
    with pytest.raises(Conflict):
        port.update_pool_status("pool-a", GPUPoolStatus(phase="Pending"), resource_version=_version(created))
    replaced = port.replace_pool_spec(
        make_pool(capacityConfig={"minResources": {"tflops": "10", "vram": "1Gi"}}),
        resource_version=_version(status),
    )
    assert replaced.spec.capacity_config is not None and replaced.status.phase == "Running"
    with pytest.raises(Conflict):
        port.replace_pool_spec(make_pool(), resource_version=_version(status))
    annotated = port.patch_pool_annotations("pool-a", {"k": "v"}, resource_version=_version(replaced))
    cleared = port.patch_pool_annotations("pool-a", {"k": None}, resource_version=_version(annotated))
    assert "k" not in cleared.metadata.annotations
    with pytest.raises(NotFound):
        port.get_pool("absent")


def test_lease_semantics(port: Any) -> None:
    assert port.try_acquire_lease("lease-a", holder="one", now=FIXED_NOW, duration=MINUTE)
    assert port.try_acquire_lease(
        "lease-a", holder="one", now=FIXED_NOW + timedelta(seconds=10), duration=MINUTE
    )
    assert not port.try_acquire_lease(
        "lease-a", holder="two", now=FIXED_NOW + timedelta(seconds=20), duration=MINUTE
    )
    port.release_lease("lease-a", holder="two")
    assert not port.try_acquire_lease(
        "lease-a", holder="two", now=FIXED_NOW + timedelta(seconds=30), duration=MINUTE
    )
    assert port.try_acquire_lease(
        "lease-a", holder="two", now=FIXED_NOW + timedelta(minutes=2), duration=MINUTE
    )
    port.release_lease("lease-a", holder="two")
    assert port.try_acquire_lease(
        "lease-a", holder="one", now=FIXED_NOW + timedelta(minutes=2), duration=MINUTE
    )


def test_missing_pod_eviction_is_not_found(port: Any) -> None:
    with pytest.raises(NotFound):
        port.evict_pod("default", "absent")


def test_replacing_a_pool_spec_keeps_finalizers_and_owners(port: Any) -> None:
    owner = {"apiVersion": "tensor-fusion.ai/v1", "kind": "TensorFusionCluster", "name": "demo", "uid": "u-1"}
    seeded = make_pool().model_copy(
        update={
            "metadata": make_pool().metadata.model_copy(
                update={
                    "labels": {"old": "1", "kept": "1"},
                    "finalizers": ["tensor-fusion.ai/finalizer"],
                    "owner_references": [OwnerReference.model_validate(owner)],
                }
            )
        }
    )
    created = port.create_pool(seeded)
    desired = make_pool(capacityConfig={"minResources": {"tflops": "10", "vram": "1Gi"}})
    desired = desired.model_copy(
        update={"metadata": desired.metadata.model_copy(update={"labels": {"kept": "2"}})}
    )
    replaced = port.replace_pool_spec(desired, resource_version=_version(created))
    assert replaced.metadata.labels == {"kept": "2"}
    assert replaced.metadata.finalizers == ["tensor-fusion.ai/finalizer"]
    assert [ref.name for ref in replaced.metadata.owner_references] == ["demo"]
    assert replaced.spec.capacity_config is not None


# ---- reads with the API server's selectors and the node summary --------------------------------
Put = Callable[[str, dict[str, Any]], None]


@pytest.fixture(params=["embedded-api", "fake"])
def seeded(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Put]]:
    """A port and a way to store a Node or Pod manifest behind it (as a kubelet or a controller would)."""
    if request.param == "fake":
        fake = FakeCluster(FakeClock(FIXED_NOW))
        models = {"Node": Node, "Pod": Pod, "GPUNode": GPUNode, "PodDisruptionBudget": PodDisruptionBudget}
        yield fake, lambda kind, manifest: fake.add(models[kind].model_validate(manifest))
        return
    with EmbeddedKubeAPI() as api:
        access = KubeAccess(mode="kubeconfig", kubeconfig_path=str(api.kubeconfig_path))
        namespaces = api.cluster.resolve("", "v1", "namespaces")
        api.cluster.create(namespaces, None, {"metadata": {"name": "ml"}})

        def put(kind: str, manifest: dict[str, Any]) -> None:
            if kind in ("GPUNode", "PodDisruptionBudget"):
                group, version, plural = (
                    ("tensor-fusion.ai", "v1", "gpunodes")
                    if kind == "GPUNode"
                    else ("policy", "v1", "poddisruptionbudgets")
                )
                rt = api.cluster.resolve(group, version, plural)
                body = {"apiVersion": f"{group}/{version}", "kind": kind, **manifest}
                namespace = manifest["metadata"].get("namespace") if kind != "GPUNode" else None
                stored = api.cluster.create(rt, namespace, {k: v for k, v in body.items() if k != "status"})
                if "status" in body:
                    name = stored["metadata"]["name"]
                    api.cluster.update(
                        rt, namespace or "", name, {**stored, "status": body["status"]}, subresource="status"
                    )
                return
            rt = api.cluster.resolve("", "v1", "nodes" if kind == "Node" else "pods")
            api.cluster.create(
                rt, manifest["metadata"].get("namespace", "default") if kind == "Pod" else None, manifest
            )

        yield KubeCluster(build_api_client(access), now=lambda: FIXED_NOW), put


def _node(name: str, ready: str | None, *, unschedulable: bool = False, **labels: str) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": ready}] if ready is not None else []
    conditions.append({"type": "MemoryPressure", "status": "False"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": unschedulable, "providerID": f"aws:///us-east-1a/i-{name}"},
        "status": {"conditions": conditions, "capacity": {"nvidia.com/gpu": "8"}},
    }


def _pod(name: str, node: str | None, namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def test_node_summaries_hold_what_a_table_row_holds(seeded: tuple[Any, Put]) -> None:
    port, put = seeded
    put("Node", _node("ready", "True", pool="a"))
    put("Node", _node("down", "False", unschedulable=True))
    put("Node", _node("lost", "Unknown", pool="a"))
    put("Node", _node("new", None))
    summaries = port.list_nodes(summary=True)
    assert [n.name for n in summaries] == ["down", "lost", "new", "ready"]
    seen = {
        n.name: ([(c.type, c.status) for c in n.status.conditions], n.spec.unschedulable) for n in summaries
    }
    assert seen == {
        "ready": ([("Ready", "True")], False),
        "down": ([("Ready", "False")], True),
        "lost": ([("Ready", "False")], False),
        "new": ([], False),
    }
    ready = next(n for n in summaries if n.name == "ready")
    assert ready.metadata.labels == {"pool": "a"} and ready.metadata.uid and ready.metadata.resource_version
    assert ready.metadata.creation_timestamp is not None
    assert ready.status.capacity == {} and ready.spec.provider_id is None  # not in a row
    full = next(n for n in port.list_nodes() if n.name == "ready")
    assert full.spec.provider_id == "aws:///us-east-1a/i-ready" and "nvidia.com/gpu" in full.status.capacity
    assert [n.name for n in port.list_nodes(labels={"pool": "a"})] == ["lost", "ready"]
    assert [n.name for n in port.list_nodes(summary=True, labels={"pool": "a"})] == ["lost", "ready"]


def test_pods_are_picked_by_node_and_phase(seeded: tuple[Any, Put]) -> None:
    port, put = seeded
    put("Pod", _pod("bound", "n1"))
    put("Pod", _pod("elsewhere", "n2"))
    put("Pod", _pod("waiting", None))
    put("Pod", _pod("a-job", "n1", namespace="ml"))

    def names(**selectors: str) -> list[tuple[str, str]]:
        return [(p.metadata.namespace, p.name) for p in port.list_pods(**selectors)]

    assert names(node_name="n1") == [("default", "bound"), ("ml", "a-job")]
    assert names(node_name="") == [("default", "waiting")]
    assert names(node_name="", phase="Pending") == [("default", "waiting")]  # Pending: set on create
    assert names(phase="Running") == []
    assert len(names()) == 4


def test_pod_disruption_budgets_are_listed_with_selector_and_allowance(seeded: tuple[Any, Put]) -> None:
    port, put = seeded
    for name, namespace, allowed in (("a-web", "default", 1), ("b-train", "ml", 0)):
        put(
            "PodDisruptionBudget",
            {
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": name}}},
                "status": {
                    "disruptionsAllowed": allowed,
                    "currentHealthy": 2,
                    "desiredHealthy": 1,
                    "expectedPods": 2,
                },
            },
        )
    found = [
        (p.metadata.namespace, p.name, p.spec.selector.match_labels, p.status.disruptions_allowed)
        for p in port.list_pod_disruption_budgets()
    ]
    assert found == [("default", "a-web", {"app": "a-web"}, 1), ("ml", "b-train", {"app": "b-train"}, 0)]


def test_gpu_node_summaries_hold_what_a_table_row_holds(seeded: tuple[Any, Put]) -> None:
    port, put = seeded
    status = {
        "phase": "Running",
        "totalTFlops": "1000",
        "totalVRAM": "192Gi",
        "availableTFlops": "250",
        "availableVRAM": "48Gi",
        "totalGPUs": 8,
        "managedGPUs": 8,
        "managedGPUDeviceIDs": ["gpu-0"],
        "nodeInfo": {"gpuModel": "A10G"},
    }
    put("GPUNode", {"metadata": {"name": "busy", "labels": {"pool": "a"}}, "status": status})
    put("GPUNode", {"metadata": {"name": "new"}})
    summaries = {g.name: g for g in port.list_gpu_nodes(summary=True)}
    assert list(summaries) == ["busy", "new"]
    busy = summaries["busy"]
    assert (
        busy.status is not None and busy.metadata.labels == {"pool": "a"} and busy.metadata.resource_version
    )
    got = busy.status
    assert (got.phase, got.total_gpus) == ("Running", 8)
    assert (got.total_tflops, got.total_vram) == (Quantity(1000), Quantity.parse("192Gi"))
    assert (got.available_tflops, got.available_vram) == (Quantity(250), Quantity.parse("48Gi"))
    assert got.managed_gpus is None and got.node_info is None and not got.managed_gpu_device_ids
    assert summaries["new"].status is None
    whole = next(g for g in port.list_gpu_nodes() if g.name == "busy")
    assert whole.status is not None and whole.status.managed_gpus == 8 and whole.status.node_info is not None
