"""Semantic validation of built-in kinds (422 Invalid), after decoding and defaulting.

From the OpenAPI definition: every `required` field that is absent or an empty string (`Required
value`; missing numbers and booleans decode to Go's zero values, which the per-kind range rules
judge) outside `status`, and upstream's enums (`Unsupported value`), which the published schemas
leave in prose — listed here per Go struct and field. Per kind: container names are unique DNS
labels, ports in range, ConfigMap/Secret keys valid and frozen once `immutable`, a workload's
selector matches its template and never changes (a v1 ReplicationController's equality selector
may), a Job's pods restart `OnFailure` or `Never`, a Service's cluster IP never changes, a PDB sets
at most one of `minAvailable` / `maxUnavailable`, an APIService's priorities are positive, a core/v1
Event lives in its object's namespace (upstream's legacyValidateEvent: without `eventTime`, an Event
about a cluster-scoped object only in `default`; with it, in `default` or `kube-system`; the
reporting fields an Event with `eventTime` must also carry are not checked here).
Problems are (field path, message) pairs, as the real server lists its causes.

Must not: change the object or reach storage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpupool.core.goregexp import go_regexp
from gpupool.sandbox.kubeapi.builtin_schemas import Schema, referenced_name, resolve, types_of
from gpupool.sandbox.kubeapi.selectors import selector_from_object

JsonObject = dict[str, Any]
Problems = list[tuple[str, str]]
_DNS_LABEL = go_regexp(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DATA_KEY = go_regexp(r"^[-._a-zA-Z0-9]+$")
_PULL = ("Always", "IfNotPresent", "Never")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_SELECTOR_OPERATORS = ("DoesNotExist", "Exists", "In", "NotIn")

# (Go struct, field) → upstream's allowed values.
ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("Container", "imagePullPolicy"): _PULL,
    ("EphemeralContainer", "imagePullPolicy"): _PULL,
    ("Container", "terminationMessagePolicy"): ("FallbackToLogsOnError", "File"),
    ("PodSpec", "restartPolicy"): ("Always", "Never", "OnFailure"),
    ("PodSpec", "dnsPolicy"): ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"),
    ("PodSpec", "preemptionPolicy"): ("Never", "PreemptLowerPriority"),
    ("ContainerPort", "protocol"): _PROTOCOLS,
    ("ServicePort", "protocol"): _PROTOCOLS,
    ("ServiceSpec", "type"): ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"),
    ("ServiceSpec", "sessionAffinity"): ("ClientIP", "None"),
    ("ServiceSpec", "externalTrafficPolicy"): ("Cluster", "Local"),
    ("ServiceSpec", "internalTrafficPolicy"): ("Cluster", "Local"),
    ("ServiceSpec", "ipFamilyPolicy"): ("PreferDualStack", "RequireDualStack", "SingleStack"),
    ("Toleration", "operator"): ("Equal", "Exists"),
    ("Toleration", "effect"): ("", "NoExecute", "NoSchedule", "PreferNoSchedule"),
    ("Taint", "effect"): ("NoExecute", "NoSchedule", "PreferNoSchedule"),
    ("NodeSelectorRequirement", "operator"): ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"),
    ("LabelSelectorRequirement", "operator"): _SELECTOR_OPERATORS,
    ("DeploymentStrategy", "type"): ("Recreate", "RollingUpdate"),
    ("DaemonSetUpdateStrategy", "type"): ("OnDelete", "RollingUpdate"),
    ("StatefulSetUpdateStrategy", "type"): ("OnDelete", "RollingUpdate"),
    ("StatefulSetSpec", "podManagementPolicy"): ("OrderedReady", "Parallel"),
    ("CronJobSpec", "concurrencyPolicy"): ("Allow", "Forbid", "Replace"),
    ("JobSpec", "completionMode"): ("Indexed", "NonIndexed"),
    ("PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy"): ("AlwaysAllow", "IfHealthyBudget"),
    ("ValidatingWebhook", "failurePolicy"): ("Fail", "Ignore"),
    ("MutatingWebhook", "failurePolicy"): ("Fail", "Ignore"),
    ("ValidatingWebhook", "sideEffects"): ("None", "NoneOnDryRun", "Some", "Unknown"),
    ("MutatingWebhook", "sideEffects"): ("None", "NoneOnDryRun", "Some", "Unknown"),
    ("MutatingWebhook", "reinvocationPolicy"): ("IfNeeded", "Never"),
}


def schema_problems(definition: Schema, obj: JsonObject, struct: str) -> Problems:
    """Missing required fields and unsupported enum values; `status` is the controllers' own
    and is not held to the schema's `required` lists (upstream does not validate it so)."""
    problems: Problems = []
    _walk(definition, {k: v for k, v in obj.items() if k != "status"}, "", struct, problems)
    return problems


def _walk(schema: Schema, value: Any, path: str, struct: str, problems: Problems) -> None:
    name = referenced_name(schema)
    schema = resolve(schema)
    if isinstance(value, list):
        for index, item in enumerate(value):
            _walk(schema.get("items") or {}, item, f"{path}[{index}]", struct, problems)
        return
    if not isinstance(value, dict) or "object" not in types_of(schema):
        return
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict) and (additional.get("$ref") or additional.get("items")):
            for key, item in value.items():
                _walk(additional, item, f"{path}[{key}]", struct, problems)
        return
    if name is not None:
        struct = name.rsplit(".", 1)[-1]
    for required in schema.get("required") or []:
        if value.get(required) in (None, ""):  # "" is a missing string's zero value
            problems.append((_join(path, required), "Required value"))
    for key, item in value.items():
        allowed = ENUMS.get((struct, key))
        if allowed and isinstance(item, str) and item not in allowed:
            supported = ", ".join(f'"{choice}"' for choice in allowed)
            problems.append((_join(path, key), f'Unsupported value: "{item}": supported values: {supported}'))
        child = properties.get(key)
        if child is not None:
            _walk(child, item, _join(path, key), struct, problems)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ----- per-kind rules ------------------------------------------------------------------------
def pod_spec_problems(spec: Any, path: str) -> Problems:
    if not isinstance(spec, dict):
        return []
    problems: Problems = []
    seen: set[str] = set()
    for key in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(key) or []):
            where = f"{path}.{key}[{index}]"
            name = str(container.get("name") or "")
            if name and not _DNS_LABEL.match(name):
                problems.append((f"{where}.name", f'Invalid value: "{name}": a lowercase RFC 1123 label'))
            elif name in seen:
                problems.append((f"{where}.name", f'Duplicate value: "{name}"'))
            seen.add(name)
            for port_index, port in enumerate(container.get("ports") or []):
                number = port.get("containerPort")
                if isinstance(number, int) and not 0 < number < 65536:
                    problems.append(
                        (
                            f"{where}.ports[{port_index}].containerPort",
                            f"Invalid value: {number}: must be between 1 and 65535, inclusive",
                        )
                    )
    return problems


def _data_problems(obj: JsonObject, old: JsonObject | None) -> Problems:
    problems: Problems = [
        (
            f"{field}[{key}]",
            f'Invalid value: "{key}": a valid config key must consist of alphanumeric '
            "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used "
            "for validation is '[-._a-zA-Z0-9]+')",
        )
        for field in ("data", "binaryData")
        for key in (obj.get(field) or {})
        if not _DATA_KEY.match(str(key))
    ]
    if old is not None and old.get("immutable"):
        if any(obj.get(field) != old.get(field) for field in ("data", "binaryData")):
            problems.append(("data", "Forbidden: field is immutable when `immutable` is set"))
        if not obj.get("immutable"):
            problems.append(("immutable", "Forbidden: field is immutable when `immutable` is set"))
    return problems


def _workload_problems(obj: JsonObject, old: JsonObject | None) -> Problems:
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    problems: Problems = []
    if not isinstance(selector, dict) or not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        problems.append(("spec.selector", "Required value"))
    else:
        template = spec.get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not selector_from_object(selector).matches(labels):
            problems.append(
                (
                    "spec.template.metadata.labels",
                    "Invalid value: `selector` does not match template `labels`",
                )
            )
        if old is not None and (old.get("spec") or {}).get("selector") != selector:
            problems.append(("spec.selector", "Invalid value: field is immutable"))
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        problems.append(("spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0"))
    problems += pod_spec_problems((spec.get("template") or {}).get("spec"), "spec.template.spec")
    return problems


def _replication_controller_problems(obj: JsonObject, _old: JsonObject | None) -> Problems:
    """Upstream's ValidateReplicationControllerSpec: a non-empty equality selector that the
    template's labels satisfy, and replicas ≥ 0 (the selector may change, unlike apps/v1's)."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    problems: Problems = []
    if not isinstance(selector, dict) or not selector:
        problems.append(("spec.selector", "Required value"))
    template = spec.get("template")
    if not isinstance(template, dict):
        problems.append(("spec.template", "Required value"))
    elif isinstance(selector, dict) and selector:
        labels = (template.get("metadata") or {}).get("labels") or {}
        if any(labels.get(key) != value for key, value in selector.items()):
            problems.append(
                (
                    "spec.template.metadata.labels",
                    "Invalid value: `selector` does not match template `labels`",
                )
            )
        problems += pod_spec_problems(template.get("spec"), "spec.template.spec")
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        problems.append(("spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0"))
    return problems


def _job_problems(obj: JsonObject, old: JsonObject | None) -> Problems:
    spec = obj.get("spec") or {}
    template_spec = (spec.get("template") or {}).get("spec") or {}
    problems = pod_spec_problems(template_spec, "spec.template.spec")
    policy = template_spec.get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        problems.append(
            (
                "spec.template.spec.restartPolicy",
                f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"',
            )
        )
    if old is not None and (old.get("spec") or {}).get("selector") != spec.get("selector"):
        problems.append(("spec.selector", "Invalid value: field is immutable"))
    return problems


def _service_problems(obj: JsonObject, old: JsonObject | None) -> Problems:
    spec = obj.get("spec") or {}
    problems: Problems = []
    for index, port in enumerate(spec.get("ports") or []):
        number = port.get("port")
        if isinstance(number, int) and not 0 < number < 65536:
            problems.append(
                (
                    f"spec.ports[{index}].port",
                    f"Invalid value: {number}: must be between 1 and 65535, inclusive",
                )
            )
    if old is not None:
        before = (old.get("spec") or {}).get("clusterIP")
        if before and spec.get("clusterIP") != before:
            problems.append(("spec.clusterIPs[0]", "Invalid value: field is immutable"))
    return problems


def _pdb_problems(obj: JsonObject, _old: JsonObject | None) -> Problems:
    spec = obj.get("spec") or {}
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        return [("spec", "Invalid value: minAvailable and maxUnavailable cannot be both set")]
    return []


def _api_service_problems(obj: JsonObject, _old: JsonObject | None) -> Problems:
    spec = obj.get("spec") or {}
    limits = (("groupPriorityMinimum", 20000), ("versionPriority", 1000))
    return [
        (f"spec.{field}", f"Invalid value: {spec.get(field)}: must be positive and less than {limit}")
        for field, limit in limits
        if not (isinstance(spec.get(field), int) and 0 < spec[field] <= limit)
    ]


def _event_problems(obj: JsonObject, _old: JsonObject | None) -> Problems:
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    involved = str((obj.get("involvedObject") or {}).get("namespace") or "")
    if involved:
        allowed = involved == namespace
    else:
        allowed = namespace in (("default", "kube-system") if obj.get("eventTime") else ("default",))
    if allowed:
        return []
    return [("involvedObject.namespace", f'Invalid value: "{involved}": does not match event.namespace')]


KIND_RULES: dict[tuple[str, str], Callable[[JsonObject, JsonObject | None], Problems]] = {
    ("", "Pod"): lambda obj, _old: pod_spec_problems(obj.get("spec"), "spec"),
    ("", "ConfigMap"): _data_problems,
    ("", "Secret"): _data_problems,
    ("", "Service"): _service_problems,
    ("", "Event"): _event_problems,
    ("", "ReplicationController"): _replication_controller_problems,
    ("apps", "Deployment"): _workload_problems,
    ("apps", "ReplicaSet"): _workload_problems,
    ("apps", "DaemonSet"): _workload_problems,
    ("apps", "StatefulSet"): _workload_problems,
    ("batch", "Job"): _job_problems,
    ("policy", "PodDisruptionBudget"): _pdb_problems,
    ("apiregistration.k8s.io", "APIService"): _api_service_problems,
}


def kind_problems(group: str, obj: JsonObject, old: JsonObject | None) -> Problems:
    rule = KIND_RULES.get((group, str(obj.get("kind") or "")))
    return rule(obj, old) if rule is not None else []
