"""The Karpenter adapter and Karpenter mode on the embedded API server (the sandbox).

Through the wiring the functions use (`build_aws_deps` with a kubeconfig), the launch function
on a Karpenter-mode pool stores NodeClaims whose every TensorFusion field is read back raw from
the API server; the same event ten times makes one NodeClaim per needed node; a missing node
class fails the claim and creates nothing; deleting a claim deletes its NodeClaim. The adapter
itself: AlreadyExists / NotFound as the port promises, only labelled NodeClaims are listed,
and node classes are looked up through discovery.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as kube_config

from gpupool.adapters.aws.wiring import build_aws_deps
from gpupool.core.intake.causes import Reconcile, Sweep
from gpupool.core.model.karpenter import KarpenterNodeClaim, NodeClassReference
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.service.bind import handle_bind
from gpupool.service.deps import Deps
from gpupool.service.errors import AlreadyExists, NotFound, PermanentError
from gpupool.service.launch import handle_launch
from tests.service.fakes import OFFERINGS, FakeClock, FakeCompute
from tests.service.test_karpenter_mode import karpenter_pool

CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
EC2_CLASS = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"}}


@pytest.fixture
def sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Deps, Any]]:
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
        deps = dataclasses.replace(build_aws_deps(environ), offerings=OFFERINGS)
        # No EC2 here: the cloud's Compute is the in-memory fake (it has no instances); Karpenter
        # mode's is the Karpenter Compute on the embedded API server, through the wiring's port.
        assert deps.karpenter is not None
        deps = dataclasses.replace(deps, compute=FakeCompute(FakeClock()))
        custom = k8s.CustomObjectsApi(
            kube_config.new_client_from_config(config_file=str(api.kubeconfig_path))
        )
        custom.create_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", EC2_CLASS)
        deps.cluster.create_pool(karpenter_pool())
        yield deps, custom


def _nodeclaims(custom: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")[
        "items"
    ]
    return items


def test_launch_stores_nodeclaims_with_every_tensorfusion_field(sandbox: tuple[Deps, Any]) -> None:
    deps, custom = sandbox
    assert handle_launch(Reconcile(trigger="schedule", event_id="e1"), deps).errors == []
    claims = {c.name: c for c in deps.cluster.list_claims()}
    stored = _nodeclaims(custom)
    assert len(claims) == 2 and sorted(n["metadata"]["name"] for n in stored) == sorted(claims)
    for raw in stored:
        name = raw["metadata"]["name"]
        meta, spec = raw["metadata"], raw["spec"]
        (owner,) = meta["ownerReferences"]
        assert owner == {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUNodeClaim",
            "name": name,
            "uid": claims[name].metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert meta["labels"] == {"tensor-fusion.ai/node-provisioner": name, "team": "ml"}
        assert meta["annotations"] == {"karpenter.sh/do-not-disrupt": "true", "owner": "ml-platform"}
        assert [(r["key"], r["values"]) for r in spec["requirements"]] == [
            ("node.kubernetes.io/instance-type", ["g4dn.xlarge"]),
            ("topology.kubernetes.io/zone", ["us-east-1a"]),
            ("karpenter.sh/capacity-type", ["on-demand"]),
        ]
        assert spec["resources"] == {"requests": {"nvidia.com/gpu": "1"}}
        assert spec["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
        assert spec["nodeClassRef"] == {
            "group": "karpenter.k8s.aws",
            "kind": "EC2NodeClass",
            "name": "default",
        }
        status = claims[name].status
        assert status is not None and status.phase == "Creating" and status.instance_id == f"nodeclaim/{name}"


def test_the_same_event_ten_times_makes_one_nodeclaim_per_needed_node(sandbox: tuple[Deps, Any]) -> None:
    deps, custom = sandbox
    for _ in range(10):
        assert handle_launch(Reconcile(trigger="schedule", event_id="same"), deps).errors == []
    assert len(_nodeclaims(custom)) == 2 and len(deps.cluster.list_claims()) == 2


def test_a_missing_node_class_fails_the_claim_and_creates_no_nodeclaim(sandbox: tuple[Deps, Any]) -> None:
    deps, custom = sandbox
    custom.delete_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", "default")
    handle_launch(Reconcile(trigger="schedule", event_id="e1"), deps)
    assert _nodeclaims(custom) == []
    assert {c.status.phase for c in deps.cluster.list_claims() if c.status} == {"Failed"}


def test_deleting_a_claim_deletes_its_nodeclaim(sandbox: tuple[Deps, Any]) -> None:
    deps, custom = sandbox
    handle_launch(Reconcile(trigger="schedule", event_id="e1"), deps)
    doomed = deps.cluster.list_claims()[0].name
    deps.cluster.delete_claim(doomed)
    assert handle_bind(Sweep(event_id="s1"), deps).errors == []
    assert doomed not in [n["metadata"]["name"] for n in _nodeclaims(custom)]
    assert doomed not in [c.name for c in deps.cluster.list_claims()], "its finalizer was released"


def test_adapter_errors_listing_and_node_class_lookup(sandbox: tuple[Deps, Any]) -> None:
    deps, custom = sandbox
    karpenter = deps.karpenter
    assert karpenter is not None
    foreign = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "not-ours"},
        "spec": {"nodeClassRef": CLASS, "requirements": []},
    }
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", foreign)
    assert karpenter.list_nodeclaims() == [], "only NodeClaims labelled node-provisioner are gpupool's"
    mine = KarpenterNodeClaim.model_validate(
        {
            "metadata": {"name": "c1", "labels": {"tensor-fusion.ai/node-provisioner": "c1"}},
            "spec": {"nodeClassRef": CLASS, "requirements": []},
        }
    )
    karpenter.create_nodeclaim(mine)
    with pytest.raises(AlreadyExists):
        karpenter.create_nodeclaim(mine)
    assert [n.name for n in karpenter.list_nodeclaims()] == ["c1"]
    karpenter.delete_nodeclaim("c1")
    with pytest.raises(NotFound):
        karpenter.get_nodeclaim("c1")
    with pytest.raises(NotFound):
        karpenter.delete_nodeclaim("c1")
    ref = NodeClassReference(group="karpenter.k8s.aws", kind="EC2NodeClass", name="default")
    assert karpenter.node_class_exists(ref)
    assert not karpenter.node_class_exists(ref.model_copy(update={"name": "absent"}))
    assert not karpenter.node_class_exists(ref.model_copy(update={"kind": "NoSuchClass"}))


def _condition(custom: Any) -> dict[str, Any]:
    raw = custom.get_cluster_custom_object("tensor-fusion.ai", "v1", "tensorfusionclusters", "demo")
    (condition,) = [c for c in raw["status"]["conditions"] if c["type"] == "CloudVendorConnectionReady"]
    return condition  # type: ignore[no-any-return]


def test_connection_condition_follows_the_karpenter_check_in_the_sandbox(sandbox: tuple[Deps, Any]) -> None:
    deps, custom = sandbox
    body = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "TensorFusionCluster",
        "metadata": {"name": "demo"},
        "spec": {"computingVendor": {"name": "k", "type": "karpenter"}},
    }
    custom.create_cluster_custom_object("tensor-fusion.ai", "v1", "tensorfusionclusters", body)
    pool_b = karpenter_pool(name="pool-b", min_tflops=None, min_vram=None)
    deps.cluster.create_pool(
        pool_b.model_copy(
            update={
                "metadata": pool_b.metadata.model_copy(
                    update={"labels": {"tensor-fusion.ai/cluster": "demo"}}
                )
            }
        )
    )
    handle_launch(Reconcile(trigger="schedule", event_id="t1"), deps)
    ready = _condition(custom)
    assert (ready["status"], ready["reason"]) == ("True", "CloudVendorConnectionOK")
    assert "karpenter EC2NodeClass default" in ready["message"]
    custom.delete_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", "default")
    handle_launch(Reconcile(trigger="schedule", event_id="t2"), deps)
    failed = _condition(custom)
    assert (failed["status"], failed["reason"]) == ("False", "CloudVendorConnectionFailed")
    assert "EC2NodeClass default (karpenter.k8s.aws) not found" in failed["message"]


def test_check_access_names_a_missing_nodeclaim_crd() -> None:
    from gpupool.adapters.kube.karpenter import KubeKarpenter

    with EmbeddedKubeAPI(install_karpenter_crds=False) as api:
        karpenter = KubeKarpenter(kube_config.new_client_from_config(config_file=str(api.kubeconfig_path)))
        with pytest.raises(PermanentError, match=r"NodeClaim CRD .* is not installed"):
            karpenter.check_access()
        assert karpenter.list_nodeclaims() == []


def test_the_sandbox_nodeclaim_schema_rejects_and_prunes_as_a_real_cluster_would(
    sandbox: tuple[Deps, Any],
) -> None:
    from kubernetes.client.exceptions import ApiException

    _, custom = sandbox
    bad = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "bad"},
        "spec": {"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "Like"}]},
    }
    with pytest.raises(ApiException) as refused:
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", bad)
    assert refused.value.status == 422 and "operator" in str(refused.value.body)
    assert _nodeclaims(custom) == []
    extra = {
        **bad,
        "metadata": {"name": "extra"},
        "spec": {"nodeClassRef": CLASS, "requirements": [], "notAField": 1},
    }
    created = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", extra)
    assert "notAField" not in created["spec"]
