"""The Lambda layer ships only what the functions import, and that is enough to run them.

`layers/gpupool/build_layer.py` (run by the layer's Makefile, which SAM calls) copies the closure
of gpupool modules the handlers import. Built into a temporary folder: no sandbox
(`gpupool.sandbox`), no simulations (`gpupool.simulation`), no test doubles (`gpupool.testing`),
no GPU scheduler (`gpupool.scheduler`, the relay's), no CLI, no examples, no reference solvers;
no module imported only for the type checker; every shipped module and every function's `app.py`
imports with that folder first on the path (so nothing is missing, lazy and by-name imports
included); the Makefile builds the target SAM names, byte-compiled (`--compile 3.12`: hash-checked
bytecode of every shipped module, so a read-only layer is not compiled at each cold start — and
only by the runtime's Python: with another, the bytecode is left out, never shipped dead). The
build works from a copy of the layer folder alone, as SAM runs it, and stops when the list of
modules the handlers import (`handler_modules.txt`, which makes that possible) goes stale. The
gpupool part's size is printed
(`pytest -s`); `benchmarks/layer_size.py` prints the whole layer's, dependencies included.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "gpupool"


def _build(target: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(LAYER / "build_layer.py"), str(target)],
        capture_output=True,
        text=True,
        check=True,
    )
    print(done.stdout.strip())
    return sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())


def test_the_layer_leaves_out_the_sandbox_the_cli_and_the_reference_solvers(tmp_path: Path) -> None:
    files = _build(tmp_path)
    assert "gpupool/handlers/aws_lambda.py" in files and "gpupool/core/catalog/aws.json" in files
    assert "gpupool/core/catalog/aws.yaml" not in files  # the catalog's source: the JSON is shipped
    for left_out in (
        "gpupool/sandbox/",
        "gpupool/simulation/",
        "gpupool/testing/",
        "gpupool/cli/",
        "gpupool/examples/",
        "gpupool/scheduler/",  # the GPU scheduler: the relay's, never a function's
        "benchmarks/",
    ):
        assert not any(f.startswith(left_out) for f in files), left_out
    assert not any("reference" in f for f in files)
    size = sum((tmp_path / f).stat().st_size for f in files)
    print(f"layer gpupool package: {len(files)} files, {size:,} bytes unzipped")
    # 1 MB until issue 35: the compact function's WhenUnderutilized consolidation decides with the
    # allocator's own fit, so gpupool.core.allocator (~165 KB of source) ships too (1,195,124 bytes
    # when this was raised); the lead's call whether to keep it or trim the allocator's closure.
    # 1.3 MB since issue 35's live prices (1,265,982 bytes when raised, from 1,205,478): the pricing
    # port, cache and choice (~20 KB), each cloud's pricing adapter (~20 KB) and the three EC2
    # operations in the botocore cut, their answer shape cut to the members read (~5 KB).
    # 1.268 MB since issue 32's scheduler split (1,262,997 bytes when lowered, from 1,282,309 on
    # main at 5ce328e before it): the relay's host-room ledger left with the GPU scheduler (the fit
    # keeps a pod's request, host_request: ~2.5 KB), and the closure no longer follows imports under
    # `if TYPE_CHECKING:` (registry, workload, scheduling, provider: ~18 KB the functions never run).
    # 1,275,664 bytes since: the layer at 37069ac, before that stop's seams, AutoSelect and pricing
    # work; with issue 34's expansion vocabulary and usable-GPU label it measured 1,267,934, 66
    # bytes under the 1.268 MB line — a guard that tight fails on a docstring. The promise it keeps
    # is issue 32's "not larger" than the layer before its refactors.
    assert size <= 1_275_664


def test_everything_the_functions_import_is_in_the_layer(tmp_path: Path) -> None:
    """Import every shipped module, then run each function's real handler (dry run, fakes) on a
    schedule event with only the layer's gpupool on the path: lazy imports are exercised too."""
    _build(tmp_path)
    modules = subprocess.run(
        [sys.executable, str(LAYER / "build_layer.py"), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    script = f"""
import importlib, importlib.util, json, sys
sys.path.insert(0, {str(tmp_path)!r})
import gpupool
assert gpupool.__file__.startswith({str(tmp_path)!r}), gpupool.__file__
for name in {modules!r}:
    importlib.import_module(name)
functions = {str(ROOT / "functions")!r}
for function in ("launch", "bind", "compact"):
    spec = importlib.util.spec_from_file_location(f"app_{{function}}", f"{{functions}}/{{function}}/app.py")
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
sys.path.append({str(ROOT)!r})  # the fakes, after the layer: gpupool still comes from the layer
from tests.service.fakes import World, make_pool
# The fakes are the package's in-memory ports (gpupool.testing.memory_ports, never shipped): they
# come from the repository, before any handler runs, and are left out of the checks below.
helpers = {{n for n in sys.modules if n == "gpupool.testing" or n.startswith("gpupool.testing.")}}
for function in ("launch", "bind", "compact"):
    spec = importlib.util.spec_from_file_location(f"run_{{function}}", f"{{functions}}/{{function}}/app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    world = World(make_pool())
    event = json.load(open({str(ROOT / "events" / "aws" / "scheduled-event.json")!r}))
    app.make_handler(lambda: world.deps, dry_run=True)(event, None)
layer = {str(tmp_path)!r}
shipped = {{n: m for n, m in sys.modules.items() if n.startswith("gpupool") and n not in helpers}}
assert all(m.__file__.startswith(layer) for m in shipped.values())
print(json.dumps(sorted(shipped)))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert not any(
        m.startswith(
            ("gpupool.sandbox", "gpupool.simulation", "gpupool.testing", "gpupool.cli", "gpupool.scheduler")
        )
        for m in loaded
    )
    assert {"gpupool.service.launch", "gpupool.service.bind", "gpupool.service.compact"} <= set(loaded)


def _imported_by(source: str, tmp_path: Path) -> set[str]:
    """What build_layer's closure follows from a module with this source."""
    module = tmp_path / "module.py"
    module.write_text(source, encoding="utf-8")
    code = (
        f"import sys, pathlib; sys.path.insert(0, {str(LAYER)!r}); import build_layer; "
        f"print(sorted(build_layer.imported_modules(pathlib.Path({str(module)!r}))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found: set[str] = set(ast.literal_eval(done.stdout.strip()))
    return found


def test_type_only_imports_are_not_shipped_but_a_lazy_packages_names_are(tmp_path: Path) -> None:
    """`if TYPE_CHECKING:` imports never run, so the closure leaves them out — except that
    `gpupool.core.model` hands out its names on first use from the modules its TYPE_CHECKING block
    names: a name imported from it, or the package imported whole, brings the module(s) along."""
    typing_only = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from gpupool.core.model.workload import WorkloadProfile\n"
    )
    assert _imported_by(typing_only, tmp_path) == set()
    by_name = _imported_by("from gpupool.core.model import GPUPool, load_manifests\n", tmp_path)
    assert by_name == {"gpupool.core.model", "gpupool.core.model.pool", "gpupool.core.model.registry"}
    whole = _imported_by("from gpupool.core import model\n", tmp_path)
    assert {
        "gpupool.core.model.scheduling",
        "gpupool.core.model.registry",
        "gpupool.core.model.pool",
    } <= whole
    assert _imported_by("import gpupool.core.model\n", tmp_path) == whole - {"gpupool.core"}
    shipped = subprocess.run(
        [sys.executable, str(LAYER / "build_layer.py"), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "gpupool.core.model.workload" not in shipped and "gpupool.core.model.pool" in shipped
    assert not any(name.startswith("gpupool.scheduler") for name in shipped)


def test_the_makefile_builds_the_target_sam_calls() -> None:
    makefile = (LAYER / "Makefile").read_text(encoding="utf-8")
    assert "build-GpupoolLayer:" in makefile
    assert "$(ARTIFACTS_DIR)/python" in makefile and "build_layer.py" in makefile
    assert "--platform" in makefile and "requirements.txt" in makefile


def _prune(target: Path) -> subprocess.CompletedProcess[str]:
    code = (
        f"import sys, pathlib; sys.path.insert(0, {str(LAYER)!r}); import build_layer; "
        f"print(build_layer.prune(pathlib.Path({str(target)!r})))"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_pruning_removes_the_async_client_and_refuses_to_break_an_import(tmp_path: Path) -> None:
    for folder in ("kubernetes/aio", "kubernetes/client", "aiohttp", "yarl"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "kubernetes" / "client" / "api.py").write_text("import urllib3\n", encoding="utf-8")
    done = _prune(tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "kubernetes" / "aio").exists() and not (tmp_path / "aiohttp").exists()
    assert (tmp_path / "kubernetes" / "client" / "api.py").exists()
    (tmp_path / "aiohttp").mkdir()
    (tmp_path / "kubernetes" / "client" / "rest.py").write_text("from aiohttp import web\n", encoding="utf-8")
    broken = _prune(tmp_path)
    assert broken.returncode != 0 and "kubernetes/client/rest.py imports aiohttp" in broken.stderr


def test_compiling_ships_hash_checked_bytecode_the_functions_import(tmp_path: Path) -> None:
    """A layer is read-only: without its .pyc files every cold start compiles the package again.
    (Run as the runtime: `--compile` names this Python's version.)"""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    done = subprocess.run(
        [sys.executable, str(LAYER / "build_layer.py"), "--compile", here, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "byte-compiled" in done.stdout
    sources = sorted(tmp_path.rglob("*.py"))
    compiled = {p.parent.parent / (p.name.split(".")[0] + ".py") for p in tmp_path.rglob("__pycache__/*.pyc")}
    assert set(sources) <= compiled
    tag = sys.implementation.cache_tag
    handler = tmp_path / "gpupool" / "handlers" / "__pycache__" / f"aws_lambda.{tag}.pyc"
    flags = int.from_bytes(handler.read_bytes()[4:8], "little")
    assert flags == 0b01  # hash-based, unchecked: copying the layer's files changes nothing
    makefile = (LAYER / "Makefile").read_text(encoding="utf-8")
    assert "--compile $(RUNTIME_PYTHON)" in makefile and "RUNTIME_PYTHON ?= 3.12" in makefile


def test_bytecode_of_another_python_than_the_runtime_is_left_out(tmp_path: Path) -> None:
    other = "3.99"
    done = subprocess.run(
        [sys.executable, str(LAYER / "build_layer.py"), "--compile", other, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"bytecode left out: this is Python {sys.version_info.major}." in done.stdout
    assert (tmp_path / "gpupool" / "handlers" / "aws_lambda.py").is_file()
    assert not list(tmp_path.rglob("*.pyc"))


def _scratch_copy(tmp_path: Path) -> Path:
    """The layer folder alone, as SAM copies it before running the Makefile."""
    scratch = tmp_path / "scratch" / "GpupoolLayer"
    shutil.copytree(LAYER, scratch, ignore=shutil.ignore_patterns("__pycache__"))
    return scratch


def test_the_build_needs_nothing_outside_the_layer_folder(tmp_path: Path) -> None:
    scratch = _scratch_copy(tmp_path)
    target = tmp_path / "artifacts" / "python"
    done = subprocess.run(
        [sys.executable, str(scratch / "build_layer.py"), str(target)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    in_checkout = _build(tmp_path / "from-checkout")
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()) == in_checkout


def test_a_stale_list_of_handler_modules_stops_the_build(tmp_path: Path) -> None:
    scratch = _scratch_copy(tmp_path)
    shutil.copytree(ROOT / "functions", tmp_path / "functions")  # beside it, as in a checkout
    (scratch / "handler_modules.txt").write_text("gpupool.handlers.fc\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(scratch / "build_layer.py"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "handler_modules.txt is stale: the handlers import ['gpupool.handlers.aws_lambda'" in done.stderr
