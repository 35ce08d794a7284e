"""CustomResourceDefinitions for Karpenter's resources, so the sandbox serves them as a cluster would.

karpenter.sh/v1 NodePool and NodeClaim, karpenter.k8s.aws/v1 EC2NodeClass: all
cluster-scoped with a status subresource (names and scopes as Karpenter's published CRDs have
them), with gpupool's own structural schemas written from those CRDs' rules
(`karpenter_schemas`: required fields, defaults, patterns, bounds, `maxItems` and the CEL
rules), so the sandbox prunes, defaults and refuses as a cluster with Karpenter would.
Printer columns are left out (the sandbox's printer reads plain field paths only).

Must not: carry Karpenter's CRD files (they are not ours to copy) or any behaviour.
"""

from __future__ import annotations

from typing import Any

from gpupool.sandbox.crds.karpenter_schemas import EC2NODECLASS_SCHEMA, NODECLAIM_SCHEMA, NODEPOOL_SCHEMA

JsonObject = dict[str, Any]


def _crd(
    group: str, kind: str, plural: str, short_names: list[str], categories: list[str], schema: JsonObject
) -> JsonObject:
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
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def karpenter_crds() -> list[JsonObject]:
    """NodePool, NodeClaim (karpenter.sh/v1) and EC2NodeClass (karpenter.k8s.aws/v1)."""
    return [
        _crd("karpenter.sh", "NodePool", "nodepools", [], ["karpenter"], NODEPOOL_SCHEMA),
        _crd("karpenter.sh", "NodeClaim", "nodeclaims", [], ["karpenter"], NODECLAIM_SCHEMA),
        _crd(
            "karpenter.k8s.aws",
            "EC2NodeClass",
            "ec2nodeclasses",
            ["ec2nc", "ec2ncs"],
            ["karpenter"],
            EC2NODECLASS_SCHEMA,
        ),
    ]
