"""gpuRequirements over catalog offerings: every supported key, the six operators, capacity-type
spellings, unknown keys ignored with a reason, and malformed requirements rejected."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from gpupool.core.catalog import load_catalog
from gpupool.core.catalog.model import Offering
from gpupool.core.model.common import Requirement
from gpupool.core.planning.requirements import RequirementError, select_matching

OFFERINGS = load_catalog("aws").offerings("us-east-1")


@dataclass(frozen=True)
class Req:
    """A requirement that skips the model's own validation, to reach the core's checks."""

    key: str
    operator: str
    values: list[str] = field(default_factory=list)


def names(offerings: tuple[Offering, ...]) -> set[str]:
    return {o.instance_type.name for o in offerings}


def kept(*requirements: Req) -> tuple[Offering, ...]:
    return select_matching(OFFERINGS, list(requirements)).offerings


def test_no_requirements_keep_everything() -> None:
    assert kept() == OFFERINGS


@pytest.mark.parametrize(
    ("requirement", "holds"),
    [
        (
            Req("node.kubernetes.io/instance-type", "In", ["g4dn.xlarge", "g5.xlarge"]),
            lambda o: o.instance_type.name in ("g4dn.xlarge", "g5.xlarge"),
        ),
        (
            Req("node.kubernetes.io/instance-type", "NotIn", ["g4dn.xlarge"]),
            lambda o: o.instance_type.name != "g4dn.xlarge",
        ),
        (Req("topology.kubernetes.io/zone", "In", ["us-east-1b"]), lambda o: o.zone == "us-east-1b"),
        (Req("topology.kubernetes.io/region", "In", ["us-east-1"]), lambda o: True),
        (Req("topology.kubernetes.io/region", "In", ["us-west-2"]), lambda o: False),
        (Req("kubernetes.io/arch", "In", ["arm64"]), lambda o: o.instance_type.arch == "arm64"),
        (Req("kubernetes.io/os", "NotIn", ["linux"]), lambda o: False),
        (Req("tensor-fusion.ai/gpu-model", "In", ["l40s"]), lambda o: o.instance_type.gpu_model == "L40S"),
        (
            Req("karpenter.k8s.aws/instance-gpu-name", "In", ["t4"]),
            lambda o: o.instance_type.gpu_model == "T4",
        ),
        (
            Req("karpenter.k8s.aws/instance-family", "In", ["p5", "p5e"]),
            lambda o: o.instance_type.family in ("p5", "p5e"),
        ),
        (
            Req("tensor-fusion.ai/gpu-instance-size", "In", ["48xlarge"]),
            lambda o: o.instance_type.name.endswith(".48xlarge"),
        ),
        (Req("karpenter.k8s.aws/instance-gpu-count", "Gt", ["4"]), lambda o: o.instance_type.gpu_count > 4),
        (Req("karpenter.k8s.aws/instance-gpu-count", "Lt", ["2"]), lambda o: o.instance_type.gpu_count < 2),
        (
            Req("karpenter.k8s.aws/instance-gpu-memory", "Gt", ["40000"]),
            lambda o: o.instance_type.vram_gib_per_gpu > 39,
        ),
        (Req("karpenter.k8s.aws/instance-cpu", "Lt", ["8"]), lambda o: o.instance_type.vcpu < 8),
        (
            Req("karpenter.k8s.aws/instance-memory", "Gt", ["1048576"]),
            lambda o: o.instance_type.memory_gib > 1024,
        ),
        (Req("tensor-fusion.ai/gpu-vendor", "In", ["NVIDIA"]), lambda o: True),
        (Req("kubernetes.io/arch", "Exists"), lambda o: True),
        (Req("kubernetes.io/arch", "DoesNotExist"), lambda o: False),
        (Req("node.kubernetes.io/instance-type", "Gt", ["3"]), lambda o: False),  # not an integer label
    ],
    ids=lambda v: f"{v.key} {v.operator} {v.values}" if isinstance(v, Req) else "",
)
def test_operator_and_key_table(requirement: Req, holds: object) -> None:
    expected = tuple(o for o in OFFERINGS if holds(o))  # type: ignore[operator]
    assert kept(requirement) == expected


@pytest.mark.parametrize("spelling", ["OnDemand", "on-demand", "ONDEMAND", "ondemand"])
def test_capacity_type_accepts_tensorfusion_and_karpenter_spellings(spelling: str) -> None:
    result = kept(Req("karpenter.sh/capacity-type", "In", [spelling]))
    assert result and {o.capacity_type for o in result} == {"on-demand"}


def test_spot_and_reserved_spellings() -> None:
    assert {o.capacity_type for o in kept(Req("karpenter.sh/capacity-type", "In", ["Spot"]))} == {"spot"}
    # No reserved prices in the catalog: reserved offerings never exist.
    assert kept(Req("karpenter.sh/capacity-type", "In", ["Reserved", "reserved"])) == ()
    assert {o.capacity_type for o in kept(Req("karpenter.sh/capacity-type", "NotIn", ["Spot"]))} == {
        "on-demand"
    }


def test_requirements_are_anded() -> None:
    result = kept(
        Req("tensor-fusion.ai/gpu-model", "In", ["T4"]),
        Req("kubernetes.io/arch", "In", ["amd64"]),
        Req("karpenter.sh/capacity-type", "In", ["Spot"]),
        Req("topology.kubernetes.io/zone", "NotIn", ["us-east-1a", "us-east-1b"]),
    )
    assert names(result) == {t for t in names(OFFERINGS) if t.startswith("g4dn.")}
    assert {o.zone for o in result} == {"us-east-1c", "us-east-1d", "us-east-1f"}


def test_model_requirements_work_as_is() -> None:
    result = select_matching(
        OFFERINGS, [Requirement(key="node.kubernetes.io/instance-type", operator="In", values=["g6.xlarge"])]
    )
    assert names(result.offerings) == {"g6.xlarge"}


def test_unknown_key_is_ignored_with_a_reason() -> None:
    result = select_matching(OFFERINGS, [Req("karpenter.k8s.aws/instance-hypervisor", "In", ["nitro"])])
    assert result.offerings == OFFERINGS
    assert len(result.ignored) == 1 and "karpenter.k8s.aws/instance-hypervisor" in result.ignored[0]


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        (Req("karpenter.sh/capacity-type", "In", ["Cheap"]), "unknown capacity type"),
        (Req("kubernetes.io/arch", "Matches", ["amd64"]), "unknown operator"),
        (Req("custom/key", "Near", ["x"]), "unknown operator"),
        (Req("kubernetes.io/arch", "In", []), "at least one value"),
        (Req("kubernetes.io/arch", "Exists", ["amd64"]), "takes no values"),
        (Req("karpenter.k8s.aws/instance-gpu-count", "Gt", ["1", "2"]), "exactly one integer"),
        (Req("karpenter.k8s.aws/instance-gpu-count", "Lt", ["many"]), "not an integer"),
    ],
)
def test_malformed_requirements_are_errors(requirement: Req, message: str) -> None:
    with pytest.raises(RequirementError, match=message):
        select_matching(OFFERINGS, [requirement])


def test_labels_match_agrees_with_offering_selection() -> None:
    """`labels_match` (used by launch on offerings that carry catalog labels) judges like select_matching."""
    from gpupool.core.planning.requirements import labels_match, offering_labels

    requirements = [
        Req("tensor-fusion.ai/gpu-model", "In", ["t4", "L4"]),
        Req("karpenter.sh/capacity-type", "NotIn", ["OnDemand"]),
        Req("karpenter.k8s.aws/instance-gpu-count", "Lt", ["4"]),
        Req("example.com/unknown", "In", ["x"]),  # ignored, as in select_matching
    ]
    kept = set(select_matching(OFFERINGS, requirements).offerings)
    assert kept and kept != set(OFFERINGS)
    for offering in OFFERINGS:
        assert labels_match(offering_labels(offering), requirements) is (offering in kept)
