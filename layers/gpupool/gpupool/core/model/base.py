"""Building blocks shared by every tensor-fusion.ai/v1 and foreign Kubernetes model.

Role: the model bases (our own specs forbid unknown fields; statuses and foreign envelopes
ignore them), Kubernetes' ObjectMeta, conditions, and the annotated field types the CRD
generator recognises (quantities as int-or-string, loosely typed blocks as
preserve-unknown-fields, Go durations).

Must not: read files, log, or hold any decision about pools or nodes.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)
from pydantic.alias_generators import to_camel
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from gpupool.core.deferred_model import DeferredModel
from gpupool.core.quantity import Quantity

__all__ = [
    "API_VERSION",
    "Condition",
    "Duration",
    "ForeignModel",
    "GroupKindName",
    "Kept",
    "Loose",
    "ObjectMeta",
    "ObservedResource",
    "OwnerReference",
    "PreservedModel",
    "Qty",
    "Resource",
    "SpecModel",
    "StatusModel",
    "TensorFusionObject",
    "TopLevel",
    "crd_default",
    "duration_seconds",
]

API_VERSION = "tensor-fusion.ai/v1"
GROUP = "tensor-fusion.ai"

# A Kubernetes quantity: exact, printed canonically, int-or-string in a CRD schema.
Qty = Annotated[
    Quantity,
    WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}),
]

# A block TensorFusion defines deeply that gpupool accepts and preserves but does not act on.
Loose = Annotated[
    dict[str, Any],
    WithJsonSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
]

# A value TensorFusion's controllers write that gpupool keeps but never reads (any JSON shape).
Kept = Annotated[Any, WithJsonSchema({"x-kubernetes-preserve-unknown-fields": True})]

_GO_DURATION = re.compile(r"^(0|([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+)$")
_WHOLE_DAYS = re.compile(r"^([0-9]+)d(.*)$")


def _check_duration(text: str) -> str:
    days = _WHOLE_DAYS.match(text.strip())
    if days is not None:
        # TensorFusion's schema takes any string here; "1d" has one clear meaning: 24h.
        rest = days.group(2)
        text = f"{int(days.group(1)) * 24}h{rest}"
    if not _GO_DURATION.match(text):
        raise ValueError(f"not a duration: {text!r} (expected e.g. '30s', '5m', '1h30m', '1d')")
    return text


# A Go duration string such as "5m" or "1h30m" ("1d" is read as "24h"); otherwise kept as text.
Duration = Annotated[str, AfterValidator(_check_duration)]

_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration_seconds(text: str) -> float:
    """Seconds in a Go duration string; raises ValueError on anything `Duration` rejects."""
    normalised = _check_duration(text)  # "1d" → "24h"
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(normalised))


_CRD_DEFAULT = "x-gpupool-crd-default"


def crd_default(value: Any, **kwargs: Any) -> Any:
    """A field default TensorFusion's CRD declares: the model reads a missing value as `value`
    and the generated CRD declares it, but a manifest written back leaves it out when the input
    did (the API server fills it in), so a round trip changes nothing."""
    return Field(default=value, json_schema_extra={_CRD_DEFAULT: True}, **kwargs)


def _is_crd_default(info: Any) -> bool:
    extra = info.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get(_CRD_DEFAULT))


class _Model(DeferredModel):
    """Drops empty collections and CRD defaults the input did not set, so a round trip adds
    no `labels: {}` and no defaulted field."""

    @model_serializer(mode="wrap")
    def _drop_unset_empty_collections(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        for field_name, info in type(self).model_fields.items():
            if field_name in self.model_fields_set:
                continue
            value = getattr(self, field_name)
            if (isinstance(value, list | dict) and not value) or _is_crd_default(info):
                data.pop(info.alias or field_name, None)
                data.pop(field_name, None)
        return data


class SpecModel(_Model):
    """Our own data: immutable, camelCase on the wire, unknown fields rejected."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        alias_generator=to_camel,
    )


class StatusModel(_Model):
    """Status written by controllers: immutable, unknown fields ignored."""

    model_config = ConfigDict(
        frozen=True,
        extra="ignore",
        populate_by_name=True,
        alias_generator=to_camel,
    )


class PreservedModel(_Model):
    """A block TensorFusion defines that gpupool reads by name but does not act on: the fields
    listed are typed, anything else TensorFusion writes there is kept as it is."""

    model_config = ConfigDict(
        frozen=True,
        extra="allow",
        populate_by_name=True,
        alias_generator=to_camel,
    )


class ForeignModel(StatusModel):
    """An envelope another system owns (core v1, Karpenter): read what we need, ignore the rest."""


class OwnerReference(_Model):
    """metadata.ownerReferences[] entry."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True, alias_generator=to_camel)

    api_version: str
    kind: str
    name: str
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None

    @classmethod
    def controlled_by(cls, *, api_version: str, kind: str, name: str, uid: str) -> OwnerReference:
        """The controller reference to an object (deletion blocked until its dependents go)."""
        return cls(
            api_version=api_version, kind=kind, name=name, uid=uid, controller=True, block_owner_deletion=True
        )


class ObjectMeta(_Model):
    """Kubernetes' ObjectMeta; fields we do not name are kept as they are."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True, alias_generator=to_camel)

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    finalizers: list[str] = Field(default_factory=list)
    owner_references: list[OwnerReference] = Field(default_factory=list)


class Condition(StatusModel):
    """metav1.Condition (also read for core v1 node/pod conditions)."""

    type: str
    status: str = "Unknown"
    reason: str | None = None
    message: str | None = None
    last_transition_time: datetime | None = None
    last_heartbeat_time: datetime | None = None
    observed_generation: int | None = None


class GroupKindName(SpecModel):
    """A reference to a node class: TensorFusion's GroupKindName."""

    group: str
    kind: str
    name: str
    version: str | None = None


class Resource(SpecModel):
    """TensorFusion's Resource: TFLOPS, VRAM, and compute (a 0-100 percentage, instead of TFLOPS)."""

    tflops: Qty | None = None
    vram: Qty | None = None
    compute: Qty | None = None


class ObservedResource(StatusModel):
    """TFLOPS and VRAM as a controller reported them (unknown fields ignored)."""

    tflops: Qty | None = None
    vram: Qty | None = None
    compute: Qty | None = None


_BLOCKS = ("spec", "status", "metadata")
_NULL_IS_ABSENT = "gpupool-null-is-absent"


def _null_is_absent(field: Any) -> None:
    """Make one model field's schema read JSON null as the field being absent: its default (or
    `Field required` when it has none). Its JSON schema stays the field's own."""
    inner = field["schema"]
    target, key = (inner, "schema") if inner.get("type") == "default" else (field, "schema")
    original = target[key]
    if (original.get("metadata") or {}).get(_NULL_IS_ABSENT):
        return
    defaults_to_none = target is inner and "default_factory" not in inner and inner.get("default") is None
    if defaults_to_none and original.get("type") == "nullable":
        return  # `X | None = None`: null already reads as None, its default
    if target is inner:
        factory, default = inner.get("default_factory"), inner.get("default")

        def absent(value: Any) -> Any:
            if value is None:
                return factory() if factory is not None else default
            return value

    else:

        def absent(value: Any) -> Any:
            if value is None:
                raise PydanticCustomError("missing", "Field required")
            return value

    target[key] = core_schema.no_info_after_validator_function(
        absent,
        core_schema.nullable_schema(original),
        metadata={
            _NULL_IS_ABSENT: True,
            "pydantic_js_functions": [lambda _schema, handler: handler(original)],
        },
    )


def _null_blocks_read_as_absent(schema: Any) -> None:
    node = schema
    while node.get("type") in ("definitions", "function-before", "function-after", "function-wrap"):
        node = node["schema"]
    if node.get("type") != "model":
        return
    fields = node["schema"].get("fields", {}) if node["schema"].get("type") == "model-fields" else {}
    for name in _BLOCKS:
        if name in fields:
            _null_is_absent(fields[name])


class TopLevel(_Model):
    """A top-level object: apiVersion, kind, metadata (spec and status per kind).

    Class variables describe the kind for the registry and the CRD generator.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        alias_generator=to_camel,
    )

    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = ""
    PLURAL: ClassVar[str] = ""
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()
    NAMESPACED: ClassVar[bool] = False
    # (name, JSON path, type) printer columns for `kubectl get`.
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = ()

    api_version: str = API_VERSION
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        # The API server stores `spec: null` (or `status: null`) as written; TensorFusion reads
        # it as an empty block, and so does gpupool: a null block reads as an absent one. Done in
        # the fields' schemas, not in a model validator, so reading JSON never builds a dict of
        # the whole object first (a "before" validator would, for every object of every list).
        schema = super().__get_pydantic_core_schema__(source, handler)
        _null_blocks_read_as_absent(schema)
        return schema

    def to_manifest(self) -> dict[str, Any]:
        """The object as Kubernetes JSON (camelCase, no nulls)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    def controller_references(self) -> list[OwnerReference]:
        """ownerReferences that make this object the controller of a dependent (Kubernetes'
        garbage collector then deletes the dependent with it); none before it has a uid."""
        if not self.metadata.uid:
            return []
        reference = OwnerReference(
            api_version=self.api_version,
            kind=self.kind or self.KIND,
            name=self.name,
            uid=self.metadata.uid,
            controller=True,
            block_owner_deletion=True,
        )
        return [reference]


class TensorFusionObject(TopLevel):
    """A tensor-fusion.ai/v1 object: the apiVersion is fixed."""

    api_version: Literal["tensor-fusion.ai/v1"] = "tensor-fusion.ai/v1"
