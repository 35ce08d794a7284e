"""Which TensorFusion fields gpupool acts on, keeps without acting on, or treats differently.

Role: `field_paths(model)` lists every field of a kind as a dotted path
(`spec.nodeManagerConfig.isolationModeRules[].mode`); `classify(kind, path)` says what gpupool
does with it — HONOURED, NOT_ACTED_ON (read, kept, defaulted as TensorFusion does, but no
gpupool feature uses it yet) or DIFFERENT (a deliberate difference, with the note) — by the
longest matching rule below; `not_acted_on(document)` names the fields a manifest sets that
gpupool does not act on, and the TensorFusion pod keys it only keeps, for `gpupool validate`;
`extensions_used(document)` names what gpupool accepts beyond TensorFusion's schema;
`compatibility_rows()` / `compatibility_markdown()` are the table docs/compatibility.md
prints. The rules are the truth for this commit: when a feature lands, its rule moves to
HONOURED.

Must not: validate (the models do) or read files.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from gpupool.core.model import constants as c
from gpupool.core.model.base import TopLevel
from gpupool.core.model.common import PROVISIONER_KEYS
from gpupool.core.model.compat_rules import DIFFERENT, NOT_ACTED_KEYS, RULES
from gpupool.core.model.registry import TENSOR_FUSION_KINDS, model_for

__all__ = [
    "HONOURED",
    "NOT_ACTED_ON",
    "Status",
    "classify",
    "compatibility_markdown",
    "compatibility_rows",
    "extensions_used",
    "field_paths",
    "not_acted_on",
]

Status = Literal["honoured", "not acted on", "different"]
HONOURED: Final = "honoured"
NOT_ACTED_ON: Final = "not acted on"


def _inner_models(annotation: Any) -> Iterator[tuple[str, type[BaseModel] | None]]:
    """(suffix, model) for what a field holds: `[]` for list items, `.*` for map values."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        for option in get_args(annotation):
            if option is not type(None):
                yield from _inner_models(option)
        return
    if origin is list:
        for suffix, model in _inner_models(get_args(annotation)[0]):
            yield "[]" + suffix, model
        return
    if origin is dict:
        for suffix, model in _inner_models(get_args(annotation)[1]):
            yield ".*" + suffix if model is not None else suffix, model
        return
    if origin is not None and get_args(annotation):  # Annotated[...] and friends
        yield from _inner_models(get_args(annotation)[0])
        return
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield "", annotation
        return
    yield "", None


def _walk(model: type[BaseModel], prefix: str, seen: tuple[type[BaseModel], ...]) -> Iterator[str]:
    for name, info in model.model_fields.items():
        path = f"{prefix}.{info.alias or name}" if prefix else (info.alias or name)
        leaves = list(_inner_models(info.annotation))
        for suffix, inner in leaves:
            if inner is None or inner in seen:
                yield path + suffix
            else:
                yield from _walk(inner, path + suffix, (*seen, inner))


def field_paths(model: type[TopLevel]) -> list[str]:
    """Every spec and status field of a kind, in declaration order, without duplicates."""
    paths: list[str] = []
    for part in ("spec", "status"):
        field = model.model_fields.get(part)
        if field is None:
            continue
        for suffix, inner in _inner_models(field.annotation):
            if inner is None:
                continue
            for path in _walk(inner, part + suffix, (inner,)):
                if path not in paths:
                    paths.append(path)
    return paths


def _matches(rule: str, path: str) -> bool:
    return path == rule or path.startswith((rule + ".", rule + "["))


_INLINE_POOL = "spec.gpuPools[].specTemplate"


def classify(kind: str, path: str) -> tuple[Status, str]:
    """(status, note) for one field path of a kind: the longest matching rule wins (a
    TensorFusionCluster's inline pool template is classified as the GPUPool spec it becomes)."""
    if kind == "TensorFusionCluster" and _matches(_INLINE_POOL, path) and path != _INLINE_POOL:
        return classify("GPUPool", "spec" + path[len(_INLINE_POOL) :])
    for source in (DIFFERENT, RULES):
        best: tuple[int, tuple[Status, str]] | None = None
        for (rule_kind, rule), verdict in source.items():
            if rule_kind in (kind, "*") and _matches(rule, path) and (best is None or len(rule) > best[0]):
                best = (len(rule), verdict)
        if best is not None:
            return best[1]
    return NOT_ACTED_ON, "kept as written"


def compatibility_rows() -> list[tuple[str, str, Status, str]]:
    """(kind, path, status, note) for every field of every tensor-fusion.ai kind gpupool models."""
    return [
        (model.KIND, path, *classify(model.KIND, path))
        for model in TENSOR_FUSION_KINDS
        for path in field_paths(model)
    ]


def _set_paths(value: Any, prefix: str) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _set_paths(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list) and value and all(isinstance(item, Mapping) for item in value):
        for item in value:
            yield from _set_paths(item, prefix + "[]")
    else:
        yield prefix


def _keys_kept(document: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    metadatas = [document.get("metadata")]
    spec = document.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    if isinstance(template, Mapping):
        metadatas.append(template.get("metadata"))
    for metadata in metadatas:
        if not isinstance(metadata, Mapping):
            continue
        for group in ("annotations", "labels"):
            for key in metadata.get(group) or {}:
                kept_only = NOT_ACTED_KEYS.get(key, "").startswith(NOT_ACTED_ON)
                if kept_only and key not in found:
                    found.append(key)
    return found


def not_acted_on(document: Mapping[str, Any]) -> list[str]:
    """The fields and TensorFusion keys a manifest sets that gpupool keeps but does not act on."""
    api_version, kind = document.get("apiVersion"), document.get("kind")
    notes: list[str] = []
    model = model_for(api_version, kind) if isinstance(api_version, str) and isinstance(kind, str) else None
    if model is not None and model.API_VERSION == c.API_VERSION:
        spec = document.get("spec")
        for path in dict.fromkeys(_set_paths(spec, "spec")) if isinstance(spec, Mapping) else ():
            status, _note = classify(model.KIND, path)
            if status == NOT_ACTED_ON:
                notes.append(path)
    notes += [f"{key} (annotation/label)" for key in _keys_kept(document)]
    return notes


def _requirement_lists(spec: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    manager = spec.get("nodeManagerConfig")
    provisioner = manager.get("nodeProvisioner") if isinstance(manager, Mapping) else None
    if isinstance(provisioner, Mapping):
        for name in ("gpuRequirements", "cpuRequirements"):
            yield f"spec.nodeManagerConfig.nodeProvisioner.{name}", provisioner.get(name)


def extensions_used(document: Mapping[str, Any]) -> list[str]:
    """Where a manifest relies on something gpupool accepts but TensorFusion's CRD would reject."""
    spec = document.get("spec")
    specs: list[tuple[str, Mapping[str, Any]]] = []
    if document.get("kind") == "GPUPool" and isinstance(spec, Mapping):
        specs.append(("", spec))
    if document.get("kind") == "TensorFusionCluster" and isinstance(spec, Mapping):
        for index, pool in enumerate(spec.get("gpuPools") or []):
            template = pool.get("specTemplate") if isinstance(pool, Mapping) else None
            if isinstance(template, Mapping):
                specs.append((f"spec.gpuPools[{index}].specTemplate → ", template))
    found: list[str] = []
    for where, pool_spec in specs:
        for path, requirements in _requirement_lists(pool_spec):
            for index, requirement in enumerate(requirements if isinstance(requirements, list) else []):
                if not isinstance(requirement, Mapping):
                    continue
                key, operator = requirement.get("key"), requirement.get("operator", "In")
                if isinstance(key, str) and key not in PROVISIONER_KEYS:
                    found.append(f"{where}{path}[{index}].key {key!r}: a gpupool extension")
                if operator == "NotIn":
                    found.append(f"{where}{path}[{index}].operator NotIn: a gpupool extension")
    return found


def compatibility_markdown() -> str:
    """The field table docs/compatibility.md carries (generated: `gpupool validate --compat-table`)."""
    lines = ["| Kind | Field | gpupool | Note |", "| --- | --- | --- | --- |"]
    rows = compatibility_rows()
    lines += [f"| {kind} | `{path}` | {status} | {note} |" for kind, path, status, note in rows]
    lines += ["", "| Pod / node key | gpupool |", "| --- | --- |"]
    lines += [f"| `{key}` | {what} |" for key, what in sorted(NOT_ACTED_KEYS.items())]
    return "\n".join(lines) + "\n"
