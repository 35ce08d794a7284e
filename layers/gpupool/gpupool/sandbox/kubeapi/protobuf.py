"""Kubernetes' protobuf request bodies, decoded into the JSON the embedded server works on — for the
few built-in kinds kubectl writes through its typed clients.

Role: client-go sends every built-in kind in protobuf (`application/vnd.kubernetes.protobuf`), so
kubectl v1.36's generators (`kubectl create namespace|configmap|secret`) and `kubectl auth can-i`
write protobuf bodies. kube-apiserver decodes them with the messages of `k8s.io/api`'s and
`k8s.io/apimachinery`'s `generated.proto`; this decodes the same wire format — the 4-byte magic
`k8s\\0`, then a `runtime.Unknown` whose `typeMeta` names the kind and whose `raw` is the object —
with the field numbers of those files, for the messages in `MESSAGES` only.

Simpler than upstream, and how: only the kinds in `KINDS` are decoded; any other kind, any field
whose number the table lacks, or malformed bytes are refused (415 or 400 by the caller) instead of
being guessed or dropped — nothing is ever stored half-read. Answers stay JSON (every client-go
request also accepts JSON).

Must not: encode protobuf, or accept a field it does not know.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """A body this decoder does not read: the message says which kind or field, and why."""


# message name → field number → (JSON name, kind, message of a nested or map value).
# Kinds: "string", "bytes", "bool", "int64", "message", "repeated-string", "map-string",
# "map-bytes", and "empty" — a field the table does not model, read only when Go sent it empty
# (Go's marshaller writes every non-pointer field, set or not). Field numbers from k8s.io/api and
# k8s.io/apimachinery v0.36.3's generated.proto (tests/unit/test_sandbox_protobuf.py checks each row).
Field = tuple[str, str, str | None]
MESSAGES: dict[str, dict[int, Field]] = {
    "Unknown": {
        1: ("typeMeta", "message", "TypeMeta"),
        2: ("raw", "bytes", None),
        3: ("contentEncoding", "string", None),
        4: ("contentType", "string", None),
    },
    "TypeMeta": {1: ("apiVersion", "string", None), 2: ("kind", "string", None)},
    "ObjectMeta": {
        1: ("name", "string", None),
        2: ("generateName", "string", None),
        3: ("namespace", "string", None),
        4: ("selfLink", "string", None),
        5: ("uid", "string", None),
        6: ("resourceVersion", "string", None),
        7: ("generation", "int64", None),
        8: ("creationTimestamp", "message", "Time"),
        9: ("deletionTimestamp", "empty", None),
        10: ("deletionGracePeriodSeconds", "empty", None),
        11: ("labels", "map-string", None),
        12: ("annotations", "map-string", None),
        13: ("ownerReferences", "empty", None),
        14: ("finalizers", "repeated-string", None),
        17: ("managedFields", "empty", None),
    },
    "Time": {1: ("seconds", "int64", None), 2: ("nanos", "int64", None)},
    "Namespace": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("spec", "message", "NamespaceSpec"),
        3: ("status", "empty", None),
    },
    "NamespaceSpec": {1: ("finalizers", "repeated-string", None)},
    "ConfigMap": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("data", "map-string", None),
        3: ("binaryData", "map-bytes", None),
        4: ("immutable", "bool", None),
    },
    "Secret": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("data", "map-bytes", None),
        3: ("type", "string", None),
        4: ("stringData", "map-string", None),
        5: ("immutable", "bool", None),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("spec", "message", "SelfSubjectAccessReviewSpec"),
        3: ("status", "empty", None),
    },
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "message", "ResourceAttributes"),
        2: ("nonResourceAttributes", "message", "NonResourceAttributes"),
    },
    "ResourceAttributes": {
        1: ("namespace", "string", None),
        2: ("verb", "string", None),
        3: ("group", "string", None),
        4: ("version", "string", None),
        5: ("resource", "string", None),
        6: ("subresource", "string", None),
        7: ("name", "string", None),
        8: ("fieldSelector", "empty", None),
        9: ("labelSelector", "empty", None),
    },
    "NonResourceAttributes": {1: ("path", "string", None), 2: ("verb", "string", None)},
    "SelfSubjectRulesReview": {
        1: ("metadata", "message", "ObjectMeta"),
        2: ("spec", "message", "SelfSubjectRulesReviewSpec"),
        3: ("status", "empty", None),
    },
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "string", None)},
}
# (apiVersion, kind) → the message its raw bytes are.
KINDS: dict[tuple[str, str], str] = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "SelfSubjectRulesReview",
}


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ProtobufError("malformed protobuf: a varint runs past the body")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: varints as ints, length-delimited fields as bytes."""
    found: list[tuple[int, int | bytes]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            found.append((number, value))
        elif wire == 2:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise ProtobufError("malformed protobuf: a field runs past the body")
            found.append((number, data[at : at + length]))
            at += length
        else:
            raise ProtobufError(f"malformed protobuf: wire type {wire} in field {number}")
    return found


def _is_empty(raw: int | bytes) -> bool:
    """Zero, nothing, or a message all of whose fields are themselves empty (Go's zero value)."""
    if isinstance(raw, int):
        return raw == 0
    if not raw:
        return True
    try:
        return all(_is_empty(value) for _, value in _fields(raw))
    except ProtobufError:
        return False


def _map_entry(data: bytes, *, as_bytes: bool) -> tuple[str, str]:
    key = value = b""
    for number, raw in _fields(data):
        if not isinstance(raw, bytes) or number not in (1, 2):
            raise ProtobufError("malformed protobuf: a map entry is not (key, value)")
        key, value = (raw, value) if number == 1 else (key, raw)
    text = base64.b64encode(value).decode() if as_bytes else value.decode()
    return key.decode(), text


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    table = MESSAGES[name]
    out: dict[str, Any] = {}
    for number, raw in _fields(data):
        if number not in table:
            raise ProtobufError(f"field {number} of {name} is not read by the embedded API server")
        key, kind, nested = table[number]
        if kind == "empty":
            if not _is_empty(raw):
                raise ProtobufError(f"{name}.{key} is not read by the embedded API server")
            continue
        if kind in ("int64", "bool"):
            if not isinstance(raw, int):
                raise ProtobufError(f"malformed protobuf: {name}.{key} is not a varint")
            if kind == "bool":
                out[key] = bool(raw)  # the bools read here are pointers in Go: sent only when set
            elif raw:
                out[key] = raw - (1 << 64) if raw >= 1 << 63 else raw
            continue
        if not isinstance(raw, bytes):
            raise ProtobufError(f"malformed protobuf: {name}.{key} is not length-delimited")
        if kind == "string":
            if raw:  # every string here is `omitempty` in JSON: Go sends the empty ones too
                out[key] = raw.decode()
        elif kind == "bytes":
            out[key] = raw
        elif kind == "message":
            assert nested is not None
            out[key] = decode_message(nested, raw)
        elif kind == "repeated-string":
            out.setdefault(key, []).append(raw.decode())
        else:  # map-string / map-bytes
            entry_key, entry_value = _map_entry(raw, as_bytes=kind == "map-bytes")
            out.setdefault(key, {})[entry_key] = entry_value
    return out


def _time(value: dict[str, Any]) -> str | None:
    """metav1.Time: Go's zero time is sent as an empty message and means null, as in JSON."""
    seconds = int(value.get("seconds", 0))
    if seconds <= 0:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def decode(body: bytes) -> dict[str, Any]:
    """The object a protobuf request body carries, as its JSON form (apiVersion and kind included)."""
    if not body.startswith(MAGIC):
        raise ProtobufError("malformed protobuf: the body does not start with Kubernetes' k8s\\0 magic")
    envelope = decode_message("Unknown", body[len(MAGIC) :])
    type_meta = envelope.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    if envelope.get("contentEncoding"):
        raise ProtobufError(f"protobuf content encoding {envelope['contentEncoding']!r} is not read")
    message = KINDS.get((api_version, kind))
    if message is None:
        readable = ", ".join(f"{k} ({v})" for v, k in KINDS)
        raise ProtobufError(
            f"the embedded API server reads protobuf only for {readable}, not {kind} ({api_version})"
        )
    found = decode_message(message, envelope.get("raw", b""))
    metadata = found.get("metadata")
    if isinstance(metadata, dict) and "creationTimestamp" in metadata:
        stamp = _time(metadata.pop("creationTimestamp"))
        if stamp is not None:
            metadata["creationTimestamp"] = stamp
    return {"apiVersion": api_version, "kind": kind, **found}
