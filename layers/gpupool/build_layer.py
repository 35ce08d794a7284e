"""Build the Lambda layer's gpupool package: only the modules the functions import, nothing else.

Role: SAM builds the layer with `BuildMethod: makefile` (see `Makefile`); the Makefile installs
`requirements.txt` for the Lambda platform and runs this script, which copies into
`<target>/gpupool/` the closure of gpupool modules the handlers import — found by reading every
`import` statement that runs (module level and inside functions, so the lazy imports count — the
shared handler's service entry points among them — but not the type checker's imports under
`if TYPE_CHECKING:`, save the names a lazily resolving package such as `gpupool.core.model` hands
out) starting from the modules the handlers import — plus the
data files of the packages it keeps (the bundled catalogs, the botocore cut; JSON written without
indentation). So the embedded API server
(`gpupool.sandbox`), the simulations (`gpupool.simulation`), the test doubles
(`gpupool.testing`), the CLI (`gpupool.cli`), examples and anything only tests or benchmarks use
never ship.

The handlers live in `functions/`, outside this folder, and SAM runs the Makefile on a scratch copy
of this folder alone (unless `--build-in-source`). So the modules the handlers import are listed in
`handler_modules.txt` here, and the build starts from that list; where `functions/` is beside it (a
checkout, the tests), the build first checks the list still says what the handlers import and stops
naming the difference when it does not.

With `--prune` (the Makefile passes it) it also removes installed dependencies the
functions never import (`PRUNED`), and fails if anything left imports them. With `--compile X.Y` (the
Makefile passes the runtime's 3.12) it byte-compiles the package it wrote, checked by hash, not
timestamp — but only when the interpreter running it is Python X.Y: a layer is read-only, so modules
shipped as source alone are compiled again at every cold start (~0.2 s for the functions' ~250
modules), while a .pyc of another Python version is never used and only weighs on the zip. With
another Python (a machine without python3.12) the bytecode is left out, and the build says so.
`python build_layer.py TARGET` builds; `--list` prints the modules it would ship.

Must not: import gpupool (it reads source files only) or reach the network (the Makefile's pip
does that).
"""

from __future__ import annotations

import argparse
import ast
import compileall
import json
import py_compile
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "gpupool"
FUNCTIONS = HERE.parents[1] / "functions"
HANDLER_MODULES = HERE / "handler_modules.txt"
DATA_SUFFIXES = (".yaml", ".json", ".csv")
# Installed dependencies the functions never import: the kubernetes client's asyncio twin (about
# 70 MB) and the aiohttp stack only it needs. `prune` removes them and then fails the build if
# anything left still imports what it removed.
PRUNED = (
    "kubernetes/aio",
    "aiohttp",
    "aiohttp_retry",
    "aiohappyeyeballs",
    "aiosignal",
    "frozenlist",
    "multidict",
    "propcache",
    "yarl",
)
_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.MULTILINE)


def module_file(name: str) -> Path | None:
    """The source file of a gpupool module or package (None when `name` is not a module)."""
    parts = name.split(".")[1:]
    base = PACKAGE.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _typing_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): imports a type
    checker reads and the runtime never runs."""
    blocks = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name | ast.Attribute)
        and (node.test.id if isinstance(node.test, ast.Name) else node.test.attr) == "TYPE_CHECKING"
    ]
    return {id(inner) for block in blocks for statement in block.body for inner in ast.walk(statement)}


def _gpupool_imports(tree: ast.Module, *, typing_only: bool) -> list[ast.Import | ast.ImportFrom]:
    """The statements of `tree` importing gpupool: those under `if TYPE_CHECKING:` alone, or the rest."""
    skipped = _typing_only(tree)
    return [
        node
        for node in ast.walk(tree)
        if (id(node) in skipped) == typing_only
        and (
            (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "gpupool" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gpupool")
        )
    ]


def _lazy_names(package: str) -> dict[str, str]:
    """A package that resolves its names on first use (PEP 562: `gpupool.core.model`): each name its
    `if TYPE_CHECKING:` block imports, and the module that defines it."""
    path = module_file(package)
    if path is None or path.name != "__init__.py":
        return {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: node.module
        for node in _gpupool_imports(tree, typing_only=True)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def imported_modules(path: Path) -> set[str]:
    """Every gpupool module `path` imports when it runs, at module level or inside functions.

    Imports under `if TYPE_CHECKING:` never run and are not followed, with one exception: a package
    that resolves its names on first use from the modules its TYPE_CHECKING block names. Importing
    a name from it follows that name's module, and importing the package itself follows them all
    (attribute access may ask for any)."""
    found: set[str] = set()
    for node in _gpupool_imports(ast.parse(path.read_text(encoding="utf-8")), typing_only=False):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found |= {alias.name, *_lazy_names(alias.name).values()}
            continue
        assert node.module is not None
        lazy = _lazy_names(node.module)
        found.add(node.module)
        for alias in node.names:
            submodule = f"{node.module}.{alias.name}"  # `from pkg import module`
            if module_file(submodule) is not None:
                found |= {submodule, *_lazy_names(submodule).values()}
            elif alias.name in lazy:
                found.add(lazy[alias.name])
    return {name for name in found if module_file(name) is not None}


def closure(roots: set[str]) -> set[str]:
    """The roots, everything they import transitively, and every package on the way."""
    todo, seen = list(roots), set[str]()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages
        path = module_file(name)
        if path is not None:
            todo.extend(imported_modules(path) - seen)
    return seen


def handler_imports() -> set[str]:
    """The gpupool modules `functions/*/*.py` import (read from a checkout)."""
    roots: set[str] = set()
    for handler in sorted(FUNCTIONS.glob("*/*.py")):
        roots |= imported_modules(handler)
    return roots


def listed_handler_modules() -> set[str]:
    """handler_modules.txt: one module a line, `#` comments."""
    lines = HANDLER_MODULES.read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def roots() -> set[str]:
    """The modules the closure starts from: the list, checked against `functions/` where it exists."""
    listed = listed_handler_modules()
    if FUNCTIONS.is_dir():
        found = handler_imports()
        if found != listed:
            raise SystemExit(
                f"{HANDLER_MODULES.name} is stale: the handlers import {sorted(found)}, it lists "
                f"{sorted(listed)} — write the handlers' list into it"
            )
    return listed


def shipped_modules() -> set[str]:
    return closure(roots())


def _data_files(folder: Path) -> list[Path]:
    """A package folder's data files, less the sources of compiled ones: a YAML file with a JSON
    twin (the catalogs, which the functions read as JSON; see compile_catalogs.py)."""
    files = [path for path in sorted(folder.iterdir()) if path.suffix in DATA_SUFFIXES]
    return [path for path in files if not (path.suffix == ".yaml" and path.with_suffix(".json").exists())]


def _write_compact_json(source: Path, destination: Path) -> None:
    """The same JSON without the indentation that keeps the source readable in a diff (the
    readers parse it: a third of the botocore cut is whitespace)."""
    loaded = json.loads(source.read_text(encoding="utf-8"))
    destination.write_text(json.dumps(loaded, separators=(",", ":"), ensure_ascii=False), encoding="utf-8")


def build(target: Path) -> list[Path]:
    """Copy the shipped modules and their packages' data files under `target/gpupool`."""
    written: list[Path] = []
    for name in sorted(shipped_modules()):
        source = module_file(name)
        assert source is not None
        for path in [source, *_data_files(source.parent)]:
            destination = target / path.relative_to(HERE)
            if destination.exists():
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix == ".json":
                _write_compact_json(path, destination)
            else:
                shutil.copy2(path, destination)
            written.append(destination)
    typed = target / "gpupool" / "py.typed"
    shutil.copy2(PACKAGE / "py.typed", typed)
    written.append(typed)
    return written


def compile_package(target: Path, runtime: str) -> str:
    """Byte-compile `target/gpupool` (hash-checked pycs) when this is Python `runtime` ("3.12");
    a line saying what was done."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if here != runtime:
        return (
            f"bytecode left out: this is Python {here}, the runtime's is {runtime} "
            "(its .pyc would never be used); run the build with that Python to ship bytecode"
        )
    package = target / "gpupool"
    ok = compileall.compile_dir(
        str(package), quiet=1, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )
    if not ok:
        raise SystemExit(f"byte-compiling {package} failed")
    return (
        f"byte-compiled {sum(1 for _ in package.rglob('*.pyc'))} modules with Python {sys.version.split()[0]}"
    )


def prune(target: Path) -> list[str]:
    """Remove the PRUNED packages; raise when a file left behind imports a removed module.
    Returns the removed module prefixes."""
    removed: list[str] = []
    for relative in PRUNED:
        for path in (target / relative, *target.glob(f"{relative}-*.dist-info")):
            if path.is_dir():
                shutil.rmtree(path)
                if path.suffix != ".dist-info":
                    removed.append(relative.replace("/", "."))
    for source in target.rglob("*.py"):
        text = source.read_text(encoding="utf-8", errors="replace")
        for match in _IMPORT.finditer(text):
            name = match.group(1) or match.group(2)
            if any(name == gone or name.startswith(gone + ".") for gone in removed):
                raise SystemExit(f"{source.relative_to(target)} imports {name}, which the build removed")
    return removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "target", type=Path, nargs="?", help="where `gpupool/` is written (the layer's python/)"
    )
    parser.add_argument("--list", action="store_true", help="print the modules the layer ships")
    parser.add_argument(
        "--prune", action="store_true", help="also remove dependencies the functions never import"
    )
    parser.add_argument(
        "--compile",
        metavar="X.Y",
        help="byte-compile the package when this Python is X.Y, the functions' runtime (else leave it out)",
    )
    args = parser.parse_args(argv)
    if args.list or args.target is None:
        print("\n".join(sorted(shipped_modules())))
        return 0
    written = build(args.target)
    if args.prune:
        print(f"pruned: {', '.join(prune(args.target))}")
    if args.compile:
        print(compile_package(args.target, args.compile))
    print(f"gpupool layer package: {len(written)} files, {sum(p.stat().st_size for p in written):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
