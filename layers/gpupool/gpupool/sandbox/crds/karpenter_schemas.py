"""Structural openAPIV3 schemas for the sandbox's Karpenter CRDs, with Karpenter's rules.

Role: gpupool's own schemas for karpenter.sh/v1 NodeClaim and NodePool, written from the facts of
Karpenter's published CRDs (kubernetes-sigs/karpenter `pkg/apis/crds/` at
2266468104f36373ed002241afaee2d3bbc26078, plus v1.15.0's budget reason `Unhealthy`): the same
fields, types, `required` lists, defaults (`expireAfter: 720h`, the NodePool's `disruption`),
patterns (label keys, durations, quantities, condition types and reasons), bounds (`minValues`
1–50, `weight` 1–100), `maxItems` (100 requirements, 50 budgets) and `maxProperties` (100 template
labels), the list types, and every CEL rule (`x-kubernetes-validations`) with Karpenter's own text
and message, which the embedded API server evaluates with the checks in
`gpupool.sandbox.kubeapi.cel_karpenter`. As in Karpenter's CRD, a requirement's `values` carries a
`pattern` / `maxLength` beside its `items`, which a real API server applies to nothing (string
checks apply to strings); so does the sandbox's. EC2NodeClass (karpenter.k8s.aws/v1) is kept whole
(`x-kubernetes-preserve-unknown-fields`): gpupool only reads that it exists.

Must not: copy Karpenter's CRD files (descriptions and layout are not ours), or add behaviour.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EC2NODECLASS_SCHEMA", "NODECLAIM_SCHEMA", "NODEPOOL_SCHEMA"]

JsonObject = dict[str, Any]

# Patterns, as Karpenter's CRDs (and Kubernetes' label rules) spell them.
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+|Never)$"
DURATION = r"^([0-9]+(s|m|h))+$"
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)

# The CEL rules, with Karpenter's text and message.
RULE_IMMUTABLE = {"rule": "self == oldSelf", "message": "spec is immutable"}
RULE_KARPENTER_DOMAIN = {
    "rule": 'self in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || '
    '!self.find("^([^/]+)").endsWith("karpenter.sh")',
    "message": 'label domain "karpenter.sh" is restricted',
}
RULE_NO_HOSTNAME = {
    "rule": 'self != "kubernetes.io/hostname"',
    "message": 'label "kubernetes.io/hostname" is restricted',
}
RULE_NO_NODEPOOL_KEY = {
    "rule": 'self != "karpenter.sh/nodepool"',
    "message": 'label "karpenter.sh/nodepool" is restricted',
}
RULE_IN_HAS_VALUES = {
    "rule": "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
    "message": "requirements with operator 'In' must have a value defined",
}
RULE_RANGE_SINGLE_INTEGER = {
    "rule": "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || "
    "x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
    "message": "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
}
RULE_MIN_VALUES = {
    "rule": "self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)",
    "message": "requirements with 'minValues' must have at least that many values specified in the "
    "'values' field",
}


def _not_empty(what: str) -> JsonObject:
    return {"rule": "self != ''", "message": f"{what} may not be empty"}


_STRING: JsonObject = {"type": "string"}
_QUANTITY_MAP: JsonObject = {
    "type": "object",
    "additionalProperties": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY,
        "x-kubernetes-int-or-string": True,
    },
}
_PRESERVE: JsonObject = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _node_class_ref(*extra_rules: JsonObject) -> JsonObject:
    ref: JsonObject = {
        "type": "object",
        "required": ["group", "kind", "name"],
        "properties": {
            "group": {
                "type": "string",
                "pattern": r"^[^/]*$",
                "x-kubernetes-validations": [_not_empty("group")],
            },
            "kind": {"type": "string", "x-kubernetes-validations": [_not_empty("kind")]},
            "name": {"type": "string", "x-kubernetes-validations": [_not_empty("name")]},
        },
    }
    if extra_rules:
        ref["x-kubernetes-validations"] = list(extra_rules)
    return ref


def _requirements(*key_rules: JsonObject) -> JsonObject:
    return {
        "type": "array",
        "maxItems": 100,
        "x-kubernetes-list-type": "atomic",
        "items": {
            "type": "object",
            "required": ["key", "operator"],
            "properties": {
                "key": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": LABEL_KEY,
                    "x-kubernetes-validations": list(key_rules),
                },
                "operator": {
                    "type": "string",
                    "enum": ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"],
                },
                # As in Karpenter's CRD: a pattern and maxLength beside the items, which a real
                # API server applies to nothing (string checks apply to strings).
                "values": {
                    "type": "array",
                    "items": _STRING,
                    "x-kubernetes-list-type": "atomic",
                    "maxLength": 63,
                    "pattern": LABEL_VALUE,
                },
                "minValues": {"type": "integer", "minimum": 1, "maximum": 50},
            },
        },
        "x-kubernetes-validations": [RULE_IN_HAS_VALUES, RULE_RANGE_SINGLE_INTEGER, RULE_MIN_VALUES],
    }


_TAINTS: JsonObject = {
    "type": "array",
    "x-kubernetes-list-type": "atomic",
    "items": {
        "type": "object",
        "required": ["effect", "key"],
        "properties": {
            "effect": {"type": "string", "enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
            "key": {"type": "string", "minLength": 1, "pattern": LABEL_KEY},
            "timeAdded": {"type": "string", "format": "date-time"},
            "value": {"type": "string", "pattern": LABEL_KEY},
        },
    },
}


def _conditions(reason: JsonObject, required: list[str]) -> JsonObject:
    return {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": required,
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "message": {"type": "string", "maxLength": 32768},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "reason": reason,
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "type": {"type": "string", "maxLength": 316, "pattern": CONDITION_TYPE},
            },
        },
    }


def _claim_spec(
    *, resources: bool, key_rules: tuple[JsonObject, ...], ref_rules: tuple[JsonObject, ...]
) -> JsonObject:
    properties: JsonObject = {
        "expireAfter": {"type": "string", "default": "720h", "pattern": DURATION_OR_NEVER},
        "nodeClassRef": _node_class_ref(*ref_rules),
        "requirements": _requirements(*key_rules),
        "startupTaints": _TAINTS,
        "taints": _TAINTS,
        "terminationGracePeriod": {"type": "string", "pattern": DURATION},
    }
    if resources:
        properties["resources"] = {"type": "object", "properties": {"requests": _QUANTITY_MAP}}
    return {"type": "object", "required": ["nodeClassRef", "requirements"], "properties": properties}


_NODECLAIM_SPEC = {
    **_claim_spec(resources=True, key_rules=(RULE_KARPENTER_DOMAIN, RULE_NO_HOSTNAME), ref_rules=()),
    "x-kubernetes-validations": [RULE_IMMUTABLE],
}

NODECLAIM_SCHEMA: JsonObject = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "apiVersion": _STRING,
        "kind": _STRING,
        "metadata": {"type": "object"},
        "spec": _NODECLAIM_SPEC,
        "status": {
            "type": "object",
            "properties": {
                "allocatable": _QUANTITY_MAP,
                "capacity": _QUANTITY_MAP,
                "conditions": _conditions(
                    {
                        "type": "string",
                        "maxLength": 1024,
                        "pattern": r"^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$",
                    },
                    ["lastTransitionTime", "status", "type"],
                ),
                "imageID": _STRING,
                "lastPodEventTime": {"type": "string", "format": "date-time"},
                "nodeName": _STRING,
                "providerID": _STRING,
            },
        },
    },
}

_TEMPLATE_LABELS: JsonObject = {
    "type": "object",
    "maxProperties": 100,
    "x-kubernetes-map-type": "atomic",
    "additionalProperties": {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE},
    "x-kubernetes-validations": [
        {
            "rule": 'self.all(x, x in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || '
            '!x.find("^([^/]+)").endsWith("karpenter.sh"))',
            "message": 'label domain "karpenter.sh" is restricted',
        },
        {
            "rule": 'self.all(x, x != "karpenter.sh/nodepool")',
            "message": 'label "karpenter.sh/nodepool" is restricted',
        },
        {
            "rule": 'self.all(x, x != "kubernetes.io/hostname")',
            "message": 'label "kubernetes.io/hostname" is restricted',
        },
    ],
}
_BUDGETS: JsonObject = {
    "type": "array",
    "maxItems": 50,
    "default": [{"nodes": "10%"}],
    "x-kubernetes-list-type": "atomic",
    "items": {
        "type": "object",
        "required": ["nodes"],
        "properties": {
            "duration": {"type": "string", "pattern": r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"},
            "nodes": {"type": "string", "default": "10%", "pattern": r"^((100|[0-9]{1,2})%|[0-9]+)$"},
            "reasons": {
                "type": "array",
                "maxItems": 50,
                "x-kubernetes-list-type": "set",
                # Karpenter v1.15.0 (the version the real tier pins) adds Unhealthy.
                "items": {"type": "string", "enum": ["Underutilized", "Empty", "Drifted", "Unhealthy"]},
            },
            "schedule": {
                "type": "string",
                "pattern": r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|"
                r"((.+)\s(.+)\s(.+)\s(.+)\s(.+))$",
            },
        },
    },
    "x-kubernetes-validations": [
        {
            "rule": "self.all(x, has(x.schedule) == has(x.duration))",
            "message": "'schedule' must be set with 'duration'",
        }
    ],
}
NODEPOOL_SCHEMA: JsonObject = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "apiVersion": _STRING,
        "kind": _STRING,
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["template"],
            "properties": {
                "disruption": {
                    "type": "object",
                    "default": {"consolidateAfter": "0s"},
                    "properties": {
                        "budgets": _BUDGETS,
                        "consolidateAfter": {"type": "string", "default": "0s", "pattern": DURATION_OR_NEVER},
                        "consolidationPolicy": {
                            "type": "string",
                            "default": "WhenEmptyOrUnderutilized",
                            "enum": ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"],
                        },
                    },
                },
                "limits": _QUANTITY_MAP,
                "replicas": {"type": "integer", "format": "int64", "minimum": 0},
                "template": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "metadata": {
                            "type": "object",
                            "properties": {
                                "annotations": {"type": "object", "additionalProperties": _STRING},
                                "labels": _TEMPLATE_LABELS,
                            },
                        },
                        "spec": _claim_spec(
                            resources=False,
                            key_rules=(RULE_KARPENTER_DOMAIN, RULE_NO_NODEPOOL_KEY, RULE_NO_HOSTNAME),
                            ref_rules=(
                                {
                                    "rule": "self.group == oldSelf.group",
                                    "message": "nodeClassRef.group is immutable",
                                },
                                {
                                    "rule": "self.kind == oldSelf.kind",
                                    "message": "nodeClassRef.kind is immutable",
                                },
                            ),
                        ),
                    },
                },
                "weight": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 100},
            },
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.replicas) == has(oldSelf.replicas)",
                    "message": "Cannot transition NodePool between static (replicas set) and dynamic "
                    "(replicas unset) provisioning modes",
                },
                {
                    "rule": "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
                    "(size(self.limits) == 1 && 'nodes' in self.limits))",
                    "message": "only 'limits.nodes' is supported on static NodePools",
                },
                {
                    "rule": "!has(self.replicas) || !has(self.weight)",
                    "message": "'weight' is not supported on static NodePools",
                },
            ],
        },
        "status": {
            "type": "object",
            "properties": {
                "conditions": _conditions(
                    {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 1024,
                        "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                    },
                    ["lastTransitionTime", "message", "reason", "status", "type"],
                ),
                "nodeClassObservedGeneration": {"type": "integer", "format": "int64"},
                "nodes": {"type": "integer", "format": "int64", "default": 0},
                "resources": _QUANTITY_MAP,
            },
        },
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
