"""Structural openAPIV3 schemas for the sandbox's Karpenter CRDs (NodeClaim, NodePool, EC2NodeClass).

Role: gpupool's own schemas, written from the field names of Karpenter's v1 API
(karpenter.sh/docs/concepts/nodeclaims, nodepools, nodeclasses): the fields gpupool and the
simulated Karpenter read and write are typed (requirements, resources, taints, nodeClassRef,
providerID, nodeName, conditions, …), so the embedded API server prunes and rejects what a
real API server with Karpenter's CRDs would; blocks gpupool never touches (disruption, the
EC2NodeClass spec) are kept whole with `x-kubernetes-preserve-unknown-fields`.

Must not: copy Karpenter's published CRD files, or add behaviour.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EC2NODECLASS_SCHEMA", "NODECLAIM_SCHEMA", "NODEPOOL_SCHEMA"]

JsonObject = dict[str, Any]

_STRING: JsonObject = {"type": "string"}
_STRINGS: JsonObject = {"type": "array", "items": _STRING}
_STRING_MAP: JsonObject = {"type": "object", "additionalProperties": _STRING}
_QUANTITY_MAP: JsonObject = {
    "type": "object",
    "additionalProperties": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    },
}
_PRESERVE: JsonObject = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_REQUIREMENT: JsonObject = {
    "type": "object",
    "required": ["key", "operator"],
    "properties": {
        "key": _STRING,
        "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]},
        "values": _STRINGS,
        "minValues": {"type": "integer", "minimum": 1},
    },
}
_TAINT: JsonObject = {
    "type": "object",
    "required": ["key", "effect"],
    "properties": {
        "key": _STRING,
        "value": _STRING,
        "effect": {"type": "string", "enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
        "timeAdded": _STRING,
    },
}
_CONDITION: JsonObject = {
    "type": "object",
    "required": ["type", "status"],
    "properties": {
        "type": _STRING,
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": _STRING,
        "message": _STRING,
        "lastTransitionTime": _STRING,
        "observedGeneration": {"type": "integer"},
    },
}
_NODECLAIM_SPEC: JsonObject = {
    "type": "object",
    "properties": {
        "nodeClassRef": {
            "type": "object",
            "required": ["group", "kind", "name"],
            "properties": {"group": _STRING, "kind": _STRING, "name": _STRING},
        },
        "requirements": {"type": "array", "items": _REQUIREMENT},
        "resources": {"type": "object", "properties": {"requests": _QUANTITY_MAP}},
        "taints": {"type": "array", "items": _TAINT},
        "startupTaints": {"type": "array", "items": _TAINT},
        "expireAfter": _STRING,
        "terminationGracePeriod": _STRING,
    },
}
NODECLAIM_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "apiVersion": _STRING,
        "kind": _STRING,
        "metadata": {"type": "object"},
        "spec": _NODECLAIM_SPEC,
        "status": {
            "type": "object",
            "properties": {
                "providerID": _STRING,
                "nodeName": _STRING,
                "imageID": _STRING,
                "capacity": _QUANTITY_MAP,
                "allocatable": _QUANTITY_MAP,
                "conditions": {"type": "array", "items": _CONDITION},
                "lastPodEventTime": _STRING,
            },
        },
    },
}
NODEPOOL_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "apiVersion": _STRING,
        "kind": _STRING,
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "template": {
                    "type": "object",
                    "properties": {
                        "metadata": {
                            "type": "object",
                            "properties": {"labels": _STRING_MAP, "annotations": _STRING_MAP},
                        },
                        "spec": _NODECLAIM_SPEC,
                    },
                },
                "disruption": _PRESERVE,
                "limits": _QUANTITY_MAP,
                "weight": {"type": "integer", "minimum": 1, "maximum": 100},
            },
        },
        "status": _PRESERVE,
    },
}
EC2NODECLASS_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "apiVersion": _STRING,
        "kind": _STRING,
        "metadata": {"type": "object"},
        "spec": _PRESERVE,
        "status": _PRESERVE,
    },
}
