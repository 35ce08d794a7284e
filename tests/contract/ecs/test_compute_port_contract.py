"""One suite, three implementations of the Compute port for Alibaba Cloud: the service tests'
in-memory `FakeCompute`, `EcsCompute` on the sandbox ECS in memory, and `EcsCompute` on the
sandbox's ECS endpoint through the real `alibabacloud-ecs20140526` SDK (wire format, signing,
error decoding) — so the fakes the service is tested against stay honest.

Covers: launch tags the instance for its claim, class and cluster; find_by_claim adopts the
claim's live instance; a deleted instance is neither adopted, listed nor reported live, and
unknown ids are left out; terminate is idempotent and refuses an untagged instance;
list_managed reports only live instances; no capacity for an offering is CapacityUnavailable
and launches nothing; the connection check passes on a reachable endpoint, and ECS names a
region it does not serve.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from gpupool.adapters.alibaba.compute import EcsCompute
from gpupool.core.model.instance import ManagedInstance
from gpupool.sandbox.ecs_server import EcsEndpoint
from gpupool.service.errors import CapacityUnavailable, PermanentError
from tests.service.fakes import FakeClock, FakeCompute

from .conftest import (
    CLUSTER,
    GN7I,
    REGION,
    ZONE,
    InMemoryEcsApi,
    compute_on,
    full_class,
    make_claim,
    make_class,
    make_offering,
    sdk_api,
)


@dataclass
class Backend:
    compute: Any
    node_class: Any
    add_untagged: Any  # () -> id of an instance we did not launch
    refuse_capacity: Any  # (instance type) -> None: launches of it fail for lack of stock


@pytest.fixture(params=["fake", "ecs-memory", "ecs-sdk"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "fake":
        fake = FakeCompute(FakeClock(), cluster=CLUSTER)

        def add_untagged() -> str:
            fake.untagged["i-untagged"] = ManagedInstance(instance_id="i-untagged", state="running")
            return "i-untagged"

        def refuse(instance_type: str) -> None:
            fake.no_capacity.add(make_offering(instance_type=instance_type).key)

        yield Backend(fake, make_class(osImageSelectorTerms=[{"id": "m-1"}]), add_untagged, refuse)
        return
    with EcsEndpoint() as endpoint:
        state = endpoint.state
        api = InMemoryEcsApi(state) if request.param == "ecs-memory" else sdk_api(endpoint)

        def run_untagged() -> str:
            image = next(iter(state.network.images))
            body = api.call("RunInstances", {"RegionId": REGION, "ImageId": image, "InstanceType": GN7I})
            return str(body["InstanceIdSets"]["InstanceIdSet"][0])

        def refuse_stock(instance_type: str) -> None:
            state.no_stock({instance_type})

        yield Backend(compute_on(api), full_class(state), run_untagged, refuse_stock)


def test_launch_tags_and_adoption(backend: Backend) -> None:
    compute = backend.compute
    assert compute.find_by_claim(make_claim()) is None
    instance_id = compute.launch(make_claim(), backend.node_class, make_offering(), client_token="uid-1")
    found = compute.find_by_claim(make_claim())
    assert found is not None and found.instance_id == instance_id
    assert (found.claim_name, found.node_class, found.cluster) == ("pool-a-x1", "gpu-class", CLUSTER)
    assert found.tags["managed-by"] == "tensor-fusion.ai"
    assert (found.instance_type, found.zone, found.state) == (GN7I, ZONE, "pending")


def test_spot_launch_is_reported_as_spot(backend: Backend) -> None:
    compute = backend.compute
    offering = make_offering(capacity_type="Spot")
    compute.launch(make_claim(capacityType="Spot"), backend.node_class, offering, client_token="uid-1")
    found = compute.find_by_claim(make_claim())
    assert found is not None and found.capacity_type == "Spot"


def test_deleted_instances_are_not_adopted_listed_or_live(backend: Backend) -> None:
    compute = backend.compute
    instance_id = compute.launch(make_claim(), backend.node_class, make_offering(), client_token="uid-1")
    compute.terminate(instance_id)
    compute.terminate(instance_id)
    assert compute.find_by_claim(make_claim()) is None
    assert compute.list_managed() == []
    described = compute.describe([instance_id, "i-bp1000000000000dead"])
    # ECS forgets a deleted instance; EC2 (and the fake) still report it as terminated.
    assert all(item.instance_id == instance_id and item.gone for item in described)


def test_untagged_instance_is_never_terminated(backend: Backend) -> None:
    stranger = backend.add_untagged()
    with pytest.raises(PermanentError):
        backend.compute.terminate(stranger)
    assert all(item.instance_id != stranger for item in backend.compute.list_managed())
    assert backend.compute.describe([stranger]) == []


def test_list_managed_reports_live_instances(backend: Backend) -> None:
    compute = backend.compute
    first = compute.launch(make_claim("c1"), backend.node_class, make_offering(), client_token="a")
    second = compute.launch(make_claim("c2"), backend.node_class, make_offering(), client_token="b")
    assert sorted(item.instance_id for item in compute.list_managed()) == sorted([first, second])
    assert sorted(item.instance_id for item in compute.describe([second, first])) == sorted([first, second])


def test_no_capacity_is_capacity_unavailable_and_launches_nothing(backend: Backend) -> None:
    backend.refuse_capacity(GN7I)
    with pytest.raises(CapacityUnavailable):
        backend.compute.launch(make_claim(), backend.node_class, make_offering(), client_token="uid-1")
    assert backend.compute.list_managed() == []


def test_the_connection_check_passes_on_a_reachable_endpoint(backend: Backend) -> None:
    assert backend.compute.check_connection() is None


@pytest.mark.parametrize("wire", ["ecs-memory", "ecs-sdk"])
def test_the_connection_check_names_a_region_ecs_does_not_serve(wire: str) -> None:
    with EcsEndpoint() as endpoint:
        api = InMemoryEcsApi(endpoint.state) if wire == "ecs-memory" else sdk_api(endpoint)
        elsewhere = EcsCompute(api, cluster=CLUSTER, region="cn-nowhere", sleep=lambda _seconds: None)
        with pytest.raises(PermanentError, match="does not serve region 'cn-nowhere'"):
            elsewhere.check_connection()
