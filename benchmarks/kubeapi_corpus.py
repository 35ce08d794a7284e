"""The corpus of the API server differential: one sequence of requests, sent to two servers.

Role: `CORPUS` — tensor-fusion.ai manifests (gpupool's CRDs) and Karpenter NodeClaims and
NodePools, valid and not (each NodeClaim and NodePool refusal one rule of Karpenter's CRDs, a
few rules together); creates, updates, patches of every kind and the status subresource; lists
and watches with resourceVersion, label and field selectors, paging, Table and
PartialObjectMetadata[List] answers; core/v1 and events.k8s.io Events; a few built-in kinds.
`TEARDOWN` deletes what the corpus made. Requests are templates: `{run}` (a token shared by both
servers in one run), `{ns}` (the run's namespace), `{rv[NAME]}` (the resourceVersion of the
answer to the request NAME). Everything the corpus writes carries the label `RUN_LABEL=<run>`.

Must not: send anything (`kubeapi_differential` does) or depend on a server's pre-existing
objects beyond the `default` namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CORPUS", "RUN_LABEL", "TEARDOWN", "Request"]

RUN_LABEL = "gpupool.dev/differential"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
METADATA_ONE = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True)
class Request:
    """One request of the corpus. `path` and string values in `body` may name `{ns}` (the run's
    namespace), `{run}` (the run's token) and `{rv[NAME]}` (the resourceVersion the answer to
    the request NAME carried). `setup` requests are sent, not compared."""

    name: str
    method: str
    path: str
    body: Any = None
    content_type: str = "application/json"
    accept: str = "application/json"
    setup: bool = False
    watch: bool = False


def _meta(name: str, **extra: Any) -> dict[str, Any]:
    labels = {RUN_LABEL: "{run}", **extra.pop("labels", {})}
    return {"name": name, "labels": labels, **extra}


REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
TYPE_IN = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
NODEPOOLS = "/apis/karpenter.sh/v1/nodepools"
RUN_SELECTOR = f"labelSelector={RUN_LABEL}%3D{{run}}"


def nodeclaim(name: str, labels: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": _meta(f"{{run}}-{name}", labels=dict(labels or {})),
        "spec": {"nodeClassRef": dict(REF), "requirements": [dict(TYPE_IN)], **spec},
    }


def nodepool(name: str, **spec: Any) -> dict[str, Any]:
    template = {"spec": {"nodeClassRef": dict(REF), "requirements": [dict(TYPE_IN)]}}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": _meta(f"{{run}}-{name}"),
        "spec": {"template": template, **spec},
    }


def _claim_refusals() -> list[Request]:
    """NodeClaims the real CRD refuses, one rule each (and a few rules together)."""
    rows: list[tuple[str, dict[str, Any]]] = [
        ("expireAfter with a trailing newline", {"expireAfter": "720h\n"}),
        ("expireAfter in days", {"expireAfter": "30d"}),
        ("terminationGracePeriod Never", {"terminationGracePeriod": "Never"}),
        ("an unknown operator", {"requirements": [{"key": "k", "operator": "Equals", "values": ["a"]}]}),
        ("In without values", {"requirements": [{"key": "k", "operator": "In", "values": []}]}),
        ("In without a values field", {"requirements": [{"key": "k", "operator": "In"}]}),
        ("Gt below zero", {"requirements": [{"key": "k", "operator": "Gt", "values": ["-1"]}]}),
        ("Gt with a newline", {"requirements": [{"key": "k", "operator": "Gt", "values": ["5\n"]}]}),
        ("Lte with a word", {"requirements": [{"key": "k", "operator": "Lte", "values": ["four"]}]}),
        (
            "minValues past values",
            {"requirements": [{"key": "k", "operator": "In", "values": ["a"], "minValues": 2}]},
        ),
        ("minValues 0", {"requirements": [{"key": "k", "operator": "In", "values": ["a"], "minValues": 0}]}),
        ("a karpenter.sh key", {"requirements": [{"key": "karpenter.sh/foo", "operator": "Exists"}]}),
        ("the hostname key", {"requirements": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]}),
        ("a key with a space", {"requirements": [{"key": "bad key", "operator": "Exists"}]}),
        ("101 requirements", {"requirements": [dict(TYPE_IN)] * 101}),
        ("an empty nodeClassRef name", {"nodeClassRef": {**REF, "name": ""}}),
        ("a taint with an unknown effect", {"taints": [{"key": "gpu", "effect": "Never"}]}),
        ("a request that is no quantity", {"resources": {"requests": {"nvidia.com/gpu": "lots"}}}),
        ("expireAfter of the wrong type", {"expireAfter": 5}),
        (
            "a blocking error beside a CEL rule",
            {
                "requirements": [
                    {"key": "k", "operator": "Equals"},
                    {"key": "j", "operator": "In", "values": []},
                ]
            },
        ),
        (
            "a pattern error beside a CEL rule",
            {"expireAfter": "1d", "requirements": [{"key": "j", "operator": "In", "values": []}]},
        ),
    ]
    return [
        Request(f"NodeClaim refused: {what}", "POST", NODECLAIMS, nodeclaim(f"bad{index}", **spec))
        for index, (what, spec) in enumerate(rows)
    ]


def _pool_refusals() -> list[Request]:
    rows: list[tuple[str, dict[str, Any]]] = [
        (
            "a budget schedule without duration",
            {"disruption": {"budgets": [{"nodes": "1", "schedule": "@daily"}]}},
        ),
        ("a budget of 101%", {"disruption": {"budgets": [{"nodes": "101%"}]}}),
        ("an unknown consolidation policy", {"disruption": {"consolidationPolicy": "Always"}}),
        ("weight 0", {"weight": 0}),
        ("a static NodePool with a cpu limit", {"replicas": 2, "limits": {"cpu": "10"}}),
    ]
    return [
        Request(f"NodePool refused: {what}", "POST", NODEPOOLS, nodepool(f"bad{index}", **spec))
        for index, (what, spec) in enumerate(rows)
    ]


def _condition(time_text: str) -> dict[str, Any]:
    return {
        "type": "Launched",
        "status": "True",
        "reason": "Launched",
        "message": "",
        "lastTransitionTime": time_text,
    }


def _karpenter() -> list[Request]:
    claim = f"{NODECLAIMS}/{{run}}-a"
    return [
        Request(
            "NodeClaim created with the CRD's defaults", "POST", NODECLAIMS, nodeclaim("a", {"team": "x"})
        ),
        Request(
            "NodeClaim b",
            "POST",
            NODECLAIMS,
            nodeclaim(
                "b", {"team": "y"}, expireAfter="Never", resources={"requests": {"nvidia.com/gpu": "1"}}
            ),
        ),
        Request("NodeClaim created again: AlreadyExists", "POST", NODECLAIMS, nodeclaim("a")),
        Request("NodeClaim read", "GET", claim),
        Request("NodeClaim read as metadata", "GET", claim, accept=METADATA_ONE),
        Request("NodeClaim read as a Table", "GET", claim, accept=TABLE),
        Request("NodeClaim missing: NotFound", "GET", f"{NODECLAIMS}/{{run}}-none"),
        Request("NodeClaim spec change: immutable", "PATCH", claim, {"spec": {"expireAfter": "1h"}}, MERGE),
        Request("NodeClaim label patch", "PATCH", claim, {"metadata": {"labels": {"zone": "a"}}}, MERGE),
        Request(
            "NodeClaim label JSON patch",
            "PATCH",
            claim,
            [{"op": "add", "path": "/metadata/annotations", "value": {"note": "n"}}],
            JSON_PATCH,
        ),
        Request(
            "NodeClaim strategic merge patch: 415",
            "PATCH",
            claim,
            {"metadata": {"labels": {"z": "b"}}},
            STRATEGIC,
        ),
        Request(
            "NodeClaim status patch",
            "PATCH",
            f"{claim}/status",
            {"status": {"conditions": [_condition("2026-03-01T12:00:00Z")]}},
            MERGE,
        ),
        Request(
            "NodeClaim status with a bad date-time",
            "PATCH",
            f"{claim}/status",
            {"status": {"conditions": [_condition("yesterday")]}},
            MERGE,
        ),
        Request(
            "NodeClaim status with a date-time past 23h",
            "PATCH",
            f"{claim}/status",
            {"status": {"conditions": [_condition("2026-03-01T24:00:00Z")]}},
            MERGE,
        ),
        Request("NodeClaim status read", "GET", f"{claim}/status"),
        Request(
            "NodeClaim status on the main endpoint is ignored",
            "PATCH",
            claim,
            {"status": {"providerID": "x"}},
            MERGE,
        ),
        Request(
            "NodeClaim dry-run create",
            "POST",
            f"{NODECLAIMS}?dryRun=All",
            nodeclaim("dry"),
        ),
        Request(
            "NodeClaim unknown field, Strict",
            "POST",
            f"{NODECLAIMS}?fieldValidation=Strict",
            {**nodeclaim("strict"), "spec": {**nodeclaim("strict")["spec"], "colour": "red"}},
        ),
        Request(
            "NodeClaim unknown field, Warn",
            "POST",
            NODECLAIMS,
            {**nodeclaim("warn"), "spec": {**nodeclaim("warn")["spec"], "colour": "red"}},
        ),
        *_claim_refusals(),
        Request("NodePool created with the CRD's defaults", "POST", NODEPOOLS, nodepool("p")),
        Request("NodePool read as a Table", "GET", f"{NODEPOOLS}/{{run}}-p", accept=TABLE),
        Request(
            "NodePool nodeClassRef kind change: transition rule",
            "PATCH",
            f"{NODEPOOLS}/{{run}}-p",
            {"spec": {"template": {"spec": {"nodeClassRef": {**REF, "kind": "Other"}}}}},
            MERGE,
        ),
        Request("NodePool weight update", "PATCH", f"{NODEPOOLS}/{{run}}-p", {"spec": {"weight": 10}}, MERGE),
        Request(
            "NodePool budget for Unhealthy nodes",
            "POST",
            NODEPOOLS,
            nodepool(
                "unhealthy", disruption={"budgets": [{"nodes": "1", "reasons": ["Unhealthy", "Drifted"]}]}
            ),
        ),
        *_pool_refusals(),
    ]


def _lists_and_watches() -> list[Request]:
    sel = RUN_SELECTOR
    return [
        Request("NodeClaims listed by the run label", "GET", f"{NODECLAIMS}?{sel}"),
        Request("NodeClaims listed by team=x", "GET", f"{NODECLAIMS}?{sel},team%3Dx"),
        Request("NodeClaims listed by team!=x", "GET", f"{NODECLAIMS}?{sel},team!%3Dx"),
        Request("NodeClaims listed by team in (x,y)", "GET", f"{NODECLAIMS}?{sel},team%20in%20(x,y)"),
        Request("NodeClaims listed by !zone", "GET", f"{NODECLAIMS}?{sel},!zone"),
        Request("NodeClaims listed by a bad selector: 400", "GET", f"{NODECLAIMS}?labelSelector=a%20in%20b"),
        Request(
            "NodeClaims by metadata.name",
            "GET",
            f"{NODECLAIMS}?{sel}&fieldSelector=metadata.name%3D{{run}}-b",
        ),
        Request(
            "NodeClaims by metadata.name!=",
            "GET",
            f"{NODECLAIMS}?{sel}&fieldSelector=metadata.name!%3D{{run}}-b",
        ),
        Request(
            "NodeClaims by an unknown field: 400",
            "GET",
            f"{NODECLAIMS}?fieldSelector=spec.expireAfter%3DNever",
        ),
        Request("NodeClaims one per page", "GET", f"{NODECLAIMS}?{sel}&limit=1"),
        Request("NodeClaims as a Table", "GET", f"{NODECLAIMS}?{sel}", accept=TABLE),
        Request("NodeClaims as metadata", "GET", f"{NODECLAIMS}?{sel}", accept=METADATA_LIST),
        Request("NodeClaims listed before the watch", "GET", f"{NODECLAIMS}?{sel}"),
        Request("NodeClaim c", "POST", NODECLAIMS, nodeclaim("c", {"team": "x"})),
        Request(
            "NodeClaim c relabelled",
            "PATCH",
            f"{NODECLAIMS}/{{run}}-c",
            {"metadata": {"labels": {"team": "z"}}},
            MERGE,
        ),
        Request("NodeClaim c deleted", "DELETE", f"{NODECLAIMS}/{{run}}-c"),
        Request(
            "NodeClaims watched from the list's resourceVersion",
            "GET",
            f"{NODECLAIMS}?{sel}&watch=1&timeoutSeconds=1"
            "&resourceVersion={rv[NodeClaims listed before the watch]}",
            watch=True,
        ),
        Request(
            "NodeClaims with team=x watched from the list's resourceVersion",
            "GET",
            f"{NODECLAIMS}?{sel},team%3Dx&watch=1&timeoutSeconds=1"
            "&resourceVersion={rv[NodeClaims listed before the watch]}",
            watch=True,
        ),
        Request(
            "NodeClaims watched from 0 (current objects first)",
            "GET",
            f"{NODECLAIMS}?{sel}&watch=1&timeoutSeconds=1&resourceVersion=0",
            watch=True,
        ),
        Request(
            "NodeClaims watched as a Table",
            "GET",
            f"{NODECLAIMS}?{sel}&watch=1&timeoutSeconds=1&resourceVersion=0",
            accept=TABLE,
            watch=True,
        ),
        Request(
            "NodeClaims watched with initial events and a bookmark",
            "GET",
            f"{NODECLAIMS}?{sel}&watch=1&timeoutSeconds=1&sendInitialEvents=true"
            "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
            watch=True,
        ),
    ]


def _tensor_fusion() -> list[Request]:
    pools = "/apis/tensor-fusion.ai/v1/gpupools"
    pool: dict[str, Any] = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": _meta("{run}-pool"),
        "spec": {
            "capacityConfig": {"minResources": {"tflops": "100", "vram": "16Gi"}},
            "nodeManagerConfig": {"provisioningMode": "Provisioned"},
        },
    }
    return [
        Request("GPUPool created", "POST", pools, pool),
        Request("GPUPool read as a Table", "GET", f"{pools}/{{run}}-pool", accept=TABLE),
        Request(
            "GPUPool with a bad quantity",
            "POST",
            pools,
            {
                **pool,
                "metadata": _meta("{run}-badq"),
                "spec": {"capacityConfig": {"minResources": {"tflops": "many"}}},
            },
        ),
        Request(
            "GPUPool with an unknown provisioning mode",
            "POST",
            pools,
            {
                **pool,
                "metadata": _meta("{run}-badm"),
                "spec": {"nodeManagerConfig": {"provisioningMode": "Magic"}},
            },
        ),
        Request("GPUPool update without resourceVersion", "PUT", f"{pools}/{{run}}-pool", pool),
        Request(
            "GPUPool update with a stale resourceVersion: Conflict",
            "PUT",
            f"{pools}/{{run}}-pool",
            {**pool, "metadata": {**pool["metadata"], "resourceVersion": "{rv[GPUPool created]}"}},
        ),
        Request(
            "GPUPool status patch",
            "PATCH",
            f"{pools}/{{run}}-pool/status",
            {"status": {"phase": "Running"}},
            MERGE,
        ),
        Request(
            "GPUPool status with a bad date-time",
            "PATCH",
            f"{pools}/{{run}}-pool/status",
            {
                "status": {
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-03-01"}]
                }
            },
            MERGE,
        ),
        Request(
            "GPUPool status with a quantity of the wrong type and a condition without type",
            "PATCH",
            f"{pools}/{{run}}-pool/status",
            {"status": {"totalTFlops": True, "conditions": [{"status": "True"}]}},
            MERGE,
        ),
        Request(
            "GPUPool with a negative-looking quantity and an unknown field, Warn",
            "POST",
            pools,
            {
                **pool,
                "metadata": _meta("{run}-neg"),
                "spec": {
                    "capacityConfig": {"minResources": {"tflops": "-1", "vram": "1e3"}},
                    "colour": "red",
                },
            },
        ),
        Request("GPUPools listed", "GET", f"{pools}?{RUN_SELECTOR}"),
        Request("GPUPools listed as a Table", "GET", f"{pools}?{RUN_SELECTOR}", accept=TABLE),
        Request(
            "GPUPool applied server-side",
            "PATCH",
            f"{pools}/{{run}}-applied?fieldManager=differential",
            {**pool, "metadata": _meta("{run}-applied")},
            APPLY,
        ),
    ]


def _events_and_builtins() -> list[Request]:
    ns = "/api/v1/namespaces/{ns}"
    involved = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": "{run}-a"}
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": _meta("{run}-launched", namespace="default"),
        "involvedObject": involved,
        "reason": "Launched",
        "message": "launched",
        "type": "Normal",
        "source": {"component": "gpupool"},
        "firstTimestamp": "2026-03-01T12:00:00Z",
        "lastTimestamp": "2026-03-01T12:00:00Z",
        "count": 1,
    }
    series = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": _meta("{run}-expanded", namespace="{ns}"),
        "eventTime": "2026-03-01T12:00:00.000000Z",
        "reportingController": "gpupool.dev/relay",
        "reportingInstance": "relay-0",
        "action": "Expand",
        "reason": "NodeExpansionCompleted",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "{ns}"},
        "note": "created",
        "type": "Normal",
    }
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("settings"), "data": {"a": "1"}}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta("{run}-node", labels={"gpu": "t4"}),
        "spec": {},
    }
    return [
        Request("Event about a NodeClaim in default", "POST", "/api/v1/namespaces/default/events", event),
        Request(
            "Event about a NodeClaim in another namespace: Invalid",
            "POST",
            f"{ns}/events",
            {**event, "metadata": _meta("{run}-elsewhere", namespace="{ns}")},
        ),
        Request(
            "Events by involvedObject.name",
            "GET",
            "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D{run}-a",
        ),
        Request(
            "Events by reason and type",
            "GET",
            f"/api/v1/namespaces/default/events?{RUN_SELECTOR}&fieldSelector=reason%3DLaunched,type%3DNormal",
        ),
        Request(
            "Events as a Table", "GET", f"/api/v1/namespaces/default/events?{RUN_SELECTOR}", accept=TABLE
        ),
        Request("events.k8s.io Event", "POST", "/apis/events.k8s.io/v1/namespaces/{ns}/events", series),
        Request(
            "events.k8s.io Event without eventTime: Invalid",
            "POST",
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
            {**series, "metadata": _meta("{run}-untimed", namespace="{ns}"), "eventTime": None},
        ),
        Request("ConfigMap created", "POST", f"{ns}/configmaps", config_map),
        Request(
            "ConfigMap with a bad key: Invalid",
            "POST",
            f"{ns}/configmaps",
            {**config_map, "metadata": _meta("bad"), "data": {"a b": "1"}},
        ),
        Request(
            "ConfigMap strategic merge patch",
            "PATCH",
            f"{ns}/configmaps/settings",
            {"data": {"b": "2"}},
            STRATEGIC,
        ),
        Request("ConfigMaps as metadata", "GET", f"{ns}/configmaps?{RUN_SELECTOR}", accept=METADATA_LIST),
        Request("Node created", "POST", "/api/v1/nodes", node),
        Request(
            "Node status patch",
            "PATCH",
            "/api/v1/nodes/{run}-node/status",
            {"status": {"capacity": {"nvidia.com/gpu": "4"}}},
            STRATEGIC,
        ),
        Request(
            "Node cordoned", "PATCH", "/api/v1/nodes/{run}-node", {"spec": {"unschedulable": True}}, STRATEGIC
        ),
        Request(
            "Nodes unschedulable",
            "GET",
            f"/api/v1/nodes?{RUN_SELECTOR}&fieldSelector=spec.unschedulable%3Dtrue",
        ),
        Request("Nodes as a Table", "GET", f"/api/v1/nodes?{RUN_SELECTOR}", accept=TABLE),
        Request(
            "Pod without containers: Invalid",
            "POST",
            f"{ns}/pods",
            {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("empty"), "spec": {"containers": []}},
        ),
        Request(
            "Pod with a wrong type: BadRequest",
            "POST",
            f"{ns}/pods",
            {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("typed"), "spec": {"containers": "c"}},
        ),
    ]


def _setup() -> list[Request]:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("{ns}")}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    return [
        Request("Namespace created", "POST", "/api/v1/namespaces", namespace),
        # What kube-controller-manager makes in every namespace, and ServiceAccount admission needs
        # before it looks at a pod (a bare kube-apiserver refuses pods 403 without it).
        Request(
            "ServiceAccount default", "POST", "/api/v1/namespaces/{ns}/serviceaccounts", account, setup=True
        ),
    ]


CORPUS: tuple[Request, ...] = (
    *_setup(),
    *_karpenter(),
    *_lists_and_watches(),
    *_tensor_fusion(),
    *_events_and_builtins(),
)


def _teardown() -> list[Request]:
    sel = RUN_SELECTOR
    return [
        Request("delete NodeClaims", "DELETE", f"{NODECLAIMS}?{sel}", setup=True),
        Request("delete NodePools", "DELETE", f"{NODEPOOLS}?{sel}", setup=True),
        Request("delete GPUPools", "DELETE", f"/apis/tensor-fusion.ai/v1/gpupools?{sel}", setup=True),
        Request("delete Events", "DELETE", f"/api/v1/namespaces/default/events?{sel}", setup=True),
        Request("delete Nodes", "DELETE", f"/api/v1/nodes?{sel}", setup=True),
        Request("delete the namespace", "DELETE", "/api/v1/namespaces/{ns}", setup=True),
    ]


TEARDOWN: tuple[Request, ...] = tuple(_teardown())
