"""One suite, two implementations of the Cluster port: KubeCluster on the embedded API server and the
service tests' FakeCluster, so the fake the service is tested against stays honest.

Covers the contract points the service relies on: create returns uid and resourceVersion and
refuses a duplicate; status and metadata writes with a stale resourceVersion are Conflict and
change nothing; a finalizer holds a deleted claim until it is removed; pool spec, annotation
and status writes; the provisioning Lease (one holder, expiry, release by the holder only);
NotFound for missing objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from gpupool.adapters.kube import KubeCluster
from gpupool.adapters.kube_auth import KubeAccess, build_api_client
from gpupool.core.model.base import OwnerReference
from gpupool.core.model.constants import FINALIZER
from gpupool.core.model.nodeclaim import GPUNodeClaimStatus
from gpupool.core.model.pool import GPUPoolStatus
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.service.errors import AlreadyExists, Conflict, NotFound
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
        port.patch_claim_metadata("pool-a-x1", labels={"a": "b"}, resource_version=stale)
    current = port.get_claim("pool-a-x1")
    assert current.status.phase == "Creating" and "a" not in current.metadata.labels


def test_finalizer_holds_a_deleted_claim(port: Any) -> None:
    port.create_claim(make_claim(finalizers=[FINALIZER]))
    port.delete_claim("pool-a-x1")
    port.delete_claim("pool-a-x1")
    held = port.get_claim("pool-a-x1")
    assert held.metadata.deletion_timestamp is not None
    port.patch_claim_metadata("pool-a-x1", finalizers=[], resource_version=_version(held))
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
