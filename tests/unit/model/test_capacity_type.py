"""The one capacity-type table (`core.model.capacity_type`): every spelling reads back to its type.

Covers: TensorFusion's and Karpenter's spellings (any case, surrounding spaces, `ondemand`) read
as TensorFusion's names and write back as Karpenter's; EC2's and ECS's words are in the table
(a Spot instance's lifecycle, the SpotStrategy values); anything else reads as no capacity type;
and no other module of the package keeps its own translation table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpupool.core.model.capacity_type import (
    CAPACITY_TYPE_TABLE,
    CAPACITY_TYPES,
    KARPENTER_CAPACITY_TYPES,
    capacity_type,
    karpenter_capacity_type,
    spellings,
)


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        ("OnDemand", "OnDemand"),
        ("on-demand", "OnDemand"),
        ("ondemand", "OnDemand"),
        ("ON-DEMAND", "OnDemand"),
        (" Spot ", "Spot"),
        ("spot", "Spot"),
        ("Reserved", "Reserved"),
        ("reserved", "Reserved"),
        ("preemptible", None),
        ("", None),
        ("on demand", None),
    ],
)
def test_every_spelling_reads_as_tensorfusions_name(spelling: str, expected: str | None) -> None:
    assert capacity_type(spelling) == expected


def test_the_table_has_one_row_per_type_and_round_trips() -> None:
    assert tuple(row.tensorfusion for row in CAPACITY_TYPE_TABLE) == CAPACITY_TYPES
    assert tuple(row.karpenter for row in CAPACITY_TYPE_TABLE) == KARPENTER_CAPACITY_TYPES
    for name in CAPACITY_TYPES:
        assert capacity_type(karpenter_capacity_type(name)) == name
        assert spellings(name).tensorfusion == name


def test_the_clouds_words() -> None:
    assert spellings("Spot").ec2 == "spot"
    assert spellings("Spot").ecs == ("SpotAsPriceGo", "SpotWithPriceLimit")
    assert spellings("OnDemand").ecs == ("NoSpot",)
    assert spellings("Reserved").ec2 == "" and spellings("OnDemand").ec2 == ""


PACKAGE = Path(__file__).resolve().parents[3] / "layers" / "gpupool" / "gpupool"
# A translation table: one spelling mapped onto another in a literal.
_TABLE = re.compile(
    r"""["'](on-?demand|OnDemand|spot|Spot)["']\s*:\s*["'](OnDemand|on-demand|Spot|spot)["']"""
)


def test_no_other_module_keeps_a_capacity_type_table() -> None:
    found = [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "capacity_type.py" and _TABLE.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []
