"""One suite, two Karpenter ports under Karpenter mode's Compute: `KarpenterCompute` on the
Kubernetes adapter (the embedded API server, Karpenter's CRD schemas) and on the service tests'
`MemoryKarpenter`, so the fake the service is tested against stays honest.

Covers: launch creates the claim's NodeClaim from the pool's template, owned by the claim, only
once the node class it names exists, and a repeated launch adopts it (one NodeClaim); a NodeClaim
of the claim's name owned by another object is never adopted; find_by_claim / describe /
list_managed read NodeClaims as instances (a gone one reads terminated, a foreign id is left
out); terminate deletes the NodeClaim, is idempotent and refuses an id that is not a NodeClaim's;
a GPUNodeClass is another mode's template and is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client as k8s

from gpupool.adapters.kube.karpenter import KubeKarpenter
from gpupool.core.decisions.karpenter_nodeclaim import nodeclaim_template
from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.quantity import Quantity
from gpupool.service.errors import PermanentError
from gpupool.service.karpenter_compute import KarpenterCompute
from gpupool.testing.memory_ports import MemoryClock, MemoryKarpenter
from tests.service.test_karpenter_mode import karpenter_pool

from .conftest import make_claim

EC2_CLASS = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"}}
TEMPLATE = nodeclaim_template(karpenter_pool())
OFFERING = OfferingRef(
    instance_type="g5.xlarge",
    zone="us-east-1a",
    tflops=Quantity.parse("125"),
    vram=Quantity.parse("24Gi"),
    gpu_count=1,
    hourly_price="1",
)


@dataclass
class Backend:
    compute: KarpenterCompute
    remove_node_class: Any  # () -> None
    create_foreign: Any  # (name) -> None: a NodeClaim of that name that no GPUNodeClaim owns


def claim(name: str = "pool-a-x1") -> GPUNodeClaim:
    return make_claim(name, uid=f"uid-{name}")


EC2_CLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


@pytest.fixture(params=["kube", "memory"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "memory":
        memory = MemoryKarpenter(MemoryClock())

        def create_memory_foreign(name: str) -> None:
            memory.create_nodeclaim(KarpenterNodeClaim(metadata=ObjectMeta(name=name)))

        yield Backend(KarpenterCompute(memory), memory.node_classes.clear, create_memory_foreign)
        return
    api_client: Any = request.getfixturevalue("api_client")
    custom = k8s.CustomObjectsApi(api_client)
    custom.create_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", EC2_CLASS)

    def remove_node_class() -> None:
        custom.delete_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", "default")

    def create_kube_foreign(name: str) -> None:
        spec = {"nodeClassRef": {k: EC2_CLASS_REF[k] for k in ("group", "kind", "name")}, "requirements": []}
        body = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": name},
            "spec": spec,
        }
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", body)

    yield Backend(KarpenterCompute(KubeKarpenter(api_client)), remove_node_class, create_kube_foreign)


def test_launch_creates_the_claims_nodeclaim_owned_by_it_and_adopts_it_again(backend: Backend) -> None:
    compute = backend.compute
    assert compute.find_by_claim(claim()) is None
    instance_id = compute.launch(claim(), TEMPLATE, OFFERING, client_token="uid-1")
    assert instance_id == "nodeclaim/pool-a-x1"
    assert compute.launch(claim(), TEMPLATE, OFFERING, client_token="uid-1") == instance_id
    stored = compute.karpenter.get_nodeclaim("pool-a-x1")
    (owner,) = stored.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "GPUNodeClaim",
        "pool-a-x1",
        "uid-pool-a-x1",
        True,
    )
    assert stored.metadata.labels == {"team": "ml", "tensor-fusion.ai/node-provisioner": "pool-a-x1"}
    first = stored.spec.requirements[0]
    assert (first.key, first.values) == ("node.kubernetes.io/instance-type", ["g5.xlarge"])
    found = compute.find_by_claim(claim())
    assert found is not None and (found.instance_id, found.state, found.claim_name) == (
        instance_id,
        "pending",
        "pool-a-x1",
    )
    assert [i.instance_id for i in compute.list_managed()] == [instance_id]


def test_a_missing_node_class_refuses_the_launch_and_creates_nothing(backend: Backend) -> None:
    backend.remove_node_class()
    with pytest.raises(PermanentError, match=r"EC2NodeClass default \(karpenter.k8s.aws\) not found"):
        backend.compute.launch(claim(), TEMPLATE, OFFERING, client_token="uid-1")
    assert backend.compute.list_managed() == []


def test_a_nodeclaim_the_claim_does_not_own_is_never_adopted(backend: Backend) -> None:
    backend.create_foreign("pool-a-x1")
    with pytest.raises(PermanentError, match="not owned by GPUNodeClaim pool-a-x1"):
        backend.compute.find_by_claim(claim())
    with pytest.raises(PermanentError, match="not owned by GPUNodeClaim pool-a-x1"):
        backend.compute.launch(claim(), TEMPLATE, OFFERING, client_token="uid-1")


def test_terminate_deletes_the_nodeclaim_and_describe_reads_it_gone(backend: Backend) -> None:
    compute = backend.compute
    instance_id = compute.launch(claim(), TEMPLATE, OFFERING, client_token="uid-1")
    compute.terminate(instance_id)
    compute.terminate(instance_id)
    (deleting_or_gone,) = compute.describe([instance_id, "i-0123456789abcdef0"])
    assert deleting_or_gone.instance_id == instance_id and deleting_or_gone.gone
    assert compute.find_by_claim(claim()) is None
    with pytest.raises(PermanentError, match="not a Karpenter NodeClaim id"):
        compute.terminate("i-0123456789abcdef0")


def test_another_modes_template_is_refused(backend: Backend) -> None:
    with pytest.raises(PermanentError, match="NodeClaim template"):
        backend.compute.launch(
            claim(), GPUNodeClass(metadata=ObjectMeta(name="gpu-class")), OFFERING, client_token="t"
        )
    assert backend.compute.list_managed() == []
    assert backend.compute.launchable_zones(TEMPLATE) is None
