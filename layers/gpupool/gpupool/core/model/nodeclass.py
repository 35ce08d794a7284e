"""GPUNodeClass (tensor-fusion.ai/v1): the cloud instance template for provisioned nodes.

Role: image, subnet and security-group selectors, instance profile, IMDS options, disks,
tags, userData and launch template, named as TensorFusion names them.

Must not: resolve selectors against a cloud (adapters do that).
"""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from gpupool.core.model.base import Qty, SpecModel, TensorFusionObject

__all__ = [
    "BlockDeviceMapping",
    "EbsSettings",
    "GPUNodeClass",
    "GPUNodeClassSpec",
    "MetadataOptions",
    "SelectorTerm",
]


class SelectorTerm(SpecModel):
    """Select a cloud item by id, name or tags (gpupool matches ids first, as TensorFusion)."""

    id: str | None = None
    name: str | None = None
    owner: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)


def _on_off_spelling(value: object) -> object:
    # TensorFusion's CRD types httpEndpoint / httpProtocolIPv6 as strings ("enabled" /
    # "disabled", EC2's spelling); gpupool also takes true / false.
    if isinstance(value, str) and value.strip().lower() in ("enabled", "disabled"):
        return value.strip().lower() == "enabled"
    return value


# true / false, or TensorFusion's "enabled" / "disabled"; any of them passes the CRD.
OnOff = Annotated[
    bool | None,
    BeforeValidator(_on_off_spelling),
    WithJsonSchema({"x-kubernetes-preserve-unknown-fields": True}),
]


class MetadataOptions(SpecModel):
    """AWS IMDS options (httpEndpoint / httpProtocolIPv6 as true/false or "enabled"/"disabled")."""

    http_endpoint: OnOff = None
    http_protocol_ipv6: OnOff = Field(default=None, alias="httpProtocolIPv6")
    http_put_response_hop_limit: int | None = Field(default=None, ge=1, le=64)
    http_tokens: Literal["required", "optional"] | None = None


def _binary_unit_spelling(value: object) -> object:
    # "100GiB" / "100GB" are common spellings of a disk size; TensorFusion's schema takes them
    # (a string), so gpupool reads them as the quantities they clearly mean ("100Gi", "100G").
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9.]+)\s*([KMGTPE]i?)B\s*", value)
        if match is not None:
            return match.group(1) + match.group(2)
    return value


class EbsSettings(SpecModel):
    """A block device's volume (`volumeSize` also as "100GiB", read as 100Gi)."""

    # TensorFusion's CRD types volumeSize as a plain string: the CRD lets "100GiB" through too.
    volume_size: Annotated[
        Qty | None,
        BeforeValidator(_binary_unit_spelling),
        WithJsonSchema({"x-kubernetes-preserve-unknown-fields": True}),
    ] = None
    volume_type: str | None = None
    iops: int | None = Field(default=None, ge=0)
    throughput: int | None = Field(default=None, ge=0)
    encrypted: bool | None = None
    delete_on_termination: bool | None = None
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: str | None = Field(default=None, alias="snapshotID")


class BlockDeviceMapping(SpecModel):
    device_name: str | None = None
    ebs: EbsSettings | None = None


class GPUNodeClassSpec(SpecModel):
    os_image_family: str | None = None
    os_image_type: Literal["Private", "Public", "System"] | None = None
    os_image_selector_terms: list[SelectorTerm] = Field(default_factory=list)
    instance_profile: str | None = None
    metadata_options: MetadataOptions | None = None
    security_group_selector_terms: list[SelectorTerm] = Field(default_factory=list)
    subnet_selector_terms: list[SelectorTerm] = Field(default_factory=list)
    block_device_mappings: list[BlockDeviceMapping] = Field(default_factory=list)
    tags: dict[str, str] = Field(default_factory=dict)
    user_data: str | None = None
    launch_template: SelectorTerm | None = None


class GPUNodeClass(TensorFusionObject):
    """tensor-fusion.ai/v1 GPUNodeClass."""

    KIND: ClassVar[str] = "GPUNodeClass"
    PLURAL: ClassVar[str] = "gpunodeclasses"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("gnclass",)

    kind: Literal["GPUNodeClass"] = "GPUNodeClass"
    spec: GPUNodeClassSpec = Field(default_factory=GPUNodeClassSpec)
