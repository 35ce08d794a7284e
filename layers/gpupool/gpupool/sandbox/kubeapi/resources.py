"""What the server serves: one `ResourceType` per (group, version, plural), and the built-ins.

A resource type says how its objects behave: namespaced or cluster-scoped, whether it has a
status subresource (then the main endpoint ignores status changes and `/status` changes only
status), whether strategic merge patch applies (built-in kinds only), which field selectors
it supports, and which extra subresources it answers (`pods/binding`, `pods/eviction`).
`MORE_TYPES` takes one `_kind(...)` line per further built-in kind (with `verbs=("create",)`
for a kind that is answered, not stored, such as an access review).

Must not: hold objects; storage lives in `store`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class PrinterColumn:
    """One column of a CRD version's Table (its `additionalPrinterColumns` entry, as served)."""

    name: str
    type: str
    json_path: str
    description: str
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    singular: str
    namespaced: bool
    has_status: bool = True
    builtin: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    field_paths: frozenset[str] = field(default=COMMON_FIELDS)
    subresources: tuple[str, ...] = ()
    list_kind: str = ""
    # Kinds whose spec changes bump metadata.generation (upstream: CRs, and built-ins with a spec).
    tracks_generation: bool = True
    # A CRD version's additionalPrinterColumns for kubectl's tables (Age alone when it has none).
    printer_columns: tuple[PrinterColumn, ...] = ()
    # A CRD version's openAPIV3Schema (custom resources only), enforced when the server says so.
    schema: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    # What discovery lists; a create-only kind (an access review) answers through
    # `endpoints.CREATE_ONLY_HANDLERS` instead of storage.
    verbs: tuple[str, ...] = tuple(VERBS)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> tuple[str, str]:
        """Objects are stored once per (group, plural), whichever version serves them."""
        return (self.group, self.plural)

    @property
    def list_kind_name(self) -> str:
        return self.list_kind or f"{self.kind}List"

    @property
    def error_group(self) -> str:
        """The group a 422 names: events.k8s.io Events are stored and validated as core Events
        upstream, so their errors name no group."""
        return "" if (self.group, self.plural) == ("events.k8s.io", "events") else self.group

    @property
    def group_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else "/api/v1"


# The built-in kinds whose registries set metadata.generation (their strategies set it to 1 on
# create, Kubernetes 1.36 `pkg/registry/*/strategy.go`); the others (Namespace, Node, Service,
# ConfigMap, Event, Lease, RBAC, …) have none. Custom resources and CRDs always do.
GENERATION_KINDS = frozenset(
    {
        ("", "pods"),
        ("", "podtemplates"),
        ("", "replicationcontrollers"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "daemonsets"),
        ("apps", "statefulsets"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("discovery.k8s.io", "endpointslices"),
        ("flowcontrol.apiserver.k8s.io", "flowschemas"),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
        ("networking.k8s.io", "ingresses"),
        ("networking.k8s.io", "ingressclasses"),
        ("networking.k8s.io", "networkpolicies"),
        ("policy", "poddisruptionbudgets"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "devicetaintrules"),
        ("resource.k8s.io", "resourceslices"),
        ("scheduling.k8s.io", "priorityclasses"),
    }
)


def _core(
    plural: str,
    kind: str,
    *,
    namespaced: bool = True,
    has_status: bool = True,
    tracks_generation: bool | None = None,
    short_names: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    field_paths: frozenset[str] = COMMON_FIELDS,
    subresources: tuple[str, ...] = (),
) -> ResourceType:
    return ResourceType(
        group="",
        version="v1",
        plural=plural,
        kind=kind,
        singular=kind.lower(),
        namespaced=namespaced,
        has_status=has_status,
        tracks_generation=("", plural) in GENERATION_KINDS
        if tracks_generation is None
        else tracks_generation,
        short_names=short_names,
        categories=categories,
        field_paths=field_paths,
        subresources=subresources,
    )


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _core(
        "namespaces",
        "Namespace",
        namespaced=False,
        short_names=("ns",),
        field_paths=COMMON_FIELDS | {"status.phase"},
    ),
    _core(
        "nodes",
        "Node",
        namespaced=False,
        short_names=("no",),
        field_paths=COMMON_FIELDS | {"spec.unschedulable", "spec.providerID"},
    ),
    _core(
        "pods",
        "Pod",
        short_names=("po",),
        categories=("all",),
        field_paths=COMMON_FIELDS
        | {
            "spec.nodeName",
            "status.phase",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.restartPolicy",
            "status.podIP",
        },
        subresources=("binding", "eviction"),
    ),
    _core(
        "events",
        "Event",
        short_names=("ev",),
        has_status=False,
        tracks_generation=False,
        field_paths=COMMON_FIELDS
        | {
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "type",
            "source",
        },
    ),
    _core("configmaps", "ConfigMap", short_names=("cm",), has_status=False, tracks_generation=False),
    _core(
        "secrets", "Secret", has_status=False, tracks_generation=False, field_paths=COMMON_FIELDS | {"type"}
    ),
    ResourceType(
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        "lease",
        True,
        has_status=False,
        tracks_generation=False,
    ),
    ResourceType(
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        "event",
        True,
        has_status=False,
        tracks_generation=False,
        short_names=("ev",),
        field_paths=COMMON_FIELDS
        | {"regarding.kind", "regarding.name", "regarding.namespace", "reason", "type"},
    ),
    ResourceType(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        "poddisruptionbudget",
        True,
        short_names=("pdb",),
    ),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        "customresourcedefinition",
        False,
        short_names=("crd", "crds"),
    ),
)


def _kind(
    group: str,
    plural: str,
    kind: str,
    *,
    namespaced: bool = True,
    has_status: bool = False,
    tracks_generation: bool | None = None,
    short_names: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    version: str = "v1",
    verbs: tuple[str, ...] = tuple(VERBS),
) -> ResourceType:
    """One more served kind: a line per kind in `MORE_TYPES`."""
    return ResourceType(
        group,
        version,
        plural,
        kind,
        kind.lower(),
        namespaced,
        has_status=has_status,
        tracks_generation=(group, plural) in GENERATION_KINDS
        if tracks_generation is None
        else tracks_generation,
        short_names=short_names,
        categories=categories,
        verbs=verbs,
    )


_ALL = ("all",)
# Stored and validated like any object; no controllers act on them (gpupool's stories need none).
MORE_TYPES: tuple[ResourceType, ...] = (
    _kind("", "serviceaccounts", "ServiceAccount", tracks_generation=False, short_names=("sa",)),
    _kind("", "services", "Service", has_status=True, short_names=("svc",), categories=_ALL),
    _kind("", "endpoints", "Endpoints", tracks_generation=False, short_names=("ep",)),
    _kind("", "persistentvolumeclaims", "PersistentVolumeClaim", has_status=True, short_names=("pvc",)),
    _kind("", "resourcequotas", "ResourceQuota", has_status=True, short_names=("quota",)),
    _kind("", "limitranges", "LimitRange", short_names=("limits",)),
    _kind(
        "",
        "replicationcontrollers",
        "ReplicationController",
        has_status=True,
        short_names=("rc",),
        categories=_ALL,
    ),
    _kind("apps", "deployments", "Deployment", has_status=True, short_names=("deploy",), categories=_ALL),
    _kind("apps", "replicasets", "ReplicaSet", has_status=True, short_names=("rs",), categories=_ALL),
    _kind("apps", "daemonsets", "DaemonSet", has_status=True, short_names=("ds",), categories=_ALL),
    _kind("apps", "statefulsets", "StatefulSet", has_status=True, short_names=("sts",), categories=_ALL),
    _kind("batch", "jobs", "Job", has_status=True, categories=_ALL),
    _kind("batch", "cronjobs", "CronJob", has_status=True, short_names=("cj",), categories=_ALL),
    _kind("rbac.authorization.k8s.io", "roles", "Role"),
    _kind("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
    _kind("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", namespaced=False),
    _kind("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
    _kind(
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        namespaced=False,
    ),
    _kind(
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        namespaced=False,
    ),
    # Stored, not enforced: the sandbox runs no admission policies (the chart's are evaluated in
    # tests/unit/test_chart_pod_guard.py).
    _kind(
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        namespaced=False,
        has_status=True,
    ),
    _kind(
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        namespaced=False,
    ),
    _kind("apiregistration.k8s.io", "apiservices", "APIService", namespaced=False, has_status=True),
    # Answered, not stored (`reviews`, through endpoints.CREATE_ONLY_HANDLERS).
    _kind("authentication.k8s.io", "tokenreviews", "TokenReview", namespaced=False, verbs=("create",)),
    *(
        _kind("authorization.k8s.io", plural, kind, namespaced=False, verbs=("create",))
        for plural, kind in (
            ("subjectaccessreviews", "SubjectAccessReview"),
            ("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
        )
    ),
    _kind("scheduling.k8s.io", "priorityclasses", "PriorityClass", namespaced=False, short_names=("pc",)),
    _kind("networking.k8s.io", "networkpolicies", "NetworkPolicy", short_names=("netpol",)),
    _kind("storage.k8s.io", "storageclasses", "StorageClass", namespaced=False, short_names=("sc",)),
    _kind("node.k8s.io", "runtimeclasses", "RuntimeClass", namespaced=False),
    _kind(
        "autoscaling",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        has_status=True,
        short_names=("hpa",),
        version="v2",
    ),
)
BUILTIN_TYPES = BUILTIN_TYPES + MORE_TYPES

# The group versions a fresh server always answers, even before any CRD exists.
PREFERRED_GROUP_VERSIONS = {"": "v1"}
