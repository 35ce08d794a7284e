"""Defaults of built-in kinds: what kube-apiserver fills in on create and update.

Values are upstream's (pkg/apis/*/v1/defaults.go and the admission plugins enabled by default): pod
`restartPolicy: Always`, `dnsPolicy: ClusterFirst`, `schedulerName: default-scheduler`,
`terminationGracePeriodSeconds: 30`, `serviceAccountName: default` (ServiceAccount admission),
`enableServiceLinks`, `priority: 0`; container `imagePullPolicy` (Always for `:latest` or no tag,
else IfNotPresent), `terminationMessagePath` / `Policy`, port `protocol: TCP`; Service `type:
ClusterIP`, `sessionAffinity: None`, IP families and a cluster IP from 10.96.0.0/12; workloads'
replicas, strategies and history limits; a ReplicationController's selector and labels from its
template; Job's generated selector; Secret `stringData` merged into base64 `data` and `type:
Opaque`; Namespace's `kubernetes` finalizer and name label; Node `allocatable` from `capacity` when
unset, with the zero-valued `daemonEndpoints` and `nodeInfo` Go always writes; an Event's fields
Go writes without omitempty (null times, empty reporting fields, an empty source; events.k8s.io's
deprecated* copies).

Must not: validate (see `builtin_rules`) or keep state beyond the cluster-IP allocator passed in.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

JsonObject = dict[str, Any]
IpAllocator = Callable[[], str]


def _container(container: JsonObject) -> None:
    image = str(container.get("image") or "")
    tag = image.rsplit("/", 1)[-1]
    latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
    container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")


def _volume(volume: JsonObject) -> None:
    for source in ("secret", "configMap"):
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", 420)
    if isinstance(volume.get("projected"), dict):
        volume["projected"].setdefault("defaultMode", 420)
    if isinstance(volume.get("hostPath"), dict):
        volume["hostPath"].setdefault("type", "")
    if isinstance(volume.get("emptyDir"), dict) or len(volume) == 1:
        volume.setdefault("emptyDir", {})


def pod_spec(spec: JsonObject) -> None:
    """Defaults of a PodSpec, in a pod or a workload's template."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            _container(container)
    for volume in spec.get("volumes") or []:
        _volume(volume)
    for toleration in spec.get("tolerations") or []:
        if toleration.get("operator") is None and "key" in toleration:
            toleration["operator"] = "Equal"


def _pod(pod: JsonObject, _allocate: IpAllocator) -> None:
    spec = pod.setdefault("spec", {})
    pod_spec(spec)
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = spec["serviceAccount"] = account
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")


def _template(obj: JsonObject) -> None:
    template = (obj.get("spec") or {}).get("template")
    if isinstance(template, dict):
        pod_spec(template.setdefault("spec", {}))
        template.setdefault("metadata", {}).setdefault("creationTimestamp", None)


def _deployment(obj: JsonObject, _allocate: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template(obj)


def _replica_set(obj: JsonObject, _allocate: IpAllocator) -> None:
    obj.setdefault("spec", {}).setdefault("replicas", 1)
    _template(obj)


def _replication_controller(obj: JsonObject, _allocate: IpAllocator) -> None:
    """Upstream's SetDefaults_ReplicationController: the template's labels stand in for an empty
    selector and empty labels; one replica."""
    spec = obj.setdefault("spec", {})
    template = spec.get("template")
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        metadata = obj.setdefault("metadata", {})
        if not metadata.get("labels"):
            metadata["labels"] = dict(labels)
    spec.setdefault("replicas", 1)
    _template(obj)


def _daemon_set(obj: JsonObject, _allocate: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(obj)


def _stateful_set(obj: JsonObject, _allocate: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    retention.setdefault("whenDeleted", "Retain")
    retention.setdefault("whenScaled", "Retain")
    _template(obj)


def _job(obj: JsonObject, _allocate: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    uid = str((obj.get("metadata") or {}).get("uid") or "")
    if not spec.get("manualSelector") and "selector" not in spec and uid:
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        labels = spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {})
        labels.setdefault("batch.kubernetes.io/controller-uid", uid)
        labels.setdefault("controller-uid", uid)
        name = str((obj.get("metadata") or {}).get("name") or "")
        labels.setdefault("batch.kubernetes.io/job-name", name)
        labels.setdefault("job-name", name)
    _template(obj)


def _cron_job(obj: JsonObject, _allocate: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict):
        template = (job_template.get("spec") or {}).get("template")
        if isinstance(template, dict):
            pod_spec(template.setdefault("spec", {}))
            template.setdefault("metadata", {}).setdefault("creationTimestamp", None)


def _service(obj: JsonObject, allocate: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))
    if spec["type"] == "ExternalName":
        return
    if not spec.get("clusterIP"):
        spec["clusterIP"] = allocate()
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    obj.setdefault("status", {}).setdefault("loadBalancer", {})


def _secret(obj: JsonObject, _allocate: IpAllocator) -> None:
    obj.setdefault("type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def _namespace(obj: JsonObject, _allocate: IpAllocator) -> None:
    meta = obj.setdefault("metadata", {})
    if meta.get("name"):
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj.setdefault("status", {}).setdefault("phase", "Active")


def _webhooks(obj: JsonObject, _allocate: IpAllocator) -> None:
    mutating = obj.get("kind") == "MutatingWebhookConfiguration"
    for webhook in obj.get("webhooks") or []:
        webhook.setdefault("failurePolicy", "Fail")
        webhook.setdefault("matchPolicy", "Equivalent")
        webhook.setdefault("namespaceSelector", {})
        webhook.setdefault("objectSelector", {})
        webhook.setdefault("timeoutSeconds", 10)
        if mutating:
            webhook.setdefault("reinvocationPolicy", "Never")
        service = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)
        for rule in webhook.get("rules") or []:
            rule.setdefault("scope", "*")


def _role_binding(obj: JsonObject, _allocate: IpAllocator) -> None:
    for subject in obj.get("subjects") or []:
        if subject.get("kind") in ("User", "Group"):  # a ServiceAccount's "" is omitted, as upstream
            subject.setdefault("apiGroup", "rbac.authorization.k8s.io")


def _crd(obj: JsonObject, _allocate: IpAllocator) -> None:
    obj.setdefault("spec", {}).setdefault("conversion", {"strategy": "None"})


def _core_event(obj: JsonObject, _allocate: IpAllocator) -> None:
    """Fields Go always writes for a core/v1 Event (no omitempty): zero times as null, empty
    strings, the empty source."""
    for key in ("firstTimestamp", "lastTimestamp", "eventTime"):
        obj.setdefault(key, None)
    for key in ("reportingComponent", "reportingInstance"):
        obj.setdefault(key, "")
    obj.setdefault("source", {})


def _events_v1_event(obj: JsonObject, _allocate: IpAllocator) -> None:
    """The same for an events.k8s.io/v1 Event: its deprecated* copies of the core fields."""
    obj.setdefault("deprecatedSource", {})
    obj.setdefault("deprecatedFirstTimestamp", None)
    obj.setdefault("deprecatedLastTimestamp", None)


def _node(obj: JsonObject, _allocate: IpAllocator) -> None:
    """Node status as Go writes it: allocatable defaults to capacity (SetDefaults_NodeStatus), and
    the daemon endpoints and node info structs are always present, zero-valued."""
    status = obj.setdefault("status", {})
    if status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = dict(status["capacity"])
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 0}})
    info = status.setdefault("nodeInfo", {})
    for key in _NODE_INFO:
        info.setdefault(key, "")


_NODE_INFO = (
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
)


DEFAULTERS: dict[tuple[str, str], Callable[[JsonObject, IpAllocator], None]] = {
    ("", "Event"): _core_event,
    ("events.k8s.io", "Event"): _events_v1_event,
    ("", "Node"): _node,
    ("", "Pod"): _pod,
    ("", "Service"): _service,
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    ("", "ReplicationController"): _replication_controller,
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replica_set,
    ("apps", "DaemonSet"): _daemon_set,
    ("apps", "StatefulSet"): _stateful_set,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cron_job,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _webhooks,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _webhooks,
    ("rbac.authorization.k8s.io", "RoleBinding"): _role_binding,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _role_binding,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
}


def apply_defaults(group: str, obj: JsonObject, allocate_ip: IpAllocator) -> None:
    """Fill in `obj`'s defaults in place (callers pass a fresh copy)."""
    defaulter = DEFAULTERS.get((group, str(obj.get("kind") or "")))
    if defaulter is not None:
        defaulter(obj, allocate_ip)
