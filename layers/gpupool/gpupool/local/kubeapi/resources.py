"""What the server serves: one `ResourceType` per (group, version, plural), and the built-ins.

A resource type says how its objects behave: namespaced or cluster-scoped, whether it has a
status subresource (then the main endpoint ignores status changes and `/status` changes only
status), whether strategic merge patch applies (built-in kinds only), which field selectors
it supports, and which extra subresources it answers (`pods/binding`, `pods/eviction`).

Must not: hold objects; storage lives in `store`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


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
    # A CRD's additionalPrinterColumns: (name, type, jsonPath) for kubectl's tables.
    printer_columns: tuple[tuple[str, str, str], ...] = ()
    # A CRD version's openAPIV3Schema (custom resources only), enforced when the server says so.
    schema: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

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
    def group_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else "/api/v1"


def _core(
    plural: str,
    kind: str,
    *,
    namespaced: bool = True,
    has_status: bool = True,
    tracks_generation: bool = True,
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
        tracks_generation=tracks_generation,
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
            "involvedObject.fieldPath",
            "reason",
            "type",
            "source",
        },
    ),
    _core("configmaps", "ConfigMap", short_names=("cm",), has_status=False, tracks_generation=False),
    _core(
        "secrets", "Secret", has_status=False, tracks_generation=False, field_paths=COMMON_FIELDS | {"type"}
    ),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", "lease", True, has_status=False),
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

# The group versions a fresh server always answers, even before any CRD exists.
PREFERRED_GROUP_VERSIONS = {"": "v1"}
