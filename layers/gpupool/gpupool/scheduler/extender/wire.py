"""kube-scheduler extender wire shapes (k8s.io/kube-scheduler/extender/v1), read and written exactly.

Role: ExtenderArgs {Pod, Nodes, NodeNames}, ExtenderFilterResult {Nodes, NodeNames, FailedNodes,
FailedAndUnresolvableNodes, Error}, HostPriorityList [{Host, Score}], ExtenderBindingArgs
{PodName, PodNamespace, PodUID, Node}, ExtenderBindingResult {Error}. The Go types carry no JSON
tags, so field names are the Go names; Go's decoder matches them case-insensitively, and so do we
on input. Source: kubernetes staging/src/k8s.io/kube-scheduler/extender/v1/types.go.

Must not: decide placement (see `handle`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BindingArgs",
    "ExtenderArgs",
    "WireError",
    "binding_result",
    "filter_error",
    "filter_result",
    "host_priority_list",
    "parse_binding_args",
    "parse_extender_args",
]


class WireError(ValueError):
    """A body that is not the extender shape it should be."""


def _fields(body: Any, shape: str) -> dict[str, Any]:
    if not isinstance(body, Mapping):
        raise WireError(f"{shape} must be a JSON object")
    return {str(k).lower(): v for k, v in body.items()}


@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    pod: dict[str, Any]
    node_names: list[str]
    nodes: dict[str, Any] | None
    """The NodeList when the scheduler sent full nodes (nodeCacheCapable false)."""


def parse_extender_args(body: Any) -> ExtenderArgs:
    fields = _fields(body, "ExtenderArgs")
    pod = fields.get("pod")
    if not isinstance(pod, Mapping):
        raise WireError("ExtenderArgs.Pod is missing")
    names = fields.get("nodenames")
    nodes = fields.get("nodes")
    if names is None and isinstance(nodes, Mapping):
        names = [((item.get("metadata") or {}).get("name")) for item in nodes.get("items") or ()]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise WireError("ExtenderArgs needs NodeNames (nodeCacheCapable) or Nodes.items[].metadata.name")
    return ExtenderArgs(
        pod=dict(pod), node_names=list(names), nodes=dict(nodes) if isinstance(nodes, Mapping) else None
    )


def filter_result(
    args: ExtenderArgs,
    *,
    passed: Sequence[str],
    failed: Mapping[str, str],
    unresolvable: Mapping[str, str] | None = None,
    error: str = "",
) -> dict[str, Any]:
    """ExtenderFilterResult; echoes Nodes (filtered) when the scheduler sent Nodes."""
    nodes: dict[str, Any] | None = None
    if args.nodes is not None:
        keep = set(passed)
        items = [i for i in args.nodes.get("items") or () if (i.get("metadata") or {}).get("name") in keep]
        nodes = {**args.nodes, "items": items}
    return {
        "Nodes": nodes,
        "NodeNames": None if args.nodes is not None else list(passed),
        "FailedNodes": dict(failed),
        "FailedAndUnresolvableNodes": dict(unresolvable or {}),
        "Error": error,
    }


def filter_error(error: str) -> dict[str, Any]:
    """ExtenderFilterResult for a request that could not be read: no node passes, `Error` says why
    (kube-scheduler fails the scheduling attempt with it and retries the pod later)."""
    return {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": error,
    }


def host_priority_list(scores: Mapping[str, int]) -> list[dict[str, Any]]:
    """HostPriorityList: [{"Host": name, "Score": 0..10}]."""
    return [{"Host": host, "Score": int(score)} for host, score in scores.items()]


@dataclass(frozen=True, slots=True)
class BindingArgs:
    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


def parse_binding_args(body: Any) -> BindingArgs:
    fields = _fields(body, "ExtenderBindingArgs")
    values = {k: fields.get(k) for k in ("podname", "podnamespace", "poduid", "node")}
    missing = [
        k for k in ("podname", "podnamespace", "node") if not isinstance(values[k], str) or not values[k]
    ]
    if missing:
        raise WireError(f"ExtenderBindingArgs is missing {', '.join(missing)}")
    return BindingArgs(
        pod_name=str(values["podname"]),
        pod_namespace=str(values["podnamespace"]),
        pod_uid=str(values["poduid"] or ""),
        node=str(values["node"]),
    )


def binding_result(error: str = "") -> dict[str, str]:
    """ExtenderBindingResult: empty Error means bound."""
    return {"Error": error}
