"""One suite, two implementations of the Compute port: Ec2Compute on moto and the service tests'
FakeCompute, so the fake the service is tested against stays honest.

Covers: launch tags the instance for its claim, class and cluster; find_by_claim adopts the
claim's live instance and ignores terminated ones; describe leaves unknown ids out and still
reports terminated instances; terminate is idempotent and refuses an untagged instance;
list_managed reports only live instances.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from gpupool.core.model.instance import ManagedInstance
from gpupool.service.errors import PermanentError
from tests.service.fakes import FakeClock, FakeCompute

from .conftest import CLUSTER, Ec2World, make_claim, make_class, make_offering


@dataclass
class Backend:
    compute: Any
    node_class: Any
    add_untagged: Any  # () -> instance id of an instance we did not launch


@pytest.fixture(params=["moto", "fake"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "fake":
        fake = FakeCompute(FakeClock(), cluster=CLUSTER)

        def add_untagged() -> str:
            fake.untagged["i-0untagged0000000"] = ManagedInstance(
                instance_id="i-0untagged0000000", state="running"
            )
            return "i-0untagged0000000"

        yield Backend(fake, make_class(osImageSelectorTerms=[{"id": "ami-1"}]), add_untagged)
        return
    world: Ec2World = request.getfixturevalue("ec2_world")

    def run_untagged() -> str:
        instance = world.client.run_instances(ImageId=world.image_id, MinCount=1, MaxCount=1)["Instances"][0]
        return str(instance["InstanceId"])

    yield Backend(world.compute(), world.full_class(), run_untagged)


def test_launch_tags_and_adoption(backend: Backend) -> None:
    compute = backend.compute
    assert compute.find_by_claim(make_claim()) is None
    instance_id = compute.launch(make_claim(), backend.node_class, make_offering(), client_token="uid-1")
    found = compute.find_by_claim(make_claim())
    assert found is not None and found.instance_id == instance_id
    assert (found.claim_name, found.node_class, found.cluster) == ("pool-a-x1", "gpu-class", CLUSTER)
    assert found.tags["managed-by"] == "tensor-fusion.ai"
    assert found.instance_type == "g5.xlarge" and found.zone == "us-east-1a"


def test_terminated_instances_are_not_adopted_but_still_described(backend: Backend) -> None:
    compute = backend.compute
    instance_id = compute.launch(make_claim(), backend.node_class, make_offering(), client_token="uid-1")
    compute.terminate(instance_id)
    compute.terminate(instance_id)
    assert compute.find_by_claim(make_claim()) is None
    assert compute.list_managed() == []
    described = compute.describe([instance_id, "i-0000000000000dead"])
    assert [(item.instance_id, item.state) for item in described] == [(instance_id, "terminated")]


def test_untagged_instance_is_never_terminated(backend: Backend) -> None:
    stranger = backend.add_untagged()
    with pytest.raises(PermanentError):
        backend.compute.terminate(stranger)
    assert all(item.instance_id != stranger for item in backend.compute.list_managed())


def test_list_managed_reports_live_instances(backend: Backend) -> None:
    compute = backend.compute
    first = compute.launch(make_claim("c1"), backend.node_class, make_offering(), client_token="a")
    second = compute.launch(make_claim("c2"), backend.node_class, make_offering(), client_token="b")
    assert sorted(item.instance_id for item in compute.list_managed()) == sorted([first, second])


def test_describe_reports_the_launch_token_an_instance_was_started_with(backend: Backend) -> None:
    """Issue 33: tags can be copied, the launch request's token cannot — the claim's instance is told
    by both (`decisions.instance_owner`)."""
    compute = backend.compute
    instance_id = compute.launch(make_claim(), backend.node_class, make_offering(), client_token="uid-1")
    (described,) = compute.describe([instance_id])
    assert described.client_token == "uid-1"
