"""The simulated Karpenter controller in the sandbox, driven by the real functions: Karpenter mode's
story end to end on the embedded API server with Karpenter's CRD rules — NodeClaims (each
`expireAfter: Never`) launch, register their nodes with the NodeClaim's labels and taints in
Karpenter's condition order, the claims bind; a NodeClaim Karpenter deletes for capacity before
it launched fails its claim and the refill takes another offering; a deleted claim takes its
NodeClaim and node."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import config as kube_config

from gpupool.adapters.aws.wiring import build_aws_deps
from gpupool.core.catalog import load_catalog
from gpupool.core.intake.causes import Reconcile, Sweep
from gpupool.sandbox.demo.objects import ClientObjects
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.service.bind import handle_bind
from gpupool.service.deps import Deps
from gpupool.service.launch import handle_launch
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig
from gpupool.simulation.cluster.json_store import JsonStore
from gpupool.simulation.cluster.karpenter import SimulatedKarpenter
from gpupool.simulation.cluster.kubelet import Kubelet
from tests.service.fakes import OFFERINGS, FakeClock, FakeCompute
from tests.service.test_karpenter_mode import karpenter_pool

EC2_CLASS = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"}}


@pytest.fixture
def story(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Deps, SimulatedKarpenter, ClientObjects]]:
    for key in ("AWS_ENDPOINT_URL", "KUBECONFIG"):
        monkeypatch.delenv(key, raising=False)
    with EmbeddedKubeAPI() as api:
        environ = {
            "GPUPOOL_CLUSTER_NAME": "demo",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "KUBECONFIG": str(api.kubeconfig_path),
        }
        deps = build_aws_deps(environ)
        assert deps.karpenter is not None
        cloud = FakeCompute(FakeClock())
        deps = dataclasses.replace(deps, offerings=OFFERINGS, compute=cloud)
        objects = ClientObjects(kube_config.new_client_from_config(config_file=str(api.kubeconfig_path)))
        objects.create("karpenter.k8s.aws", "ec2nodeclasses", EC2_CLASS)
        deps.cluster.create_pool(karpenter_pool())
        kubelet = Kubelet(JsonStore(objects), catalog=load_catalog("aws"), clock=api.clock)
        # The demo's Karpenter: nodes register at the step after launch.
        sim = SimulatedKarpenter(
            kubelet, CloudFates(FatesConfig.fixed()), clock=api.clock, region="us-east-1", offerings=OFFERINGS
        )
        yield deps, sim, objects


def launch(deps: Deps, event_id: str) -> None:
    assert handle_launch(Reconcile(trigger="schedule", event_id=event_id), deps).errors == []


def bind(deps: Deps, event_id: str) -> None:
    assert handle_bind(Sweep(event_id=event_id), deps).errors == []


def phases(deps: Deps) -> dict[str, str]:
    return {c.name: c.status.phase if c.status else "" for c in deps.cluster.list_claims()}


def test_nodeclaims_launch_register_and_bind_their_claims(
    story: tuple[Deps, SimulatedKarpenter, Any],
) -> None:
    deps, sim, objects = story
    launch(deps, "e1")
    assert [c.change for c in sim.step()] == ["launched", "launched"]
    assert [c.change for c in sim.step()] == ["registered", "registered"]
    bind(deps, "s1")
    assert set(phases(deps).values()) == {"Bound"}
    for nodeclaim in objects.list("karpenter.sh", "nodeclaims"):
        conditions = [c["type"] for c in nodeclaim["status"]["conditions"]]
        assert conditions == ["Launched", "Registered", "Initialized", "Ready"]
        assert nodeclaim["spec"]["expireAfter"] == "Never", "not the CRD's 720h"
        node = objects.get("", "nodes", nodeclaim["status"]["nodeName"])
        assert node is not None
        labels = node["metadata"]["labels"]
        assert labels["tensor-fusion.ai/node-provisioner"] == nodeclaim["metadata"]["name"]
        assert labels["team"] == "ml" and labels["node.kubernetes.io/instance-type"] == "g4dn.xlarge"
        assert node["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
        assert node["spec"]["providerID"] == nodeclaim["status"]["providerID"]


def test_a_nodeclaim_deleted_before_launch_fails_its_claim_and_the_refill_takes_another_offering(
    story: tuple[Deps, SimulatedKarpenter, Any],
) -> None:
    deps, sim, objects = story
    sim.insufficient_capacity("g4dn.xlarge", "us-east-1a")
    launch(deps, "e1")
    assert [c.change for c in sim.step()] == ["insufficient-capacity", "insufficient-capacity"]
    assert objects.list("karpenter.sh", "nodeclaims") == [], "Karpenter deletes them; no Launched=False"
    bind(deps, "s1")
    assert set(phases(deps).values()) == {"Failed"}
    launch(deps, "e2")
    refill = [c for c in deps.cluster.list_claims() if c.status and c.status.phase == "Creating"]
    assert refill, "the gap is refilled"
    assert "g4dn.xlarge" not in {c.spec.instance_type for c in refill}, "with the next cheapest offering"


def test_a_deleted_claim_takes_its_nodeclaim_and_then_its_node(
    story: tuple[Deps, SimulatedKarpenter, Any],
) -> None:
    deps, sim, objects = story
    launch(deps, "e1")
    sim.step()
    sim.step()
    bind(deps, "s1")
    doomed = sorted(phases(deps))[0]
    deps.cluster.delete_claim(doomed)
    bind(deps, "s2")
    assert doomed not in [n["metadata"]["name"] for n in objects.list("karpenter.sh", "nodeclaims")]
    removed = [c for c in sim.step() if c.change == "node-removed"]
    assert [c.nodeclaim for c in removed] == [doomed]
    assert len(objects.list("", "nodes")) == 1
