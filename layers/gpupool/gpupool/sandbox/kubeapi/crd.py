"""CustomResourceDefinitions: validate one, and turn it into the resource types it serves.

A CRD named `<plural>.<group>` serves each version with `served: true`, cluster- or
namespace-scoped, with a status subresource where the version declares one. Each version's
schema travels with its type; `schema.conform` prunes and validates objects against it. A
schema with a CEL rule the sandbox cannot evaluate (`cel.is_known`) is refused: the real server
would enforce it, and serving it unenforced would accept what a cluster refuses.

Must not: store objects or register types itself; `cluster` wires CRDs to the registry.
"""

from __future__ import annotations

from typing import Any

from gpupool.core.goregexp import go_regexp
from gpupool.sandbox.kubeapi.cel import is_known
from gpupool.sandbox.kubeapi.errors import invalid
from gpupool.sandbox.kubeapi.objects import metadata
from gpupool.sandbox.kubeapi.resources import COMMON_FIELDS, PrinterColumn, ResourceType

JsonObject = dict[str, Any]
_DNS_LABEL = go_regexp(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_KIND = go_regexp(r"^[A-Z][A-Za-z0-9]*$")


def validate_crd(crd: JsonObject) -> None:
    """Raise 422 Invalid unless the CRD is one the server can serve."""
    name = str(metadata(crd).get("name") or "")
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    assert isinstance(names, dict)
    group, plural, kind = (
        str(spec.get("group") or ""),
        str(names.get("plural") or ""),
        str(names.get("kind") or ""),
    )
    problems: list[tuple[str, str]] = []
    if not group or "." not in group:
        problems.append(("spec.group", f'Invalid value: "{group}": should be a domain with at least one dot'))
    if not _DNS_LABEL.match(plural):
        problems.append(("spec.names.plural", f'Invalid value: "{plural}": must be a lowercase DNS label'))
    if not _KIND.match(kind):
        problems.append(("spec.names.kind", f'Invalid value: "{kind}": must be a CamelCase kind'))
    if name != f"{plural}.{group}":
        problems.append(
            ("metadata.name", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        problems.append(
            (
                "spec.scope",
                f'Unsupported value: "{spec.get("scope")}": supported values: "Cluster", "Namespaced"',
            )
        )
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        problems.append(
            ("spec.versions", "Required value: must have exactly one version marked as storage version")
        )
    else:
        if sum(1 for v in versions if isinstance(v, dict) and v.get("storage")) != 1:
            problems.append(
                ("spec.versions", "Invalid value: must have exactly one version marked as storage version")
            )
        for index, version in enumerate(versions):
            if not isinstance(version, dict) or not _DNS_LABEL.match(str(version.get("name") or "")):
                problems.append((f"spec.versions[{index}].name", "Invalid value: must be a DNS label"))
                continue
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            where = f"spec.versions[{index}].schema.openAPIV3Schema"
            problems.extend(_unknown_rules(schema, where))
    if problems:
        raise invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, problems)


def _unknown_rules(schema: Any, path: str) -> list[tuple[str, str]]:
    """Every `x-kubernetes-validations` rule in `schema` the sandbox has no check for."""
    if isinstance(schema, list):
        return [p for index, item in enumerate(schema) for p in _unknown_rules(item, f"{path}[{index}]")]
    if not isinstance(schema, dict):
        return []
    found = [
        (
            f"{path}.x-kubernetes-validations[{index}].rule",
            f"Invalid value: {rule.get('rule')!r}: the sandbox evaluates only the CEL rules it has a "
            "check for (gpupool.sandbox.kubeapi.cel), and this is not one of them",
        )
        for index, rule in enumerate(schema.get("x-kubernetes-validations") or [])
        if not isinstance(rule, dict) or not is_known(str(rule.get("rule") or ""))
    ]
    for key, child in schema.items():
        if key in ("properties", "patternProperties", "definitions") and isinstance(child, dict):
            found += [p for name, sub in child.items() for p in _unknown_rules(sub, f"{path}.{key}.{name}")]
        elif key in ("items", "additionalProperties", "allOf", "anyOf", "oneOf", "not"):
            found += _unknown_rules(child, f"{path}.{key}")
    return found


def resource_types(crd: JsonObject) -> list[ResourceType]:
    """One ResourceType per served version of a valid CRD."""
    spec = crd["spec"]
    names = spec["names"]
    kind = str(names["kind"])
    found = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        found.append(
            ResourceType(
                group=str(spec["group"]),
                version=str(version["name"]),
                plural=str(names["plural"]),
                kind=kind,
                singular=str(names.get("singular") or kind.lower()),
                namespaced=spec["scope"] == "Namespaced",
                has_status="status" in subresources,
                builtin=False,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                field_paths=COMMON_FIELDS,
                list_kind=str(names.get("listKind") or ""),
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
                printer_columns=_printer_columns(version),
            )
        )
    return found


# ObjectMeta's own documentation of creationTimestamp: upstream describes the Age column it
# serves for a CRD version without columns with it.
CREATION_TIMESTAMP_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. "
    "It is not guaranteed to be set in happens-before order across separate operations. Clients "
    "may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
    "system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def _printer_columns(version: JsonObject) -> tuple[PrinterColumn, ...]:
    """A version's columns as apiextensions-apiserver serves them: a column without a
    description is described by its path; a version without columns gets Age alone."""
    columns = tuple(
        PrinterColumn(
            name=str(column.get("name")),
            type=str(column.get("type") or "string"),
            json_path=str(column.get("jsonPath") or ""),
            description=str(column.get("description") or "")
            or f"Custom resource definition column (in JSONPath format): {column.get('jsonPath')}",
            priority=int(column.get("priority") or 0),
            format=str(column.get("format") or ""),
        )
        for column in version.get("additionalPrinterColumns") or []
        if isinstance(column, dict)
    )
    return columns or (PrinterColumn("Age", "date", ".metadata.creationTimestamp", CREATION_TIMESTAMP_DOC),)


def established_status(crd: JsonObject, now: str) -> JsonObject:
    """The status the real server converges to once it serves the CRD."""
    spec = crd["spec"]
    names = dict(spec["names"])
    names.setdefault("singular", str(names["kind"]).lower())
    names.setdefault("listKind", f"{names['kind']}List")
    return {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "lastTransitionTime": now,
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "lastTransitionTime": now,
                "message": "the initial names have been accepted",
            },
        ],
        "storedVersions": [v["name"] for v in spec["versions"] if v.get("storage")],
    }
