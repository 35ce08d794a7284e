"""Project-wide gates: ruff, mypy --strict and the import-linter contracts must be clean, and no
product module may grow past the size at which it usually holds two concepts."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# Modules are sized by concept; past this many lines a module usually holds two (docs/CONTRIBUTING.md).
MODULE_LINE_LIMIT = 600
PRODUCT_TREES = ("layers/gpupool/gpupool", "incluster/gpupool_incluster")
GENERATED_SUFFIXES = ("_pb2.py", "_pb2_grpc.py")  # protoc's output, not ours to size


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


def _tool(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; install the project's dev extra")
    return found


def test_ruff_clean() -> None:
    result = _run(_tool("ruff"), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_clean() -> None:
    result = _run(_tool("mypy"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts_kept() -> None:
    result = _run(_tool("lint-imports"))
    assert result.returncode == 0, result.stdout + result.stderr


def contract_names(contracts: list[dict[str, object]]) -> set[str]:
    """Every module an import-linter contract names (layers within containers expanded), the
    acyclic-siblings contract left out: it names only ancestors and says nothing of where a package sits."""
    named: set[str] = set()
    for contract in contracts:
        if contract["type"] == "acyclic_siblings":
            continue
        containers = contract.get("containers") or [""]
        assert isinstance(containers, list)
        for key in ("layers", "modules", "source_modules", "forbidden_modules"):
            entries = contract.get(key) or []
            assert isinstance(entries, list)
            for entry in entries:
                for name in (part.strip() for part in str(entry).split("|")):
                    named |= {f"{c}.{name}" if c and key == "layers" else name for c in containers}
    return named


def test_every_product_package_is_in_an_import_contract() -> None:
    """Each package of gpupool and gpupool_incluster (every depth) is placed by a contract."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    named = contract_names(contracts)
    packages = {
        init.parent.relative_to((ROOT / tree).parent).as_posix().replace("/", ".")
        for tree in PRODUCT_TREES
        for init in (ROOT / tree).rglob("__init__.py")
    }
    roots = {Path(tree).name for tree in PRODUCT_TREES}  # named by root_packages
    missing = sorted(packages - named - roots)
    assert packages and not missing, f"packages no import-linter contract places: {missing}"
    acyclic = [c for c in contracts if c["type"] == "acyclic_siblings"]
    assert acyclic and set(acyclic[0]["ancestors"]) == roots, (
        "no package or file cycle: a contract for each root"
    )


def oversized_modules(root: Path, trees: tuple[str, ...] = PRODUCT_TREES) -> dict[str, int]:
    """Hand-written modules under `trees` (generated protobuf code excluded) with more physical
    lines than MODULE_LINE_LIMIT, by path relative to `root`."""
    modules = [
        path
        for tree in trees
        for path in sorted((root / tree).rglob("*.py"))
        if not path.name.endswith(GENERATED_SUFFIXES)
    ]
    assert modules, f"no modules under {trees} in {root}: has the layout moved?"
    sizes = {path.relative_to(root).as_posix(): len(path.read_bytes().splitlines()) for path in modules}
    return {name: lines for name, lines in sizes.items() if lines > MODULE_LINE_LIMIT}


def test_product_modules_sized_by_concept() -> None:
    oversized = oversized_modules(ROOT)
    assert not oversized, (
        f"product modules over {MODULE_LINE_LIMIT} lines usually hold two concepts; split them by "
        "concept (one class per concept, no mixins or helper bases to meet a line count): "
        + ", ".join(f"{name} ({lines} lines)" for name, lines in sorted(oversized.items()))
    )


def test_module_size_gate_flags_only_hand_written_modules_past_the_limit(tmp_path: Path) -> None:
    package = tmp_path / "pkg" / "sub"
    package.mkdir(parents=True)
    (package / "at_limit.py").write_text("x = 1\n" * MODULE_LINE_LIMIT)
    (package / "past_limit.py").write_text("x = 1\r\n" * (MODULE_LINE_LIMIT + 1))
    (package / "api_pb2.py").write_text("x = 1\n" * (MODULE_LINE_LIMIT * 2))
    (package / "notes.txt").write_text("x\n" * (MODULE_LINE_LIMIT * 2))
    assert oversized_modules(tmp_path, ("pkg",)) == {"pkg/sub/past_limit.py": MODULE_LINE_LIMIT + 1}
