"""gpupool.core.model resolves its exported names on first use, from the module defining each."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import gpupool.core.model as package


def test_every_exported_name_resolves_to_its_definition() -> None:
    assert set(package._MODULE_OF) == set(package.__all__)
    for name, module in package._MODULE_OF.items():
        defined_in = importlib.import_module(f"gpupool.core.model.{module}")
        assert getattr(package, name) is getattr(defined_in, name)


def test_dir_lists_every_exported_name() -> None:
    assert set(package.__all__) <= set(dir(package))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'GPUPoool'"):
        getattr(package, "GPUPoool")  # noqa: B009 (a name mypy would refuse written out)


def test_one_model_module_imports_no_other_kind() -> None:
    """Reading pools must not import the registry, nor the kinds only it names."""
    code = (
        "import sys; import gpupool.core.model.pool; "
        "print(sorted(m for m in sys.modules if m.startswith('gpupool.core.model.')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout

    for module in ("registry", "workload", "scheduling", "quota", "provider", "crd"):
        assert f"gpupool.core.model.{module}'" not in loaded
    assert "gpupool.core.model.pool'" in loaded
