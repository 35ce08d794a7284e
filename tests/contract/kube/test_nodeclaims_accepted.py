"""Every NodeClaim gpupool writes, in each mode, is one the API server with Karpenter's CRD rules
accepts — through the real adapters on the embedded API server — and gpupool's own check refuses
what that server refuses. Karpenter mode: GPUNodeClaims become NodeClaims with `expireAfter:
Never` (or what the pool asks), AWS GPU names lower-cased, Gt and capacity-type requirements
passed on. AutoSelect on a realistic cluster: the template is a NodeClaim the simulated Karpenter
made from a NodePool without a zone requirement (every compatible type, its launched type in its
labels); 30 pending pods get expansions pinned to the launched type first, at most 15 in flight;
one deleted the way Karpenter does on InsufficientCapacity gives its pod a NodeClaim on another
candidate at the next trigger."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

from gpupool.adapters.aws.wiring import build_aws_deps
from gpupool.core.catalog import load_catalog
from gpupool.core.intake.causes import Reconcile
from gpupool.core.model.constants import SCHEDULER_NAME
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.core.model.karpenter_rules import nodeclaim_problems
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.offerings import catalog_offerings
from gpupool.sandbox.demo.objects import ClientObjects
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.service.deps import Deps
from gpupool.service.launch import handle_launch
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig
from gpupool.simulation.cluster.json_store import JsonStore
from gpupool.simulation.cluster.karpenter import SimulatedKarpenter
from gpupool.simulation.cluster.kubelet import Kubelet
from tests.service.fakes import FakeClock, FakeCompute
from tests.service.test_karpenter_mode import karpenter_pool
from tests.unit.model.test_karpenter_rules import REFUSED

EC2_CLASS = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"}}
REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
OFFERINGS = catalog_offerings("aws", "us-east-1")


@dataclasses.dataclass
class Sandbox:
    deps: Deps
    objects: ClientObjects
    custom: k8s.CustomObjectsApi
    sim: SimulatedKarpenter


@pytest.fixture
def sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
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
        deps = dataclasses.replace(
            build_aws_deps(environ), offerings=OFFERINGS, compute=FakeCompute(FakeClock())
        )
        api_client = kube_config.new_client_from_config(config_file=str(api.kubeconfig_path))
        objects = ClientObjects(api_client)
        objects.create("karpenter.k8s.aws", "ec2nodeclasses", EC2_CLASS)
        kubelet = Kubelet(JsonStore(objects), catalog=load_catalog("aws"), clock=api.clock)
        sim = SimulatedKarpenter(
            kubelet, CloudFates(FatesConfig.fixed()), clock=api.clock, region="us-east-1"
        )
        yield Sandbox(deps, objects, k8s.CustomObjectsApi(api_client), sim)
        api_client.close()


def reconcile(deps: Deps, event_id: str, pool: str | None = None) -> Any:
    outcome = handle_launch(Reconcile(pool=pool, trigger="schedule", event_id=event_id), deps)
    assert outcome.errors == [], outcome.errors
    return outcome


def nodeclaims(sandbox: Sandbox) -> list[dict[str, Any]]:
    return sandbox.objects.list("karpenter.sh", "nodeclaims")


def test_every_nodeclaim_karpenter_mode_writes_is_accepted_as_meant(sandbox: Sandbox) -> None:
    manifest = karpenter_pool(min_tflops="130", min_vram="32Gi").to_manifest()
    manifest["metadata"]["annotations"] = {"gpupool.io/karpenter-termination-grace-period": "1h"}
    manifest["spec"]["nodeManagerConfig"]["nodeProvisioner"]["gpuRequirements"] = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["OnDemand", "Spot"]},
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["T4", "A10G"]},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]},
    ]
    sandbox.deps.cluster.create_pool(GPUPool.model_validate(manifest))
    reconcile(sandbox.deps, "k1")
    stored = nodeclaims(sandbox)
    assert len(stored) >= 2
    for nodeclaim in stored:
        spec = nodeclaim["spec"]
        assert spec["expireAfter"] == "Never" and spec["terminationGracePeriod"] == "1h"
        gpu_names = [
            r["values"] for r in spec["requirements"] if r["key"] == "karpenter.k8s.aws/instance-gpu-name"
        ]
        assert gpu_names == [["t4", "a10g"]], "as Karpenter's AWS labels spell them"
    claims = {c.name: c for c in sandbox.deps.cluster.list_claims()}
    assert set(claims) == {n["metadata"]["name"] for n in stored}


def test_a_karpenter_pool_whose_nodeclaims_would_be_refused_writes_nothing(sandbox: Sandbox) -> None:
    manifest = karpenter_pool(min_tflops="130", min_vram="32Gi").to_manifest()
    manifest["metadata"]["annotations"] = {"gpupool.io/karpenter-termination-grace-period": "1d"}
    sandbox.deps.cluster.create_pool(GPUPool.model_validate(manifest))
    outcome = reconcile(sandbox.deps, "k1")
    assert nodeclaims(sandbox) == [] and sandbox.deps.cluster.list_claims() == []
    assert any("terminationGracePeriod '1d'" in r for r in outcome.plan.reasons)


def _realistic_autoselect(sandbox: Sandbox, pods: int) -> str:
    nodepool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": REF,
                    "requirements": [
                        {
                            "key": "karpenter.k8s.aws/instance-family",
                            "operator": "In",
                            "values": ["g4dn", "g5", "g6"],
                        },
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    ],
                    "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
                }
            }
        },
    }
    stored = sandbox.objects.create("karpenter.sh", "nodepools", nodepool)
    sandbox.sim.insufficient_capacity("g4dn.xlarge", "us-east-1a")  # the template lands elsewhere
    template = sandbox.sim.provision(KarpenterNodePool.model_validate(stored)).nodeclaim
    sandbox.sim.step()  # launched
    sandbox.sim.step()  # registered
    pool = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": {"name": "auto-gpu"},
        "spec": {"nodeManagerConfig": {"provisioningMode": "AutoSelect"}},
    }
    sandbox.objects.create("tensor-fusion.ai", "gpupools", pool)
    for index in range(pods):
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"w-{index:02d}",
                "namespace": "default",
                "labels": {"tensor-fusion.ai/enabled": "true"},
                "annotations": {"tensor-fusion.ai/gpupool": "auto-gpu"},
            },
            "spec": {
                "schedulerName": SCHEDULER_NAME,
                "containers": [{"name": "main", "image": "worker", "resources": {"requests": {"cpu": "1"}}}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        }
        sandbox.objects.create("", "pods", body, namespace="default")
        status = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
        sandbox.objects.patch_status("", "pods", f"w-{index:02d}", status, namespace="default")
    return template


def _pinned(nodeclaim: dict[str, Any]) -> tuple[str, str]:
    values = {r["key"]: r.get("values") for r in nodeclaim["spec"]["requirements"]}
    return values["node.kubernetes.io/instance-type"][0], values["topology.kubernetes.io/zone"][0]


def _expansions(sandbox: Sandbox) -> list[dict[str, Any]]:
    return [n for n in nodeclaims(sandbox) if "tensor-fusion.ai/expansion-source" in n["metadata"]["labels"]]


def test_a_realistic_autoselect_cluster_expands_on_the_launched_type_and_moves_on_after_a_deletion(
    sandbox: Sandbox,
) -> None:
    template_name = _realistic_autoselect(sandbox, pods=30)
    (template,) = [n for n in nodeclaims(sandbox) if n["metadata"]["name"] == template_name]
    listed = [
        r["values"]
        for r in template["spec"]["requirements"]
        if r["key"] == "node.kubernetes.io/instance-type"
    ]
    assert len(listed[0]) > 3 and not any(
        r["key"] == "topology.kubernetes.io/zone" for r in template["spec"]["requirements"]
    )
    launched = (
        template["metadata"]["labels"]["node.kubernetes.io/instance-type"],
        template["metadata"]["labels"]["topology.kubernetes.io/zone"],
    )
    assert launched == ("g4dn.xlarge", "us-east-1b")
    reconcile(sandbox.deps, "e1", pool="auto-gpu")
    made = _expansions(sandbox)
    assert len(made) == 15, "at most 15 in flight"
    assert {_pinned(n) for n in made} == {launched}, "the template's launched type and zone first"
    assert all(n["spec"]["expireAfter"] == "720h" for n in made), "the NodePool's, as Karpenter's own"
    doomed = made[0]["metadata"]["name"]
    pod = made[0]["metadata"]["annotations"]["gpupool.io/expansion-for"]
    sandbox.objects.delete("karpenter.sh", "nodeclaims", doomed)  # as Karpenter on InsufficientCapacity
    reconcile(sandbox.deps, "e2", pool="auto-gpu")
    again = [
        n for n in _expansions(sandbox) if n["metadata"]["annotations"]["gpupool.io/expansion-for"] == pod
    ]
    (replacement,) = again
    assert replacement["metadata"]["name"] != doomed and _pinned(replacement) != launched
    assert len(_expansions(sandbox)) == 15


# Rows gpupool refuses that the real API server takes: the CRD's `values` pattern sits beside the
# array, where a server applies it to nothing — gpupool refuses such a value, which no label carries.
_STRICTER = {"a value no label carries", "a value with a newline"}


@pytest.mark.parametrize(("what", "claim", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_what_gpupools_check_refuses_the_sandboxs_crd_refuses(
    sandbox: Sandbox, what: str, claim: KarpenterNodeClaim, words: str
) -> None:
    assert nodeclaim_problems(claim)
    body = claim.model_dump(by_alias=True, exclude_none=True, mode="json")
    if what in _STRICTER:
        sandbox.custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", body)
        return
    with pytest.raises(ApiException) as raised:
        sandbox.custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", body)
    assert raised.value.status == 422
