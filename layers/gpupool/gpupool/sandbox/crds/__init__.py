"""CustomResourceDefinitions for Karpenter's resources, so the sandbox serves them as a cluster would.

karpenter.sh/v1 NodePool and NodeClaim, karpenter.k8s.aws/v1 EC2NodeClass: all
cluster-scoped with a status subresource (names and scopes as Karpenter's published CRDs have
them), with gpupool's own structural schemas written from those CRDs' rules
(`karpenter_schemas`: required fields, defaults, patterns, bounds, `maxItems` and the CEL
rules), so the sandbox prunes, defaults and refuses as a cluster with Karpenter would.
NodeClaim and NodePool print the columns Karpenter v1.15.0's CRDs declare (names, types, JSONPaths
and priorities; `kubectl get nodeclaims` shows Type, Capacity, Zone, Node, Ready, Age).

Must not: carry Karpenter's CRD files (they are not ours to copy) or any behaviour.
"""

from __future__ import annotations

from typing import Any

from gpupool.sandbox.crds.karpenter_schemas import EC2NODECLASS_SCHEMA, NODECLAIM_SCHEMA, NODEPOOL_SCHEMA

JsonObject = dict[str, Any]


def _column(name: str, path: str, *, kind: str = "string", priority: int = 0) -> JsonObject:
    column: JsonObject = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


def _ready(condition: str) -> str:
    return f'.status.conditions[?(@.type=="{condition}")].status'


NODECLAIM_COLUMNS = [
    _column("Type", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
    _column("Capacity", ".metadata.labels.karpenter\\.sh/capacity-type"),
    _column("Zone", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
    _column("Node", ".status.nodeName"),
    _column("Ready", _ready("Ready")),
    _column("Age", ".metadata.creationTimestamp", kind="date"),
    _column("ImageID", ".status.imageID", priority=1),
    _column("ID", ".status.providerID", priority=1),
    _column("NodePool", ".metadata.labels.karpenter\\.sh/nodepool", priority=1),
    _column("NodeClass", ".spec.nodeClassRef.name", priority=1),
    _column("Drifted", _ready("Drifted"), priority=1),
]
NODEPOOL_COLUMNS = [
    _column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
    _column("Nodes", ".status.nodes"),
    _column("Ready", _ready("Ready")),
    _column("Age", ".metadata.creationTimestamp", kind="date"),
    _column("Weight", ".spec.weight", kind="integer", priority=1),
    _column("CPU", ".status.resources.cpu", priority=1),
    _column("Memory", ".status.resources.memory", priority=1),
]


def _crd(
    group: str,
    kind: str,
    plural: str,
    short_names: list[str],
    categories: list[str],
    schema: JsonObject,
    columns: list[JsonObject] | None = None,
) -> JsonObject:
    version: JsonObject = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "subresources": {"status": {}},
    }
    if columns:
        version["additionalPrinterColumns"] = columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short_names,
                "categories": categories,
            },
            "scope": "Cluster",
            "versions": [version],
        },
    }


def karpenter_crds() -> list[JsonObject]:
    """NodePool, NodeClaim (karpenter.sh/v1) and EC2NodeClass (karpenter.k8s.aws/v1)."""
    return [
        _crd("karpenter.sh", "NodePool", "nodepools", [], ["karpenter"], NODEPOOL_SCHEMA, NODEPOOL_COLUMNS),
        _crd(
            "karpenter.sh", "NodeClaim", "nodeclaims", [], ["karpenter"], NODECLAIM_SCHEMA, NODECLAIM_COLUMNS
        ),
        _crd(
            "karpenter.k8s.aws",
            "EC2NodeClass",
            "ec2nodeclasses",
            ["ec2nc", "ec2ncs"],
            ["karpenter"],
            EC2NODECLASS_SCHEMA,
        ),
    ]
