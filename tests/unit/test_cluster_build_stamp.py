"""The build stamp of `gpupool sandbox build`: a component is rebuilt when anything its binaries
depend on changes — its module files, its flags, its build tags — and only then."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpupool.sandbox.cluster.build import COMPONENTS, Component, stamp_of


def _promtool() -> Component:
    (found,) = (c for c in COMPONENTS if c.name == "promtool")
    return found


def test_build_tags_change_the_stamp(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module x\n")
    promtool = _promtool()
    assert promtool.tags == ("remove_all_sd",)  # Prometheus's tag that leaves the cloud SDs out
    tagged = stamp_of(promtool, tmp_path, "go1.26.8")
    assert stamp_of(replace(promtool, tags=()), tmp_path, "go1.26.8") != tagged
    assert stamp_of(promtool, tmp_path, "go1.26.8") == tagged
    (tmp_path / "go.sum").write_text("x v1 h1:=\n")
    assert stamp_of(promtool, tmp_path, "go1.26.8") != tagged
