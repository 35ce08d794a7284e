"""What happens to an object between the request and storage: decode, default, validate.

Built-in kinds: decoded along their Kubernetes 1.30 OpenAPI definition (wrong types → 400
BadRequest "cannot be handled as a …"), defaulted (`builtin_defaults`), then checked
(`builtin_rules`: required fields, enums, per-kind rules → 422 Invalid). Custom resources:
pruned, defaulted and validated against their CRD's structural schema and its CEL rules
(`schema`, `cel`; an update's transition rules against the stored object). For both,
unknown fields follow the request's `fieldValidation`: Ignore drops them silently, Warn (the
default) drops them and adds a `Warning`, Strict refuses the request with 400 BadRequest.

Must not: reach storage or check metadata rules (names, finalizers: see `validation`).
"""

from __future__ import annotations

from typing import Any

from gpupool.sandbox.kubeapi import errors
from gpupool.sandbox.kubeapi.builtin_defaults import IpAllocator, apply_defaults
from gpupool.sandbox.kubeapi.builtin_rules import kind_problems, schema_problems
from gpupool.sandbox.kubeapi.builtin_schemas import Schema, definition_name, definitions
from gpupool.sandbox.kubeapi.decode import decode
from gpupool.sandbox.kubeapi.objects import metadata
from gpupool.sandbox.kubeapi.query import WriteOptions
from gpupool.sandbox.kubeapi.resources import ResourceType
from gpupool.sandbox.kubeapi.schema import conform_reporting

JsonObject = dict[str, Any]


def schema_for(rt: ResourceType) -> Schema | None:
    """The schema objects of `rt` follow: its 1.30 definition, or its CRD version's schema."""
    if not rt.builtin:
        return rt.schema
    name = definition_name(rt.group, rt.version, rt.kind)
    return definitions()[name] if name is not None else None


def _unknown_fields(rt: ResourceType, unknown: list[str], options: WriteOptions) -> None:
    if not unknown or options.field_validation == "Ignore":
        return
    described = [f'unknown field "{path}"' for path in unknown]
    if options.field_validation == "Strict":
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: strict decoding error: '
            + ", ".join(described)
        )
    options.warnings.extend(described)


def admit(
    rt: ResourceType,
    obj: JsonObject,
    old: JsonObject | None,
    options: WriteOptions,
    allocate_ip: IpAllocator,
    *,
    enforce_schemas: bool = True,
    status_write: bool = False,
) -> JsonObject:
    """The object to store: decoded, defaulted and validated (raises 400/422 otherwise);
    `status_write` for a write through the status subresource."""
    name = str(metadata(obj).get("name") or metadata(obj).get("generateName") or "")
    if not rt.builtin:
        if not enforce_schemas or rt.schema is None:
            return obj
        pruned, problems, unknown = conform_reporting(rt.schema, obj, old, status_write=status_write)
        _unknown_fields(rt, unknown, options)
        if problems:
            raise errors.invalid(rt.kind, rt.error_group, name, problems)
        return pruned
    definition = definition_name(rt.group, rt.version, rt.kind)
    if definition is None:
        apply_defaults(rt.group, obj, allocate_ip)
        return obj
    schema = definitions()[definition]
    decoded = decode(schema, obj, rt.kind)
    if decoded.type_errors:
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {decoded.type_errors[0]}'
        )
    _unknown_fields(rt, decoded.unknown, options)
    admitted = decoded.obj
    apply_defaults(rt.group, admitted, allocate_ip)
    found = schema_problems(schema, admitted, rt.kind) + kind_problems(rt.group, admitted, old)
    problems = list(dict.fromkeys(found))  # a rule and the schema may name the same field
    if problems:
        raise errors.invalid(rt.kind, rt.error_group, name, problems)
    return admitted
