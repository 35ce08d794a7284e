"""`gpupool catalog`: the exact JSON element shape, region prices, the table, and clear errors."""

from __future__ import annotations

import json

import pytest

from gpupool.cli.main import main

KEYS = {
    "instanceType",
    "gpuModel",
    "gpuCount",
    "tflopsPerGpu",
    "vramGiBPerGpu",
    "vcpu",
    "memoryGiB",
    "arch",
    "prices",
}


@pytest.mark.parametrize(("cloud", "at_least"), [("aws", 40), ("alibaba", 12)])
def test_json_elements_have_exactly_the_documented_keys(
    cloud: str, at_least: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["catalog", "--cloud", cloud, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert isinstance(rows, list) and len(rows) >= at_least
    for row in rows:
        assert set(row) == KEYS
        assert set(row["prices"]) <= {"on-demand", "spot"} and "on-demand" in row["prices"]
        assert all(isinstance(p, float) and p > 0 for p in row["prices"].values())
        assert isinstance(row["gpuCount"], int) and isinstance(row["tflopsPerGpu"], float)


def test_region_changes_prices_and_drops_unpriced_types(capsys: pytest.CaptureFixture[str]) -> None:
    main(["catalog", "--cloud", "aws", "--json"])
    virginia = {r["instanceType"]: r for r in json.loads(capsys.readouterr().out)}
    main(["catalog", "--cloud", "aws", "--region", "ap-northeast-1", "--json"])
    tokyo = {r["instanceType"]: r for r in json.loads(capsys.readouterr().out)}
    assert virginia["g4dn.xlarge"]["tflopsPerGpu"] == 65.0
    assert tokyo["g4dn.xlarge"]["prices"]["on-demand"] > virginia["g4dn.xlarge"]["prices"]["on-demand"]
    assert "p5e.48xlarge" in virginia and "p5e.48xlarge" not in tokyo


def test_table_lists_types_and_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "--cloud", "alibaba"]) == 0
    out = capsys.readouterr().out
    assert "ecs.gn7i-c8g1.2xlarge" in out and "INSTANCE TYPE" in out and "spot prices:" in out


def test_unknown_region_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "--cloud", "aws", "--region", "mars-1"]) == 2
    err = capsys.readouterr().err
    assert "mars-1" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
