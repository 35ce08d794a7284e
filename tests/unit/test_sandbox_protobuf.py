"""The embedded server's protobuf reader: every field number it uses is the one in k8s.io/api's and
k8s.io/apimachinery's generated.proto (read from the Go module cache `gpupool sandbox build` fills),
kubectl's own bodies decode, and what it does not read is refused, never dropped."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from gpupool.sandbox.cluster.build import modules_dir
from gpupool.sandbox.kubeapi import protobuf

# Each message of the table, and the generated.proto that defines it (module, path inside).
SOURCES = {
    "Unknown": ("k8s.io/apimachinery", "pkg/runtime/generated.proto"),
    "TypeMeta": ("k8s.io/apimachinery", "pkg/runtime/generated.proto"),
    "ObjectMeta": ("k8s.io/apimachinery", "pkg/apis/meta/v1/generated.proto"),
    "Time": ("k8s.io/apimachinery", "pkg/apis/meta/v1/generated.proto"),
    "Namespace": ("k8s.io/api", "core/v1/generated.proto"),
    "NamespaceSpec": ("k8s.io/api", "core/v1/generated.proto"),
    "ConfigMap": ("k8s.io/api", "core/v1/generated.proto"),
    "Secret": ("k8s.io/api", "core/v1/generated.proto"),
    "SelfSubjectAccessReview": ("k8s.io/api", "authorization/v1/generated.proto"),
    "SelfSubjectAccessReviewSpec": ("k8s.io/api", "authorization/v1/generated.proto"),
    "ResourceAttributes": ("k8s.io/api", "authorization/v1/generated.proto"),
    "NonResourceAttributes": ("k8s.io/api", "authorization/v1/generated.proto"),
    "SelfSubjectRulesReview": ("k8s.io/api", "authorization/v1/generated.proto"),
    "SelfSubjectRulesReviewSpec": ("k8s.io/api", "authorization/v1/generated.proto"),
}


def _module_dir(module: str) -> Path:
    found = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", module],
        cwd=modules_dir() / "kubernetes",
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0 or not found.stdout.strip():
        pytest.fail(f"{module} is not in the Go module cache (run `gpupool sandbox build`): {found.stderr}")
    return Path(found.stdout.strip())


def _proto_fields(text: str, message: str) -> dict[int, str]:
    body = re.search(rf"^message {message} \{{(.*?)^\}}", text, re.MULTILINE | re.DOTALL)
    assert body is not None, message
    fields = re.findall(r"^\s+(?:(?:optional|repeated)\s+\S+|map<[^>]+>)\s+(\w+) = (\d+);", body[1], re.M)
    return {int(number): name for name, number in fields}


def test_every_field_number_is_the_one_generated_proto_gives() -> None:
    assert set(SOURCES) == set(protobuf.MESSAGES)
    for message, (module, path) in SOURCES.items():
        declared = _proto_fields((_module_dir(module) / path).read_text(), message)
        for number, (name, _, _) in protobuf.MESSAGES[message].items():
            assert declared.get(number) == name, (
                f"{message} field {number}: proto says {declared.get(number)}"
            )


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _body(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version.encode()) + _field(2, kind.encode())
    return protobuf.MAGIC + _field(1, type_meta) + _field(2, raw)


def test_a_configmap_decodes_as_its_json() -> None:
    metadata = (
        _field(1, b"settings")
        + _field(3, b"demo")
        + _field(4, b"")
        + _field(11, _field(1, b"a") + _field(2, b"b"))
    )
    raw = (
        _field(1, metadata)
        + _field(2, _field(1, b"k") + _field(2, b"v"))
        + _field(3, _field(1, b"bin") + _field(2, b"\x00\x01"))
    )
    assert protobuf.decode(_body("v1", "ConfigMap", raw)) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "demo", "labels": {"a": "b"}},
        "data": {"k": "v"},
        "binaryData": {"bin": "AAE="},
    }


def test_what_it_does_not_read_is_refused() -> None:
    with pytest.raises(protobuf.ProtobufError, match=r"reads protobuf only for .* not Pod"):
        protobuf.decode(_body("v1", "Pod", b""))
    with pytest.raises(protobuf.ProtobufError, match="field 99 of ConfigMap"):
        protobuf.decode(_body("v1", "ConfigMap", _field(99, b"x")))
    owner = _field(13, _field(1, b"v1"))  # an ownerReference that is set: not read, so refused
    with pytest.raises(protobuf.ProtobufError, match=r"ObjectMeta\.ownerReferences"):
        protobuf.decode(_body("v1", "Namespace", _field(1, owner)))
    with pytest.raises(protobuf.ProtobufError, match="magic"):
        protobuf.decode(b'{"kind": "Namespace"}')
    with pytest.raises(protobuf.ProtobufError, match="runs past"):
        protobuf.decode(protobuf.MAGIC + b"\x0a\x50")
