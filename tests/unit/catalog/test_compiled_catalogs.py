"""The shipped JSON catalogs are the hand-written YAML ones, compiled (compile_catalogs.py)."""

from __future__ import annotations

import importlib.util
from importlib import resources
from pathlib import Path
from types import ModuleType

import pytest

from gpupool.core.catalog import CLOUDS, Cloud, load_catalog, parse_catalog
from gpupool.core.catalog.loader import compiled_name

ROOT = Path(__file__).resolve().parents[3]
REGENERATE = "run .venv/bin/python layers/gpupool/compile_catalogs.py after editing a catalog's YAML"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "compile_catalogs", ROOT / "layers/gpupool/compile_catalogs.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _bundled(name: str) -> bytes:
    return resources.files("gpupool.core.catalog").joinpath(name).read_bytes()


@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_shipped_json_is_the_yaml_compiled(cloud: Cloud) -> None:
    fresh: str = _script().compiled(cloud)
    assert _bundled(compiled_name(cloud)).decode("utf-8") == fresh, (
        f"{compiled_name(cloud)} is stale: {REGENERATE}"
    )


@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_loaded_catalog_is_the_yamls(cloud: Cloud) -> None:
    assert load_catalog(cloud) == parse_catalog(_bundled(f"{cloud}.yaml"))
