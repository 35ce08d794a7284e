"""A Spot interruption warning in the sandbox (embedded API server, moto's EC2), through the real
Lambda handlers: delivered to launch, it launches the replacement in the same invocation on
another offering; the interrupted offering is not used again for 3 minutes (a second gap inside
them takes another one), and is used again after (it is the cheapest). The delay itself is a
figure `benchmarks/reaction.py` prints, not asserted here."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from gpupool.adapters.aws.wiring import build_aws_deps
from gpupool.cli.commands.invoke import call_handler, load_function, load_handler, quiet_handler_output
from gpupool.sandbox.demo.events import iso_time
from gpupool.sandbox.demo.world import DemoWorld
from gpupool.simulation.cluster.kubelet import NodeRegistration

POOL = {
    "apiVersion": "tensor-fusion.ai/v1",
    "kind": "GPUPool",
    "metadata": {"name": "spot-gpu"},
    "spec": {
        "capacityConfig": {"minResources": {"tflops": "65", "vram": "16Gi"}},
        "nodeManagerConfig": {
            "provisioningMode": "Provisioned",
            "nodeProvisioner": {
                "nodeClass": "demo-gpu-nodes",
                "gpuRequirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["Spot"]},
                ],
            },
        },
    },
}


@dataclass
class Sandbox:
    world: DemoWorld
    handlers: dict[str, Any]

    def tick(self, function: str) -> dict[str, Any]:
        event = self.world.events.scheduled(function, self.world.clock.now())
        result: dict[str, Any] = call_handler(self.handlers[function], event)
        assert not result.get("errors"), result
        return result

    def claims(self) -> list[dict[str, Any]]:
        return self.world.objects.list("tensor-fusion.ai", "gpunodeclaims")

    def offering(self, claim: dict[str, Any]) -> str:
        return "{instanceType}/{zone}/{capacityType}".format(**claim["spec"])

    def join_and_bind(self) -> None:
        for instance in self.world.sim_instances():
            if (
                instance.state == "running"
                and self.world.objects.get("", "nodes", instance.claim_name or "") is None
            ):
                self.world.kubelet.register(
                    NodeRegistration(
                        name=instance.claim_name or instance.instance_id,
                        instance_type=instance.instance_type,
                        zone=instance.zone,
                        region=self.world.region,
                        provider_id=f"aws:///{instance.zone}/{instance.instance_id}",
                        instance_id=instance.instance_id,
                        claim=instance.claim_name,
                    )
                )
        self.tick("bind")

    def raise_minimum(self, nodes: int) -> None:
        pool = self.world.objects.get("tensor-fusion.ai", "gpupools", "spot-gpu")
        assert pool is not None
        minimum = {"tflops": str(65 * nodes), "vram": f"{16 * nodes}Gi"}
        self.world.objects.patch(
            "tensor-fusion.ai",
            "gpupools",
            "spot-gpu",
            {"spec": {"capacityConfig": {"minResources": minimum}}},
        )


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with DemoWorld("aws") as world, quiet_handler_output(verbose=False):
        world.install([m for m in world.manifests() if m["kind"] == "GPUNodeClass"])
        world.objects.create("tensor-fusion.ai", "gpupools", POOL)
        deps = replace(build_aws_deps(world.environ), clock=world.clock, new_suffix=world.new_suffix)
        handlers = {f: load_handler(load_function(f), lambda: deps) for f in ("launch", "bind")}
        yield Sandbox(world, handlers)


def test_a_spot_warning_replaces_at_once_elsewhere_and_the_offering_rests_three_minutes(
    sandbox: Sandbox,
) -> None:
    sandbox.tick("launch")
    sandbox.world.clock.advance(30)
    sandbox.join_and_bind()
    (victim,) = sandbox.claims()
    interrupted = sandbox.offering(victim)
    instances = len(sandbox.world.managed_instances())
    warning = {
        "version": "0",
        "id": "spot-1",
        "detail-type": "EC2 Spot Instance Interruption Warning",
        "source": "aws.ec2",
        "account": "123456789012",
        "time": iso_time(sandbox.world.clock.now()),
        "region": "us-east-1",
        "resources": [],
        "detail": {"instance-id": victim["status"]["instanceID"], "instance-action": "terminate"},
    }
    result = call_handler(sandbox.handlers["launch"], warning)
    assert result["status"] == "handled" and not result["errors"], result
    assert len(sandbox.world.managed_instances()) == instances + 1, "RunInstances in the same invocation"
    (replacement,) = [c for c in sandbox.claims() if c["metadata"]["name"] != victim["metadata"]["name"]]
    assert sandbox.offering(replacement) != interrupted, "another offering"
    node = sandbox.world.objects.get("", "nodes", victim["metadata"]["name"])
    assert node is not None and node["spec"].get("unschedulable") is True

    sandbox.world.clock.advance(170)  # 2 min 50 s after the warning: a second gap
    sandbox.raise_minimum(3)
    sandbox.tick("launch")
    later = [
        c
        for c in sandbox.claims()
        if c["metadata"]["name"] not in {victim["metadata"]["name"], replacement["metadata"]["name"]}
    ]
    assert later and interrupted not in {sandbox.offering(c) for c in later}, (
        "not used again within 3 minutes"
    )

    sandbox.world.clock.advance(20)  # 3 min 10 s after: the offering (the cheapest) is back
    sandbox.raise_minimum(4)
    sandbox.tick("launch")
    seen = {c["metadata"]["name"] for c in [victim, replacement, *later]}
    newest = [c for c in sandbox.claims() if c["metadata"]["name"] not in seen]
    assert [sandbox.offering(c) for c in newest] == [interrupted]
