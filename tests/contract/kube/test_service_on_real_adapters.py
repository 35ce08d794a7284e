"""The launch service on the real adapters: EC2 on a moto server, Kubernetes on the embedded API server.

Covers issue 4's first two acceptance points through the adapters the functions really use
(built by `build_aws_deps` from environment variables): one schedule event delivered 10 times,
8 concurrent launch invocations on one pool, and a function dying after claim creation, after
RunInstances or after a status write, all leave exactly the instances the gap needs — counted
in moto — each adopted by exactly one claim in `Creating` with its instance id. And the third:
InsufficientInstanceCapacity from EC2 (injected into the boto3 client, moto never says it) on
the cheapest offering launches the next one; with every offering exhausted the claims are
Failed and a Warning event is recorded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from gpupool.adapters.aws.compute import Ec2Compute
from gpupool.adapters.aws.wiring import build_aws_deps
from gpupool.core.intake.causes import Reconcile
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.quantity import Quantity
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.moto_ec2 import MotoEC2
from gpupool.service.deps import Deps
from gpupool.service.launch import handle_launch
from tests.service.fakes import OFFERINGS as FAKE_OFFERINGS
from tests.service.fakes import Crash, FakeClock, make_pool

# The fakes' catalog without g6.xlarge: the cheapest cover is then 2× g4dn.xlarge, the next g5.xlarge.
OFFERINGS = tuple(o for o in FAKE_OFFERINGS if o.instance_type != "g6.xlarge")
MIN_TFLOPS, MIN_VRAM = Quantity.parse("130"), Quantity.parse("32Gi")
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Deps, Any, EmbeddedKubeAPI]]:
    for key in ("AWS_ENDPOINT_URL", "KUBECONFIG", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key, raising=False)
    # moto's backends are process-wide: start from an empty account.
    with MotoEC2() as moto, EmbeddedKubeAPI() as api:
        url = moto.reset().url
        ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=url, **CREDENTIALS)
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        deps = build_aws_deps(
            {
                "GPUPOOL_CLUSTER_NAME": "demo",
                "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": url,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "KUBECONFIG": str(api.kubeconfig_path),
            }
        )
        deps = dataclasses.replace(deps, offerings=OFFERINGS)
        node_class = GPUNodeClass.model_validate(
            {"metadata": {"name": "gpu-class"}, "spec": {"osImageSelectorTerms": [{"id": image}]}}
        )
        _create(api, node_class.to_manifest(), "gpunodeclasses")
        deps.cluster.create_pool(make_pool(min_tflops="130", min_vram="32Gi"))
        yield deps, ec2, api


def _create(api: EmbeddedKubeAPI, body: dict[str, Any], plural: str) -> None:
    from kubernetes import client as k8s
    from kubernetes import config as kube_config

    api_client = kube_config.new_client_from_config(config_file=str(api.kubeconfig_path))
    k8s.CustomObjectsApi(api_client).create_cluster_custom_object("tensor-fusion.ai", "v1", plural, body)


def _our_instances(ec2: Any) -> list[dict[str, Any]]:
    filters = [
        {"Name": "tag:tensor-fusion.ai/cluster", "Values": ["demo"]},
        {"Name": "instance-state-name", "Values": ["pending", "running"]},
    ]
    reservations = ec2.describe_instances(Filters=filters)["Reservations"]
    return [instance for reservation in reservations for instance in reservation["Instances"]]


def _assert_one_instance_per_claim(deps: Deps, ec2: Any) -> None:
    claims = [claim for claim in deps.cluster.list_claims() if claim.metadata.deletion_timestamp is None]
    instances = _our_instances(ec2)
    assert claims, "the pool's minimum needs capacity"
    assert all(claim.status is not None and claim.status.phase == "Creating" for claim in claims)
    by_claim = {
        next(tag["Value"] for tag in instance["Tags"] if tag["Key"] == "tensor-fusion.ai/node-name"): instance
        for instance in instances
    }
    assert len(by_claim) == len(instances) == len(claims)
    for claim in claims:
        assert claim.status is not None and by_claim[claim.name]["InstanceId"] == claim.status.instance_id
    tflops = sum((claim.spec.tflops_offered for claim in claims), Quantity.parse("0"))
    vram = sum((claim.spec.vram_offered for claim in claims), Quantity.parse("0"))
    assert not tflops < MIN_TFLOPS and not vram < MIN_VRAM, "the minimum is met"
    for claim in claims:  # and no claim is superfluous: without any one of them it is not
        assert tflops - claim.spec.tflops_offered < MIN_TFLOPS or vram - claim.spec.vram_offered < MIN_VRAM


def test_one_schedule_event_delivered_ten_times(world: tuple[Deps, Any, EmbeddedKubeAPI]) -> None:
    deps, ec2, _api = world
    cause = Reconcile(pool=None, trigger="schedule", event_id="evt-1")
    outcomes = [handle_launch(cause, deps) for _ in range(10)]
    assert not outcomes[0].errors, outcomes[0].errors
    _assert_one_instance_per_claim(deps, ec2)
    assert all(not outcome.errors for outcome in outcomes)


def test_eight_concurrent_invocations_never_overfill(world: tuple[Deps, Any, EmbeddedKubeAPI]) -> None:
    deps, ec2, _api = world

    def invoke(index: int) -> Any:
        holder = dataclasses.replace(deps, holder=f"invocation-{index}")
        return handle_launch(Reconcile(pool="pool-a", trigger="schedule", event_id=f"evt-{index}"), holder)

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(invoke, range(8)))
    handle_launch(Reconcile(pool="pool-a", trigger="schedule", event_id="evt-last"), deps)
    _assert_one_instance_per_claim(deps, ec2)
    busy = [outcome for outcome in outcomes if any("lease" in reason for reason in outcome.plan.reasons)]
    assert busy, "with 8 at once, some invocations must find the pool's lease held"


class _CrashAfter:
    """Wraps a real port: the first call of `method` does its work, then the function 'dies'."""

    def __init__(self, inner: Any, method: str) -> None:
        self._inner = inner
        self._method = method
        self.crashed = False

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if name != self._method or self.crashed:
            return real

        def once(*args: Any, **kwargs: Any) -> Any:
            real(*args, **kwargs)
            self.crashed = True
            raise Crash(f"died after {name}")

        return once


@pytest.mark.parametrize(
    ("port", "method"),
    [("compute", "launch"), ("cluster", "create_claim"), ("cluster", "update_claim_status")],
)
def test_a_crash_between_steps_is_finished_by_the_next_invocation(
    world: tuple[Deps, Any, EmbeddedKubeAPI], port: str, method: str
) -> None:
    deps, ec2, _api = world
    crashing = _CrashAfter(getattr(deps, port), method)
    with pytest.raises(Crash):
        handle_launch(
            Reconcile(pool="pool-a", trigger="schedule", event_id="e1"),
            dataclasses.replace(deps, **{port: crashing}),
        )
    assert crashing.crashed
    # The next invocation (another container: another lease holder, after the lease expired).
    later = FakeClock(datetime.now(UTC) + timedelta(minutes=5))
    fresh = dataclasses.replace(deps, holder="next-invocation", clock=later)
    for attempt in range(3):
        handle_launch(Reconcile(pool="pool-a", trigger="schedule", event_id=f"e{attempt + 2}"), fresh)
    _assert_one_instance_per_claim(deps, ec2)


def _without_capacity_for(client: Any, instance_types: set[str]) -> None:
    """Make RunInstances answer InsufficientInstanceCapacity for these types (moto never does)."""

    class _Http:
        status_code = 500

    def refuse(params: dict[str, Any], **_: Any) -> Any:
        if params.get("body", {}).get("InstanceType") not in instance_types:
            return None
        error = {
            "Code": "InsufficientInstanceCapacity",
            "Message": "We currently do not have sufficient capacity.",
        }
        return _Http(), {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 500}}

    client.meta.events.register("before-call.ec2.RunInstances", refuse)


def _events(api: EmbeddedKubeAPI) -> list[tuple[str, str]]:
    from kubernetes import client as k8s
    from kubernetes import config as kube_config

    api_client = kube_config.new_client_from_config(config_file=str(api.kubeconfig_path))
    items = k8s.CoreV1Api(api_client).list_event_for_all_namespaces().items
    return [(item.type, item.reason) for item in items]


def test_capacity_error_on_the_cheapest_offering_launches_the_next(
    world: tuple[Deps, Any, EmbeddedKubeAPI],
) -> None:
    deps, ec2, _api = world
    _without_capacity_for(ec2, {"g4dn.xlarge"})
    compute = Ec2Compute(ec2, cluster="demo", sleep=lambda _: None)
    outcome = handle_launch(
        Reconcile(pool="pool-a", trigger="schedule", event_id="e1"),
        dataclasses.replace(deps, compute=compute),
    )
    assert not outcome.errors, outcome.errors
    instances = _our_instances(ec2)
    assert instances and {instance["InstanceType"] for instance in instances} == {"g5.xlarge"}
    failed = [
        claim for claim in deps.cluster.list_claims() if claim.status and claim.status.phase == "Failed"
    ]
    assert failed and all(claim.spec.instance_type == "g4dn.xlarge" for claim in failed)


def test_all_offerings_exhausted_fails_the_claims_with_a_warning(
    world: tuple[Deps, Any, EmbeddedKubeAPI],
) -> None:
    deps, ec2, api = world
    _without_capacity_for(ec2, {"g4dn.xlarge", "g5.xlarge"})
    compute = Ec2Compute(ec2, cluster="demo", sleep=lambda _: None)
    handle_launch(
        Reconcile(pool="pool-a", trigger="schedule", event_id="e1"),
        dataclasses.replace(deps, compute=compute),
    )
    assert _our_instances(ec2) == []
    claims = deps.cluster.list_claims()
    assert claims and all(claim.status is not None and claim.status.phase == "Failed" for claim in claims)
    assert any(event_type == "Warning" for event_type, _ in _events(api))
