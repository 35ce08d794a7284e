"""The columns kube-apiserver prints for each built-in kind in a `Table` (kubectl get).

Names and order follow upstream's printers (pkg/printers/internalversion); priority 1
columns are the ones `kubectl get -o wide` adds. Kinds not listed print Name and Age.
Each cell is computed from the stored object alone (no controllers run here, so counts
come from `status` as controllers would have written it). Ages and an Event's times print
as upstream's `duration.HumanDuration` (`human_duration`); an Event prints as `printEvent`:
Last Seen (lastTimestamp, else the first seen; a series' lastObservedTime), Type, Reason,
Object (`kind/name`, the kind lower-cased), Message (trimmed), and wide Subobject, Source
(component or reportingComponent, then `, host` or reportingInstance), First Seen
(firstTimestamp, else eventTime), Count (the series' count, else count, else 1) and Name.
An events.k8s.io/v1 Event is printed from the same fields under its own names (regarding,
note, deprecated*), as upstream converts it to the core form first.

Must not: change objects or know about HTTP.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from gpupool.sandbox.kubeapi.selectors import field_value

JsonObject = dict[str, Any]
Cell = Callable[[JsonObject, datetime], Any]
Column = tuple[str, int, Cell]  # (name, priority, cell)


def human_duration(seconds: float) -> str:
    """Upstream's k8s.io/apimachinery duration.HumanDuration, branch by branch."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _since(moment: str | None, now: datetime) -> str | None:
    """The age of an RFC 3339 time as upstream prints it; None when unset (Go's zero time)."""
    if not moment:
        return None
    return human_duration((now - datetime.fromisoformat(moment.replace("Z", "+00:00"))).total_seconds())


def age(created: str | None, now: datetime) -> str:
    return _since(created, now) or "<unknown>"


def _field(path: str, empty: str = "<none>") -> Cell:
    return lambda obj, _now: field_value(obj, path) or empty


def _number(path: str) -> Cell:
    return lambda obj, _now: int(field_value(obj, path) or 0)


def _age(obj: JsonObject, now: datetime) -> str:
    return age((obj.get("metadata") or {}).get("creationTimestamp"), now)


def _spec(obj: JsonObject) -> JsonObject:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _status(obj: JsonObject) -> JsonObject:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def _containers(obj: JsonObject) -> list[JsonObject]:
    template = _spec(obj).get("template") or {}
    return list((template.get("spec") or {}).get("containers") or [])


def _pod_ready(pod: JsonObject, _now: datetime) -> str:
    statuses = _status(pod).get("containerStatuses") or []
    total = len(_spec(pod).get("containers") or [])
    return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"


def _pod_status(pod: JsonObject, _now: datetime) -> str:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    status = _status(pod)
    return str(status.get("reason") or status.get("phase") or "Unknown")


def _restarts(pod: JsonObject, _now: datetime) -> int:
    return sum(int(s.get("restartCount") or 0) for s in _status(pod).get("containerStatuses") or [])


def _node_status(node: JsonObject, _now: datetime) -> str:
    """Upstream's `printNode`: Ready when the Ready condition is True, NotReady for any other
    status of it (False or Unknown), Unknown when the node reports no Ready condition; then
    SchedulingDisabled for a cordoned node."""
    conditions = {c.get("type"): c.get("status") for c in _status(node).get("conditions") or []}
    if "Ready" not in conditions:
        ready = "Unknown"
    else:
        ready = "Ready" if conditions["Ready"] == "True" else "NotReady"
    return ready + (",SchedulingDisabled" if _spec(node).get("unschedulable") else "")


def _node_roles(node: JsonObject, _now: datetime) -> str:
    prefix = "node-role.kubernetes.io/"
    labels = (node.get("metadata") or {}).get("labels") or {}
    roles = sorted(key[len(prefix) :] for key in labels if key.startswith(prefix))
    return ",".join(roles) or "<none>"


def _address(kind: str) -> Cell:
    def cell(node: JsonObject, _now: datetime) -> str:
        found = [a.get("address") for a in _status(node).get("addresses") or [] if a.get("type") == kind]
        return str(found[0]) if found else "<none>"

    return cell


def _ports(service: JsonObject, _now: datetime) -> str:
    ports = _spec(service).get("ports") or []
    printed = []
    for port in ports:
        node_port = f":{port['nodePort']}" if port.get("nodePort") else ""
        printed.append(f"{port.get('port')}{node_port}/{port.get('protocol', 'TCP')}")
    return ",".join(printed) or "<none>"


def _external_ip(service: JsonObject, _now: datetime) -> str:
    ingress = (_status(service).get("loadBalancer") or {}).get("ingress") or []
    found = [str(i.get("ip") or i.get("hostname")) for i in ingress] + list(
        _spec(service).get("externalIPs") or []
    )
    if found:
        return ",".join(found)
    return "<pending>" if _spec(service).get("type") == "LoadBalancer" else "<none>"


def _selector(path: str) -> Cell:
    def cell(obj: JsonObject, _now: datetime) -> str:
        current: Any = obj
        for part in path.split("."):
            current = current.get(part) if isinstance(current, dict) else None
        if isinstance(current, dict) and "matchLabels" in current:
            current = current["matchLabels"]
        if not isinstance(current, dict) or not current:
            return "<none>"
        return ",".join(f"{k}={v}" for k, v in sorted(current.items()))

    return cell


def _count(path: str) -> Cell:
    return lambda obj, _now: len(obj.get(path) or {})


def _ratio(ready: str, wanted: str) -> Cell:
    return lambda obj, _now: f"{int(field_value(obj, ready) or 0)}/{int(field_value(obj, wanted) or 0)}"


# Where each Event field lives: core/v1 names, and events.k8s.io/v1's for the same field.
_CORE_EVENT = {
    "first": "firstTimestamp", "last": "lastTimestamp", "time": "eventTime", "count": "count",
    "object": "involvedObject", "message": "message", "component": "source.component",
    "host": "source.host",
}  # fmt: skip
_EVENTS_V1 = {
    "first": "deprecatedFirstTimestamp", "last": "deprecatedLastTimestamp", "time": "eventTime",
    "count": "deprecatedCount", "object": "regarding", "message": "note",
    "component": "deprecatedSource.component", "host": "deprecatedSource.host",
}  # fmt: skip


def _event_columns(names: dict[str, str]) -> list[Column]:
    def first_seen(event: JsonObject, now: datetime) -> str:
        return _since(field_value(event, names["first"]), now) or age(field_value(event, names["time"]), now)

    def last_seen(event: JsonObject, now: datetime) -> str:
        series = event.get("series")
        if isinstance(series, dict):
            return age(series.get("lastObservedTime"), now)
        return _since(field_value(event, names["last"]), now) or first_seen(event, now)

    def count(event: JsonObject, _now: datetime) -> int:
        series = event.get("series")
        if isinstance(series, dict):
            return int(series.get("count") or 0)
        return int(field_value(event, names["count"]) or 0) or 1

    def target(event: JsonObject, _now: datetime) -> str:
        kind = field_value(event, f"{names['object']}.kind").lower()
        name = field_value(event, f"{names['object']}.name")
        return f"{kind}/{name}" if name else kind

    def source(event: JsonObject, _now: datetime) -> str:
        component = field_value(event, names["component"]) or field_value(event, "reportingController")
        component = component or field_value(event, "reportingComponent")
        instance = field_value(event, names["host"]) or field_value(event, "reportingInstance")
        return f"{component}, {instance}" if instance else component

    return [
        ("Last Seen", 0, last_seen),
        ("Type", 0, lambda event, _now: field_value(event, "type")),
        ("Reason", 0, lambda event, _now: field_value(event, "reason")),
        ("Object", 0, target),
        ("Subobject", 1, lambda event, _now: field_value(event, f"{names['object']}.fieldPath")),
        ("Source", 1, source),
        ("Message", 0, lambda event, _now: field_value(event, names["message"]).strip()),
        ("First Seen", 1, first_seen),
        ("Count", 1, count),
        ("Name", 1, lambda event, _now: field_value(event, "metadata.name")),
    ]


_WORKLOAD_WIDE: list[Column] = [
    ("Containers", 1, lambda obj, _now: ",".join(str(c.get("name")) for c in _containers(obj))),
    ("Images", 1, lambda obj, _now: ",".join(str(c.get("image")) for c in _containers(obj))),
    ("Selector", 1, _selector("spec.selector")),
]
_NAME: Column = ("Name", 0, _field("metadata.name"))
_AGE: Column = ("Age", 0, _age)

PRINTERS: dict[tuple[str, str], list[Column]] = {
    ("", "Pod"): [
        _NAME,
        ("Ready", 0, _pod_ready),
        ("Status", 0, _pod_status),
        ("Restarts", 0, _restarts),
        _AGE,
        ("IP", 1, _field("status.podIP")),
        ("Node", 1, _field("spec.nodeName")),
        ("Nominated Node", 1, _field("status.nominatedNodeName")),
        ("Readiness Gates", 1, lambda obj, _now: "<none>"),
    ],
    ("", "Node"): [
        _NAME,
        ("Status", 0, _node_status),
        ("Roles", 0, _node_roles),
        _AGE,
        ("Version", 0, _field("status.nodeInfo.kubeletVersion", "")),
        ("Internal-IP", 1, _address("InternalIP")),
        ("External-IP", 1, _address("ExternalIP")),
        ("OS-Image", 1, _field("status.nodeInfo.osImage", "<unknown>")),
        ("Kernel-Version", 1, _field("status.nodeInfo.kernelVersion", "<unknown>")),
        ("Container-Runtime", 1, _field("status.nodeInfo.containerRuntimeVersion", "<unknown>")),
    ],
    ("", "Namespace"): [_NAME, ("Status", 0, _field("status.phase", "")), _AGE],
    ("", "Event"): _event_columns(_CORE_EVENT),
    ("events.k8s.io", "Event"): _event_columns(_EVENTS_V1),
    ("", "Service"): [
        _NAME,
        ("Type", 0, _field("spec.type")),
        ("Cluster-IP", 0, _field("spec.clusterIP")),
        ("External-IP", 0, _external_ip),
        ("Port(s)", 0, _ports),
        _AGE,
        ("Selector", 1, _selector("spec.selector")),
    ],
    ("", "ConfigMap"): [
        _NAME,
        ("Data", 0, lambda o, _n: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
        _AGE,
    ],
    ("", "Secret"): [_NAME, ("Type", 0, _field("type")), ("Data", 0, _count("data")), _AGE],
    ("", "ServiceAccount"): [_NAME, ("Secrets", 0, lambda o, _n: len(o.get("secrets") or [])), _AGE],
    ("apps", "Deployment"): [
        _NAME,
        ("Ready", 0, _ratio("status.readyReplicas", "spec.replicas")),
        ("Up-to-date", 0, _number("status.updatedReplicas")),
        ("Available", 0, _number("status.availableReplicas")),
        _AGE,
        *_WORKLOAD_WIDE,
    ],
    ("apps", "ReplicaSet"): [
        _NAME,
        ("Desired", 0, _number("spec.replicas")),
        ("Current", 0, _number("status.replicas")),
        ("Ready", 0, _number("status.readyReplicas")),
        _AGE,
        *_WORKLOAD_WIDE,
    ],
    ("apps", "DaemonSet"): [
        _NAME,
        ("Desired", 0, _number("status.desiredNumberScheduled")),
        ("Current", 0, _number("status.currentNumberScheduled")),
        ("Ready", 0, _number("status.numberReady")),
        ("Up-to-date", 0, _number("status.updatedNumberScheduled")),
        ("Available", 0, _number("status.numberAvailable")),
        ("Node Selector", 0, _selector("spec.template.spec.nodeSelector")),
        _AGE,
        *_WORKLOAD_WIDE,
    ],
    ("apps", "StatefulSet"): [_NAME, ("Ready", 0, _ratio("status.readyReplicas", "spec.replicas")), _AGE],
    ("batch", "Job"): [
        _NAME,
        ("Completions", 0, _ratio("status.succeeded", "spec.completions")),
        ("Duration", 0, lambda obj, _now: ""),
        _AGE,
        *_WORKLOAD_WIDE,
    ],
    ("batch", "CronJob"): [
        _NAME,
        ("Schedule", 0, _field("spec.schedule")),
        ("Suspend", 0, _field("spec.suspend", "False")),
        ("Active", 0, lambda obj, _now: len(_status(obj).get("active") or [])),
        ("Last Schedule", 0, _field("status.lastScheduleTime")),
        _AGE,
    ],
    ("coordination.k8s.io", "Lease"): [_NAME, ("Holder", 0, _field("spec.holderIdentity", "")), _AGE],
    ("policy", "PodDisruptionBudget"): [
        _NAME,
        ("Min Available", 0, _field("spec.minAvailable", "N/A")),
        ("Max Unavailable", 0, _field("spec.maxUnavailable", "N/A")),
        ("Allowed Disruptions", 0, _number("status.disruptionsAllowed")),
        _AGE,
    ],
    ("apiextensions.k8s.io", "CustomResourceDefinition"): [
        _NAME,
        ("Created At", 0, _field("metadata.creationTimestamp")),
    ],
    ("rbac.authorization.k8s.io", "RoleBinding"): [
        _NAME,
        ("Role", 0, lambda o, _n: f"{field_value(o, 'roleRef.kind')}/{field_value(o, 'roleRef.name')}"),
        _AGE,
    ],
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): [
        _NAME,
        ("Role", 0, lambda o, _n: f"{field_value(o, 'roleRef.kind')}/{field_value(o, 'roleRef.name')}"),
        _AGE,
    ],
    ("rbac.authorization.k8s.io", "Role"): [_NAME, ("Created At", 0, _field("metadata.creationTimestamp"))],
    ("rbac.authorization.k8s.io", "ClusterRole"): [
        _NAME,
        ("Created At", 0, _field("metadata.creationTimestamp")),
    ],
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): [
        _NAME,
        ("Webhooks", 0, lambda o, _n: len(o.get("webhooks") or [])),
        _AGE,
    ],
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): [
        _NAME,
        ("Webhooks", 0, lambda o, _n: len(o.get("webhooks") or [])),
        _AGE,
    ],
}
DEFAULT_COLUMNS: list[Column] = [_NAME, _AGE]


def columns_for(group: str, kind: str) -> list[Column]:
    return PRINTERS.get((group, kind), DEFAULT_COLUMNS)
