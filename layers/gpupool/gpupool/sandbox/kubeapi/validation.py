"""Field validation that answers 422 Invalid, like the real API server's strategies.

Checks names (DNS-1123 subdomain, or label for namespaces), label keys and values, the few
per-kind rules that matter to gpupool (a pod needs containers with name and image; a pod's
spec is immutable except images, added tolerations and activeDeadlineSeconds; a CRD's group,
plural and scope are immutable), and the rule that a deleting object may not gain finalizers.

Must not: mutate objects or reach storage.
"""

from __future__ import annotations

from typing import Any

from gpupool.core.goregexp import go_regexp
from gpupool.sandbox.kubeapi.errors import invalid
from gpupool.sandbox.kubeapi.objects import metadata
from gpupool.sandbox.kubeapi.resources import ResourceType

JsonObject = dict[str, Any]
_SUBDOMAIN = go_regexp(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = go_regexp(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = go_regexp(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED = go_regexp(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _name_problems(rt: ResourceType, name: Any) -> list[tuple[str, str]]:
    if not name:
        return [("metadata.name", "Required value: name or generateName is required")]
    if not isinstance(name, str):
        return [("metadata.name", "Invalid value: must be a string")]
    pattern = _LABEL if rt.plural == "namespaces" else _SUBDOMAIN
    limit = 63 if rt.plural == "namespaces" else 253
    if len(name) > limit or not pattern.match(name):
        return [
            (
                "metadata.name",
                f'Invalid value: "{name}": a lowercase RFC 1123 name must consist of lower case alphanumeric '
                "characters, '-' or '.', and must start and end with an alphanumeric character",
            )
        ]
    return []


def _label_problems(labels: Any) -> list[tuple[str, str]]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [("metadata.labels", "Invalid value: must be a map of strings")]
    problems = []
    for key, value in labels.items():
        prefix, _, name = str(key).rpartition("/")
        if len(name) > 63 or not _QUALIFIED.match(name) or (prefix and not _SUBDOMAIN.match(prefix)):
            problems.append(("metadata.labels", f'Invalid value: "{key}": not a valid label key'))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            problems.append((f"metadata.labels.{key}", f'Invalid value: "{value}": not a valid label value'))
    return problems


def _owner_problems(refs: Any) -> list[tuple[str, str]]:
    """Upstream: apiVersion, kind, name and uid are required, and at most one controller."""
    if refs is None:
        return []
    if not isinstance(refs, list) or not all(isinstance(ref, dict) for ref in refs):
        return [("metadata.ownerReferences", "Invalid value: must be a list of objects")]
    problems = [
        (f"metadata.ownerReferences[{index}].{key}", "Required value")
        for index, ref in enumerate(refs)
        for key in ("apiVersion", "kind", "name", "uid")
        if not ref.get(key)
    ]
    if sum(1 for ref in refs if ref.get("controller")) > 1:
        problems.append(
            ("metadata.ownerReferences", "Invalid value: Only one reference can have Controller set to true")
        )
    return problems


def _pod_problems(pod: JsonObject) -> list[tuple[str, str]]:
    spec = pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return [("spec.containers", "Required value")]
    problems = []
    for index, container in enumerate(containers):
        if not isinstance(container, dict) or not container.get("name"):
            problems.append((f"spec.containers[{index}].name", "Required value"))
        elif not container.get("image"):
            problems.append((f"spec.containers[{index}].image", "Required value"))
    return problems


def _pod_spec_mutable_view(spec: Any) -> Any:
    """The pod spec with the fields an update may change blanked out."""
    if not isinstance(spec, dict):
        return spec
    view = {
        k: v for k, v in spec.items() if k not in ("activeDeadlineSeconds", "tolerations", "schedulingGates")
    }
    for key in ("containers", "initContainers"):
        if isinstance(view.get(key), list):
            view[key] = [
                {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c for c in view[key]
            ]
    return view


def _pod_update_problems(old: JsonObject, new: JsonObject) -> list[tuple[str, str]]:
    old_spec, new_spec = old.get("spec"), new.get("spec")
    if _pod_spec_mutable_view(old_spec) != _pod_spec_mutable_view(new_spec):
        return [
            (
                "spec",
                "Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
                "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` "
                "(only additions to existing tolerations) or `spec.schedulingGates`",
            )
        ]
    old_tolerations = (old_spec or {}).get("tolerations") or []
    new_tolerations = (new_spec or {}).get("tolerations") or []
    if any(toleration not in new_tolerations for toleration in old_tolerations):
        return [
            (
                "spec.tolerations",
                "Forbidden: existing toleration can not be modified except its tolerationSeconds",
            )
        ]
    return []


def _crd_identity(crd: JsonObject) -> dict[str, Any]:
    spec = crd.get("spec") or {}
    return {
        "spec.group": spec.get("group"),
        "spec.scope": spec.get("scope"),
        "spec.names.plural": (spec.get("names") or {}).get("plural"),
    }


def _crd_update_problems(old: JsonObject, new: JsonObject) -> list[tuple[str, str]]:
    """A CRD's group, plural and scope decide where its objects live: upstream freezes them."""
    before, after = _crd_identity(old), _crd_identity(new)
    return [(field, "Invalid value: field is immutable") for field in before if before[field] != after[field]]


def validate(rt: ResourceType, obj: JsonObject, old: JsonObject | None = None) -> None:
    """Raise 422 Invalid listing every problem, or return when `obj` may be stored."""
    meta = metadata(obj)
    problems = _name_problems(rt, meta.get("name")) + _label_problems(meta.get("labels"))
    problems += _owner_problems(meta.get("ownerReferences"))
    finalizers = meta.get("finalizers")
    if finalizers is not None and not (
        isinstance(finalizers, list) and all(isinstance(f, str) for f in finalizers)
    ):
        problems.append(("metadata.finalizers", "Invalid value: must be a list of strings"))
    if rt.builtin and rt.group == "" and rt.plural == "pods":
        problems += _pod_problems(obj)
        if old is not None:
            problems += _pod_update_problems(old, obj)
    if rt.group == "apiextensions.k8s.io" and old is not None:
        problems += _crd_update_problems(old, obj)
    if old is not None and metadata(old).get("deletionTimestamp"):
        added = set(meta.get("finalizers") or []) - set(metadata(old).get("finalizers") or [])
        if added:
            problems.append(
                (
                    "metadata.finalizers",
                    "Forbidden: no new finalizers can be added if the object is being deleted",
                )
            )
    if problems:
        raise invalid(
            rt.kind, rt.error_group, str(meta.get("name") or meta.get("generateName") or ""), problems
        )
