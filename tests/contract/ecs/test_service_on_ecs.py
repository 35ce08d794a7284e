"""Issue 9's acceptance, end to end on Alibaba Cloud's side: the real FC handlers
(functions/*/index.py) and services on the real adapters built by `build_alibaba_deps` — ECS
through the SDK on the sandbox's ECS endpoint, Kubernetes on the embedded API server — with a
simulated kubelet joining nodes for running instances, all on one manual clock.

Covers: one FC timer event delivered 10 times, and 8 concurrent launch invocations, leave exactly
the instances the gap needs (counted with DescribeInstances), one per claim, never over max; a
function dying after claim creation, after RunInstances or after a status write is finished by
the next invocation (adopted by tag, no orphan, no duplicate); OperationDenied.NoStock on the
cheapest offering launches the next, and with every offering out of stock the claims fail with a
NodeLaunchFailed Warning; a preemptible-instance interruption event (to launch) cordons the node,
launches the replacement on another offering at once and drains the node; an instance whose node
never joins is deleted after
the registration timeout and refilled; compaction deletes the claim of a surplus node and bind
deletes its instance.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpupool.adapters.alibaba.wiring import build_alibaba_deps
from gpupool.core.catalog import load_catalog
from gpupool.core.model.constants import TAG_CLUSTER, TAG_NODE_NAME
from gpupool.core.quantity import Quantity
from gpupool.sandbox.demo.objects import KubeObjects
from gpupool.sandbox.ecs_instances import ecs_instances
from gpupool.sandbox.ecs_server import SANDBOX_ACCESS_KEY_ID, SANDBOX_ACCESS_KEY_SECRET, EcsEndpoint
from gpupool.sandbox.ecs_state import EcsState
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock
from gpupool.service.deps import Deps
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig
from gpupool.simulation.cluster.instance_nodes import InstanceNodes
from gpupool.simulation.cluster.json_store import JsonStore
from gpupool.simulation.cluster.kubelet import Kubelet
from tests.service.fakes import Crash, make_pool

from .conftest import REGION, full_class

ROOT = Path(__file__).resolve().parents[3]
EVENTS = ROOT / "events" / "alibaba"
START = datetime.fromisoformat("2026-03-02T09:00:00+00:00")
T4, A10 = "ecs.gn6i-c4g1.xlarge", "ecs.gn7i-c8g1.2xlarge"
MIN_TFLOPS, MIN_VRAM = Quantity.parse("130"), Quantity.parse("32Gi")


def _load(function: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"gpupool_ecs_{function}_index", ROOT / "functions" / function / "index.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


APPS = {function: _load(function) for function in ("launch", "bind", "compact")}


@dataclass
class World:
    deps: Deps
    state: EcsState
    api: EmbeddedKubeAPI
    clock: ManualClock
    kubelet: InstanceNodes
    objects: KubeObjects

    def invoke(self, function: str, sample: str, deps: Deps | None = None, **data: str) -> dict[str, Any]:
        event = json.loads((EVENTS / f"{sample}.json").read_text())
        event.get("data", {}).update(data)
        handler = APPS[function].make_handler(lambda: deps or self.deps)
        result: dict[str, Any] = handler(json.dumps(event).encode(), None)
        return result

    def tick(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.kubelet.step()

    def claims(self) -> list[Any]:
        return [c for c in self.deps.cluster.list_claims() if c.metadata.deletion_timestamp is None]

    def instances(self) -> list[dict[str, Any]]:
        """Our instances, counted the way an operator would: DescribeInstances by the cluster tag."""
        body = self.state.call(
            "DescribeInstances",
            {"RegionId": REGION, "PageSize": 100, "Tag": [{"Key": TAG_CLUSTER, "Value": "demo"}]},
        )
        found: list[dict[str, Any]] = body["Instances"]["Instance"]
        return found


@pytest.fixture
def world() -> Iterator[World]:
    clock = ManualClock(START)
    state = EcsState(now=clock.now)
    with EmbeddedKubeAPI(clock=clock) as api, EcsEndpoint(state) as endpoint:
        environ = {
            "GPUPOOL_CLUSTER_NAME": "demo",
            "ALIBABA_CLOUD_REGION_ID": REGION,
            "GPUPOOL_ECS_ENDPOINT": endpoint.url,
            "ALIBABA_CLOUD_ACCESS_KEY_ID": SANDBOX_ACCESS_KEY_ID,
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SANDBOX_ACCESS_KEY_SECRET,
            "KUBECONFIG": str(api.kubeconfig_path),
        }
        deps = build_alibaba_deps(environ, clock=clock)
        offerings = tuple(
            o for o in deps.offerings if o.instance_type in (T4, A10) and o.capacity_type == "OnDemand"
        )
        assert {o.instance_type for o in offerings} == {T4, A10}, "both types are priced in the catalog"
        deps = dataclasses.replace(deps, offerings=offerings)
        objects = KubeObjects(api.cluster)
        objects.create("tensor-fusion.ai", "gpunodeclasses", full_class(state).to_manifest())
        deps.cluster.create_pool(
            make_pool(min_tflops="130", min_vram="32Gi", max_tflops="400", max_vram="100Gi")
        )
        kubelet = InstanceNodes(
            Kubelet(JsonStore(objects), catalog=load_catalog("alibaba"), clock=clock),
            instances=lambda: ecs_instances(state),
            clock=clock,
            fates=CloudFates(FatesConfig.fixed(join_seconds=90)),
        )
        yield World(deps, state, api, clock, kubelet, objects)


def _assert_one_instance_per_claim(world: World) -> None:
    claims, instances = world.claims(), world.instances()
    assert claims, "the pool's minimum needs capacity"
    by_claim = {
        next(t["TagValue"] for t in i["Tags"]["Tag"] if t["TagKey"] == TAG_NODE_NAME): i for i in instances
    }
    assert len(by_claim) == len(instances) == len(claims), "one instance per claim, no orphan"
    for claim in claims:
        assert claim.status is not None and claim.status.phase == "Creating"
        assert by_claim[claim.name]["InstanceId"] == claim.status.instance_id
    tflops = sum((c.spec.tflops_offered for c in claims), Quantity.parse("0"))
    vram = sum((c.spec.vram_offered for c in claims), Quantity.parse("0"))
    assert not tflops < MIN_TFLOPS and not vram < MIN_VRAM, "the minimum is met"
    for claim in claims:  # and no claim is superfluous
        assert tflops - claim.spec.tflops_offered < MIN_TFLOPS or vram - claim.spec.vram_offered < MIN_VRAM


def test_one_timer_event_delivered_ten_times(world: World) -> None:
    results = [world.invoke("launch", "fc-timer") for _ in range(10)]
    assert all(r["status"] == "handled" and not r["errors"] for r in results), results[0]
    _assert_one_instance_per_claim(world)
    assert world.state.count("RunInstances") == len(world.instances())


def test_eight_concurrent_launch_invocations_never_overfill(world: World) -> None:
    def invoke(index: int) -> dict[str, Any]:
        return world.invoke(
            "launch", "fc-timer", dataclasses.replace(world.deps, holder=f"invocation-{index}")
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(invoke, range(8)))
    world.invoke("launch", "fc-timer")
    _assert_one_instance_per_claim(world)


class _CrashAfter:
    """Wraps a real port: the first call of `method` does its work, then the function 'dies'."""

    def __init__(self, inner: Any, method: str) -> None:
        self._inner, self._method, self.crashed = inner, method, False

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
    world: World, port: str, method: str
) -> None:
    crashing = _CrashAfter(getattr(world.deps, port), method)
    with pytest.raises(Crash):
        world.invoke("launch", "fc-timer", dataclasses.replace(world.deps, **{port: crashing}))
    assert crashing.crashed
    world.clock.advance(300)  # another container, after the dead one's lease expired
    for _ in range(3):
        world.invoke("launch", "fc-timer", dataclasses.replace(world.deps, holder="next-invocation"))
    _assert_one_instance_per_claim(world)


def _warnings(world: World) -> list[str]:
    return [e["reason"] for e in world.objects.list("", "events") if e.get("type") == "Warning"]


def _planned_types(world: World) -> set[str]:
    dry = APPS["launch"].make_handler(lambda: world.deps, dry_run=True)
    planned = dry((EVENTS / "fc-timer.json").read_bytes(), None)
    return {
        a["offering"]["instance_type"] for a in planned["plan"]["actions"] if a["kind"] == "launch-instance"
    }


def test_no_stock_on_the_cheapest_offering_launches_the_next(world: World) -> None:
    cheapest = _planned_types(world)
    assert len(cheapest) == 1 and world.instances() == [], "the dry run changed nothing"
    world.state.no_stock(cheapest)
    world.invoke("launch", "fc-timer")
    launched = {i["InstanceType"] for i in world.instances()}
    assert launched and not launched & cheapest
    failed = [c for c in world.deps.cluster.list_claims() if c.status and c.status.phase == "Failed"]
    assert failed and {c.spec.instance_type for c in failed} == cheapest


def test_every_offering_out_of_stock_fails_the_claims_with_a_warning(world: World) -> None:
    world.state.no_stock({T4, A10})
    world.invoke("launch", "fc-timer")
    assert world.instances() == []
    claims = world.deps.cluster.list_claims()
    assert claims and all(c.status is not None and c.status.phase == "Failed" for c in claims)
    assert "NodeLaunchFailed" in _warnings(world)


def _bound(world: World) -> None:
    world.invoke("launch", "fc-timer")
    world.tick(10)  # instances run
    world.tick(120)  # past the simulated boot delay: nodes join
    world.invoke("bind", "fc-timer")
    assert all(c.status is not None and c.status.phase == "Bound" for c in world.claims())


def test_a_preemptible_interruption_cordons_drains_and_the_replacement_is_launched_at_once(
    world: World,
) -> None:
    _bound(world)
    claim = world.claims()[0]
    assert claim.status is not None
    node = next(n for n in world.deps.cluster.list_nodes() if n.name.endswith(claim.status.instance_id))
    world.objects.create(
        "",
        "pods",
        {
            "metadata": {
                "name": "worker-1",
                "namespace": "default",
                "labels": {"tensor-fusion.ai/enabled": "true"},
            },
            "spec": {"nodeName": node.name, "containers": [{"name": "w", "image": "busybox"}]},
        },
        namespace="default",
    )
    before = {i["InstanceId"] for i in world.instances()}
    result = world.invoke("launch", "ecs-preemptible-interruption", instanceId=claim.status.instance_id)
    assert result["status"] == "handled" and not result["errors"], result
    cordoned = next(n for n in world.deps.cluster.list_nodes() if n.name == node.name)
    assert cordoned.spec is not None and cordoned.spec.unschedulable is True
    assert [p.name for p in world.deps.cluster.list_pods(node_name=node.name)] == []
    launched = {i["InstanceId"] for i in world.instances()} - before
    assert len(launched) == 1, "the replacement ECS instance, in the same invocation"
    replacement = next(c for c in world.claims() if c.status and c.status.instance_id in launched)
    assert (replacement.spec.instance_type, replacement.spec.zone) != (
        claim.spec.instance_type,
        claim.spec.zone,
    )


def test_a_node_that_never_joins_is_deleted_after_the_registration_timeout_and_refilled(world: World) -> None:
    world.invoke("launch", "fc-timer")
    first = {c.name: c.status.instance_id for c in world.claims() if c.status}
    for name in first:
        world.kubelet.never_join(name)
    world.tick(14 * 60)
    world.invoke("bind", "fc-timer")
    assert {i["InstanceId"] for i in world.instances()} == set(first.values())
    world.tick(2 * 60)
    world.invoke("bind", "fc-timer")
    assert not {i["InstanceId"] for i in world.instances()} & set(first.values()), "deleted"
    assert "NodeLaunchFailed" in _warnings(world)
    world.invoke("launch", "fc-timer")
    refill = [c for c in world.claims() if c.status is None or c.status.phase != "Failed"]
    assert refill and not {c.name for c in refill} & set(first)
    assert len(world.instances()) == len(refill)


def test_compaction_deletes_a_surplus_node_and_bind_deletes_its_instance(world: World) -> None:
    _bound(world)
    before = {i["InstanceId"] for i in world.instances()}
    pool = world.deps.cluster.get_pool("pool-a")
    lowered = make_pool(min_tflops="60", min_vram="16Gi", max_tflops="400", max_vram="100Gi")
    world.deps.cluster.replace_pool_spec(
        pool.model_copy(update={"spec": lowered.spec}), resource_version=str(pool.metadata.resource_version)
    )
    world.tick(6 * 60)  # past the new-node protection and the compaction period
    result = world.invoke("compact", "fc-timer")
    assert result["status"] == "handled" and not result["errors"], result
    world.invoke("bind", "fc-timer")
    after = {i["InstanceId"] for i in world.instances()}
    assert after < before, "a surplus instance was deleted"
    assert len(after) == len(world.claims())
