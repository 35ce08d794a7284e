"""The sandbox's Karpenter CRDs enforce the rules of Karpenter's published CRDs, rule by rule.

Each row of the tables is a NodeClaim or NodePool the real API server with Karpenter's CRDs
refuses (karpenter.sh/v1 at kubernetes-sigs/karpenter 2266468104f3: required fields, key and
duration patterns, enums, bounds, `maxItems` / `maxProperties`, every CEL rule with its own
message, `spec` immutability and the NodePool's transition rules), each refused here with 422
naming the field and carrying that message; what the real server accepts (all eight operators,
defaults filled in, the `values` pattern that applies to nothing, metadata and status changes)
is accepted; a CRD with a CEL rule the sandbox cannot evaluate is itself refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from kubeapi_builders import crd, status_body
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from gpupool.sandbox.crds.karpenter_schemas import NODECLAIM_SCHEMA, NODEPOOL_SCHEMA
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.kubeapi.cel_karpenter import KARPENTER_RULES

REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
TYPE_IN = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}
_names = itertools.count()


@pytest.fixture(scope="module")
def custom() -> Iterator[client.CustomObjectsApi]:
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        yield client.CustomObjectsApi(api_client)
        api_client.close()


def nodeclaim_spec(**changes: Any) -> dict[str, Any]:
    return {"nodeClassRef": dict(REF), "requirements": [dict(TYPE_IN)], **changes}


def nodepool_spec(template: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    spec = {"template": template or {"spec": {"nodeClassRef": dict(REF), "requirements": [dict(TYPE_IN)]}}}
    return {**spec, **changes}


def create(custom: client.CustomObjectsApi, plural: str, spec: Any) -> dict[str, Any]:
    kind = {"nodeclaims": "NodeClaim", "nodepools": "NodePool"}[plural]
    body: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": kind,
        "metadata": {"name": f"{plural[:-1]}-{next(_names)}"},
    }
    if spec is not None:
        body["spec"] = spec
    created: dict[str, Any] = custom.create_cluster_custom_object("karpenter.sh", "v1", plural, body)
    return created


def refused(custom: client.CustomObjectsApi, plural: str, spec: Any) -> list[tuple[str, str]]:
    with pytest.raises(ApiException) as raised:
        create(custom, plural, spec)
    assert raised.value.status == 422
    return [(c["field"], c["message"]) for c in status_body(raised.value)["details"]["causes"]]


def requirement(**fields: Any) -> dict[str, Any]:
    return nodeclaim_spec(requirements=[fields])


IN_RULE = "requirements with operator 'In' must have a value defined"
RANGE_RULE = "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"
MIN_VALUES_RULE = (
    "requirements with 'minValues' must have at least that many values specified in the 'values' field"
)
NODECLAIM_REFUSALS: list[tuple[str, Any, str, str]] = [
    ("no spec", None, "spec", "Required value"),
    ("no nodeClassRef", {"requirements": []}, "spec.nodeClassRef", "Required value"),
    ("no requirements", {"nodeClassRef": REF}, "spec.requirements", "Required value"),
    (
        "nodeClassRef without kind",
        nodeclaim_spec(nodeClassRef={"group": "g", "name": "n"}),
        "spec.nodeClassRef.kind",
        "Required value",
    ),
    (
        "empty group",
        nodeclaim_spec(nodeClassRef={**REF, "group": ""}),
        "spec.nodeClassRef.group",
        "group may not be empty",
    ),
    (
        "empty kind",
        nodeclaim_spec(nodeClassRef={**REF, "kind": ""}),
        "spec.nodeClassRef.kind",
        "kind may not be empty",
    ),
    (
        "empty name",
        nodeclaim_spec(nodeClassRef={**REF, "name": ""}),
        "spec.nodeClassRef.name",
        "name may not be empty",
    ),
    (
        "a group with a slash",
        nodeclaim_spec(nodeClassRef={**REF, "group": "a/b"}),
        "spec.nodeClassRef.group",
        "should match '^[^/]*$'",
    ),
    (
        "key in the karpenter.sh domain",
        requirement(key="karpenter.sh/foo", operator="Exists"),
        "spec.requirements[0].key",
        'label domain "karpenter.sh" is restricted',
    ),
    (
        "key in a karpenter.sh subdomain",
        requirement(key="x.karpenter.sh/foo", operator="Exists"),
        "spec.requirements[0].key",
        'label domain "karpenter.sh" is restricted',
    ),
    (
        "the hostname key",
        requirement(key="kubernetes.io/hostname", operator="Exists"),
        "spec.requirements[0].key",
        'label "kubernetes.io/hostname" is restricted',
    ),
    (
        "a key that is no label key",
        requirement(key="Bad Key", operator="Exists"),
        "spec.requirements[0].key",
        "in body should match",
    ),
    (
        "a key past 316 characters",
        requirement(key="a" * 317, operator="Exists"),
        "spec.requirements[0].key",
        "Too long: may not be more than 316 bytes",
    ),
    (
        "an unknown operator",
        requirement(key="k", operator="Equals", values=["a"]),
        "spec.requirements[0].operator",
        'Unsupported value: "Equals"',
    ),
    (
        "a requirement without operator",
        requirement(key="k"),
        "spec.requirements[0].operator",
        "Required value",
    ),
    ("In with no values", requirement(key="k", operator="In", values=[]), "spec.requirements", IN_RULE),
    (
        "In without a values field",
        requirement(key="k", operator="In"),
        "spec.requirements",
        f"no such key: values evaluating rule: {IN_RULE}",
    ),
    (
        "Gt with a negative value",
        requirement(key="k", operator="Gt", values=["-1"]),
        "spec.requirements",
        RANGE_RULE,
    ),
    (
        "Lt with two values",
        requirement(key="k", operator="Lt", values=["1", "2"]),
        "spec.requirements",
        RANGE_RULE,
    ),
    ("Gte with no value", requirement(key="k", operator="Gte", values=[]), "spec.requirements", RANGE_RULE),
    (
        "Lte with a word",
        requirement(key="k", operator="Lte", values=["four"]),
        "spec.requirements",
        f"evaluating rule: {RANGE_RULE}",
    ),
    (
        "minValues above the values",
        requirement(key="k", operator="In", values=["a"], minValues=2),
        "spec.requirements",
        MIN_VALUES_RULE,
    ),
    (
        "minValues of 0",
        requirement(key="k", operator="In", values=["a"], minValues=0),
        "spec.requirements[0].minValues",
        "should be greater than or equal to 1",
    ),
    (
        "minValues of 51",
        requirement(key="k", operator="In", values=["a"] * 51, minValues=51),
        "spec.requirements[0].minValues",
        "should be less than or equal to 50",
    ),
    (
        "101 requirements",
        nodeclaim_spec(requirements=[dict(TYPE_IN)] * 101),
        "spec.requirements",
        "Too many: 101: must have at most 100 items",
    ),
    (
        "expireAfter in days",
        nodeclaim_spec(expireAfter="30d"),
        "spec.expireAfter",
        "should match '^(([0-9]+(s|m|h))+|Never)$'",
    ),
    (
        "terminationGracePeriod in days",
        nodeclaim_spec(terminationGracePeriod="1d"),
        "spec.terminationGracePeriod",
        "should match '^([0-9]+(s|m|h))+$'",
    ),
    (
        "terminationGracePeriod Never",
        nodeclaim_spec(terminationGracePeriod="Never"),
        "spec.terminationGracePeriod",
        "should match",
    ),
    (
        "a taint without effect",
        nodeclaim_spec(taints=[{"key": "gpu"}]),
        "spec.taints[0].effect",
        "Required value",
    ),
    (
        "a taint with an unknown effect",
        nodeclaim_spec(taints=[{"key": "gpu", "effect": "NoWay"}]),
        "spec.taints[0].effect",
        "Unsupported value",
    ),
    (
        "a request that is no quantity",
        nodeclaim_spec(resources={"requests": {"nvidia.com/gpu": "lots"}}),
        "spec.resources.requests.nvidia.com/gpu",
        "should match",
    ),
]


@pytest.mark.parametrize(
    ("what", "spec", "field", "message"), NODECLAIM_REFUSALS, ids=[r[0] for r in NODECLAIM_REFUSALS]
)
def test_a_nodeclaim_the_real_crd_refuses_is_refused_with_its_message(
    custom: client.CustomObjectsApi, what: str, spec: Any, field: str, message: str
) -> None:
    causes = refused(custom, "nodeclaims", spec)
    assert any(f == field and message in m for f, m in causes), causes


def template(**spec: Any) -> dict[str, Any]:
    return {"spec": {"nodeClassRef": dict(REF), "requirements": [dict(TYPE_IN)], **spec}}


NODEPOOL_REFUSALS: list[tuple[str, Any, str, str]] = [
    ("no template", {}, "spec.template", "Required value"),
    ("a template without spec", {"template": {}}, "spec.template.spec", "Required value"),
    (
        "the nodepool key in the template's requirements",
        nodepool_spec(
            template(requirements=[{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]}])
        ),
        "spec.template.spec.requirements[0].key",
        'label "karpenter.sh/nodepool" is restricted',
    ),
    (
        "a karpenter.sh label",
        nodepool_spec({**template(), "metadata": {"labels": {"karpenter.sh/team": "a"}}}),
        "spec.template.metadata.labels",
        'label domain "karpenter.sh" is restricted',
    ),
    (
        "the nodepool label",
        nodepool_spec({**template(), "metadata": {"labels": {"karpenter.sh/nodepool": "a"}}}),
        "spec.template.metadata.labels",
        'label "karpenter.sh/nodepool" is restricted',
    ),
    (
        "the hostname label",
        nodepool_spec({**template(), "metadata": {"labels": {"kubernetes.io/hostname": "a"}}}),
        "spec.template.metadata.labels",
        'label "kubernetes.io/hostname" is restricted',
    ),
    (
        "a label value that is no label value",
        nodepool_spec({**template(), "metadata": {"labels": {"team": "a b"}}}),
        "spec.template.metadata.labels.team",
        "should match",
    ),
    (
        "101 labels",
        nodepool_spec({**template(), "metadata": {"labels": {f"l{i}": "v" for i in range(101)}}}),
        "spec.template.metadata.labels",
        "must have at most 100 items",
    ),
    (
        "In with no values",
        nodepool_spec(template(requirements=[{"key": "k", "operator": "In", "values": []}])),
        "spec.template.spec.requirements",
        IN_RULE,
    ),
    (
        "a budget schedule without duration",
        nodepool_spec(disruption={"budgets": [{"nodes": "1", "schedule": "@daily"}]}),
        "spec.disruption.budgets",
        "'schedule' must be set with 'duration'",
    ),
    (
        "a budget of 101%",
        nodepool_spec(disruption={"budgets": [{"nodes": "101%"}]}),
        "spec.disruption.budgets[0].nodes",
        "should match",
    ),
    (
        "an unknown consolidation policy",
        nodepool_spec(disruption={"consolidationPolicy": "Always"}),
        "spec.disruption.consolidationPolicy",
        "Unsupported value",
    ),
    ("weight 0", nodepool_spec(weight=0), "spec.weight", "should be greater than or equal to 1"),
    ("weight 101", nodepool_spec(weight=101), "spec.weight", "should be less than or equal to 100"),
    (
        "a static NodePool with a cpu limit",
        nodepool_spec(replicas=2, limits={"cpu": "10"}),
        "spec",
        "only 'limits.nodes' is supported on static NodePools",
    ),
    (
        "a static NodePool with a weight",
        nodepool_spec(replicas=2, weight=5),
        "spec",
        "'weight' is not supported on static NodePools",
    ),
]


@pytest.mark.parametrize(
    ("what", "spec", "field", "message"), NODEPOOL_REFUSALS, ids=[r[0] for r in NODEPOOL_REFUSALS]
)
def test_a_nodepool_the_real_crd_refuses_is_refused_with_its_message(
    custom: client.CustomObjectsApi, what: str, spec: Any, field: str, message: str
) -> None:
    causes = refused(custom, "nodepools", spec)
    assert any(f == field and message in m for f, m in causes), causes


def test_every_operator_and_the_crd_defaults_are_accepted(custom: client.CustomObjectsApi) -> None:
    requirements = [
        {"key": "a", "operator": "In", "values": ["x", "y"], "minValues": 2},
        {"key": "b", "operator": "NotIn", "values": ["x"]},
        {"key": "c", "operator": "Exists"},
        {"key": "d", "operator": "DoesNotExist"},
        *({"key": f"n{op}", "operator": op, "values": ["0"]} for op in ("Gt", "Lt", "Gte", "Lte")),
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu"]},
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["t4"]},
    ]
    created = create(custom, "nodeclaims", nodeclaim_spec(requirements=requirements))
    assert created["spec"]["expireAfter"] == "720h", "the CRD's default"
    assert len(created["spec"]["requirements"]) == len(requirements)
    pool = create(custom, "nodepools", nodepool_spec())
    assert pool["spec"]["disruption"] == {
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "10%"}],
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
    }
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "720h"


def test_a_values_entry_the_crds_pattern_would_refuse_is_accepted_as_the_real_server_does(
    custom: client.CustomObjectsApi,
) -> None:
    """Karpenter's CRD puts `pattern` and `maxLength` beside `values`' items, on the array: a
    real server applies string checks to strings only, so they constrain nothing."""
    spec = requirement(key="k", operator="In", values=["not a label value", "x" * 64])
    assert create(custom, "nodeclaims", spec)["spec"]["requirements"][0]["values"][1] == "x" * 64


def test_a_nodeclaims_spec_is_immutable_but_its_metadata_and_status_are_not(
    custom: client.CustomObjectsApi,
) -> None:
    name = create(custom, "nodeclaims", nodeclaim_spec(expireAfter="Never"))["metadata"]["name"]
    with pytest.raises(ApiException) as raised:
        custom.patch_cluster_custom_object(
            "karpenter.sh", "v1", "nodeclaims", name, {"spec": {"expireAfter": "1h"}}
        )
    assert raised.value.status == 422
    causes = [(c["field"], c["message"]) for c in status_body(raised.value)["details"]["causes"]]
    assert causes == [("spec", "Invalid value: spec is immutable")]
    labels = {"node.kubernetes.io/instance-type": "g5.xlarge", "topology.kubernetes.io/zone": "us-east-1a"}
    patched = custom.patch_cluster_custom_object(
        "karpenter.sh", "v1", "nodeclaims", name, {"metadata": {"labels": labels}}
    )
    assert patched["metadata"]["labels"] == labels
    launched = {
        "type": "Launched",
        "status": "True",
        "reason": "Launched",
        "lastTransitionTime": "2026-03-01T12:00:00Z",
    }
    status = custom.patch_cluster_custom_object_status(
        "karpenter.sh", "v1", "nodeclaims", name, {"status": {"conditions": [launched]}}
    )
    assert status["status"]["conditions"] == [launched] and status["spec"]["expireAfter"] == "Never"


def test_a_condition_without_its_transition_time_or_twice_is_refused(custom: client.CustomObjectsApi) -> None:
    name = create(custom, "nodeclaims", nodeclaim_spec())["metadata"]["name"]
    bare = {"type": "Launched", "status": "True"}
    with pytest.raises(ApiException) as raised:
        custom.patch_cluster_custom_object_status(
            "karpenter.sh", "v1", "nodeclaims", name, {"status": {"conditions": [bare]}}
        )
    causes = [c["field"] for c in status_body(raised.value)["details"]["causes"]]
    assert "status.conditions[0].lastTransitionTime" in causes
    full = {**bare, "lastTransitionTime": "2026-03-01T12:00:00Z"}
    with pytest.raises(ApiException) as twice:
        custom.patch_cluster_custom_object_status(
            "karpenter.sh", "v1", "nodeclaims", name, {"status": {"conditions": [full, full]}}
        )
    assert "Duplicate value" in status_body(twice.value)["details"]["causes"][0]["message"]


def test_a_nodepools_transition_rules_compare_with_the_stored_object(custom: client.CustomObjectsApi) -> None:
    name = create(custom, "nodepools", nodepool_spec())["metadata"]["name"]
    moved = {"spec": {"template": {"spec": {"nodeClassRef": {**REF, "kind": "OtherNodeClass"}}}}}
    with pytest.raises(ApiException) as kind:
        custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", name, moved)
    assert ("spec.template.spec.nodeClassRef", "Invalid value: nodeClassRef.kind is immutable") in [
        (c["field"], c["message"]) for c in status_body(kind.value)["details"]["causes"]
    ]
    with pytest.raises(ApiException) as static:
        custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", name, {"spec": {"replicas": 3}})
    assert "Cannot transition NodePool between static" in status_body(static.value)["message"]
    renamed = {"spec": {"template": {"spec": {"nodeClassRef": {**REF, "name": "other"}}}}}
    patched = custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", name, renamed)
    assert patched["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "other", "the name may change"


def _rules(schema: Any) -> set[str]:
    if isinstance(schema, list):
        return {rule for item in schema for rule in _rules(item)}
    if not isinstance(schema, dict):
        return set()
    found = {str(r["rule"]) for r in schema.get("x-kubernetes-validations") or []}
    return found | {rule for value in schema.values() for rule in _rules(value)}


def test_every_rule_the_crds_carry_has_a_check_and_every_check_a_rule() -> None:
    assert _rules(NODECLAIM_SCHEMA) | _rules(NODEPOOL_SCHEMA) == set(KARPENTER_RULES)


def test_a_crd_with_a_rule_the_sandbox_cannot_evaluate_is_refused(apiext: client.ApiextensionsV1Api) -> None:
    manifest = crd()
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.size > 1", "message": "big"}],
            }
        },
    }
    manifest["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": schema}
    with pytest.raises(ApiException) as raised:
        apiext.create_custom_resource_definition(manifest)
    assert raised.value.status == 422
    assert (
        "the sandbox evaluates only the CEL rules it has a check for" in status_body(raised.value)["message"]
    )
