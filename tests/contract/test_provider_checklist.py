"""docs/CONTRIBUTING.md's checklist for a new cloud provider, walked for every cloud gpupool knows.

Covers: every cloud of the one cloud list (`gpupool.core.model.cloud.CLOUDS`) has each piece the
checklist names — its adapter package behind `service.ports.CloudProvider` (compute, request, error
table, wiring with credentials and secrets, live prices behind `service.pricing_ports.Pricing`),
its import contract, its catalog, its event intake, its
handler and three function entry points, its deployment template, its extra, its relay
authentication, its interfaces page and its sample events; the checklist here and the one in
CONTRIBUTING.md name the same pieces, and the counts of files stated there (the checklist's, and
each provider's today) are the counts walked here; and a provider that lacks any one piece fails
by that piece's name (each piece hidden in turn from a real provider), as does a cloud with
nothing at all.
"""

from __future__ import annotations

import importlib
import inspect
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import get_args

import pytest

from gpupool.adapters.cloud import ErrorKind
from gpupool.core.intake.caller import AUTH_MODES
from gpupool.core.model.cloud import CLOUDS
from gpupool.core.model.cluster import ComputingVendorType
from gpupool.service.ports import CloudProvider
from gpupool.service.pricing_ports import Pricing
from gpupool_incluster.relay.signing import AUTH_MODES as FORWARD_AUTH_MODES

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "gpupool" / "gpupool"
FUNCTIONS = ("launch", "bind", "compact")


@dataclass(frozen=True)
class Platform:
    """Where a cloud runs the functions: what its pieces outside the package are called."""

    handler: str  # gpupool.handlers.<handler>
    entry: str  # functions/<function>/<entry>
    template: str  # the deployment template at the repository's root
    http_auth: str  # the functions' own check of a relay call (GPUPOOL_HTTP_AUTH)
    forward_auth: str  # the relay's signature for that check (--forward-auth)
    signature: str | None = None  # gpupool.core.intake.<signature>: a platform signature computed here


PLATFORMS = {
    "aws": Platform("aws_lambda", "app.py", "template.yaml", "aws-iam", "sigv4"),
    "alibaba": Platform("fc", "index.py", "s.yaml", "fc-signature", "fc", signature="acs3"),
}

Importer = Callable[[str], ModuleType | None]


def real_import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        return None


@dataclass(frozen=True)
class Walk:
    """One cloud walked through the checklist, with the importer and file test it may be given."""

    cloud: str
    load: Importer
    exists: Callable[[Path], bool]

    def module(self, name: str) -> ModuleType | None:
        return self.load(
            f"gpupool.adapters.{self.cloud}.{name}" if name else f"gpupool.adapters.{self.cloud}"
        )

    @property
    def platform(self) -> Platform | None:
        return PLATFORMS.get(self.cloud)


def _package(walk: Walk) -> bool:
    found = walk.module("")
    return found is not None and bool((found.__doc__ or "").strip())


def _compute(walk: Walk) -> bool:
    found = walk.module("compute")
    if found is None:
        return False
    members = {name for name, _ in inspect.getmembers(CloudProvider) if not name.startswith("_")}
    classes = [c for _, c in inspect.getmembers(found, inspect.isclass) if c.__module__ == found.__name__]
    return any(
        getattr(c, "vendor", None) == walk.cloud and all(hasattr(c, m) for m in members) for c in classes
    )


def _request(walk: Walk) -> bool:
    return walk.module("request") is not None


def _errors(walk: Walk) -> bool:
    found = walk.module("errors")
    if found is None:
        return False
    table = getattr(found, "ERROR_TABLE", None)
    return (
        isinstance(table, dict)
        and {ErrorKind.CAPACITY, ErrorKind.THROTTLED, ErrorKind.PERMANENT} <= set(table.values())
        and callable(getattr(found, "classify", None))
        and callable(getattr(found, "translate", None))
    )


def _wiring(walk: Walk) -> bool:
    found = walk.module("wiring")
    return found is not None and all(
        callable(getattr(found, name, None))
        for name in (f"read_{walk.cloud}_environment", f"build_{walk.cloud}_deps", f"{walk.cloud}_secret")
    )


def _pricing(walk: Walk) -> bool:
    found = walk.module("pricing")
    if found is None:
        return False
    members = {name for name, _ in inspect.getmembers(Pricing) if not name.startswith("_")}
    classes = [c for _, c in inspect.getmembers(found, inspect.isclass) if c.__module__ == found.__name__]
    return any(all(hasattr(c, m) for m in members) and getattr(c, "api_names", ()) for c in classes)


def _import_contract(walk: Walk) -> bool:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for contract in pyproject["tool"]["importlinter"]["contracts"]:
        if contract.get("containers") == ["gpupool.adapters"]:
            top = [part.strip() for part in contract["layers"][0].split("|")]
            return walk.cloud in top
    return False


def _cloud_list(walk: Walk) -> bool:
    return walk.cloud in CLOUDS and walk.cloud in get_args(ComputingVendorType)


def _catalog(walk: Walk) -> bool:
    catalog = PACKAGE / "core" / "catalog"
    return walk.exists(catalog / f"{walk.cloud}.yaml") and walk.exists(catalog / f"{walk.cloud}.json")


def _intake(walk: Walk) -> bool:
    found = walk.load(f"gpupool.core.intake.{walk.cloud}")
    return found is not None and callable(getattr(found, f"intake_{walk.cloud}", None))


def _handler(walk: Walk) -> bool:
    if walk.platform is None:
        return False
    found = walk.load(f"gpupool.handlers.{walk.platform.handler}")
    return found is not None and callable(getattr(found, "make_handler", None))


def _functions(walk: Walk) -> bool:
    platform = walk.platform
    if platform is None:
        return False
    entries = [ROOT / "functions" / function / platform.entry for function in FUNCTIONS]
    return all(
        walk.exists(entry)
        and f"gpupool.handlers.{platform.handler} import" in entry.read_text(encoding="utf-8")
        for entry in entries
    )


def _deployment(walk: Walk) -> bool:
    platform = walk.platform
    if platform is None or not walk.exists(ROOT / platform.template):
        return False
    text = (ROOT / platform.template).read_text(encoding="utf-8")
    return all(f"functions/{function}" in text for function in FUNCTIONS)


def _extra(walk: Walk) -> bool:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return walk.cloud in pyproject["project"]["optional-dependencies"]


def _relay_auth(walk: Walk) -> bool:
    platform = walk.platform
    return (
        platform is not None
        and platform.http_auth in AUTH_MODES
        and platform.forward_auth in FORWARD_AUTH_MODES
    )


def _interfaces(walk: Walk) -> bool:
    return walk.exists(ROOT / "docs" / f"interfaces-{walk.cloud}.md")


def _events(walk: Walk) -> bool:
    folder = ROOT / "events" / walk.cloud
    return walk.exists(folder) and any(folder.glob("*.json"))


# The checklist, in CONTRIBUTING.md's order: (piece, check).
CHECKLIST: tuple[tuple[str, Callable[[Walk], bool]], ...] = (
    ("package", _package),
    ("compute", _compute),
    ("request", _request),
    ("errors", _errors),
    ("wiring", _wiring),
    ("pricing", _pricing),
    ("import contract", _import_contract),
    ("cloud list", _cloud_list),
    ("catalog", _catalog),
    ("intake", _intake),
    ("handler", _handler),
    ("functions", _functions),
    ("deployment", _deployment),
    ("extra", _extra),
    ("relay authentication", _relay_auth),
    ("interfaces", _interfaces),
    ("events", _events),
)


def missing_pieces(
    cloud: str, *, load: Importer = real_import, exists: Callable[[Path], bool] = Path.exists
) -> list[str]:
    """The checklist's pieces `cloud` lacks, by name (empty: a complete provider)."""
    walk = Walk(cloud, load, exists)
    return [name for name, check in CHECKLIST if not check(walk)]


def _contributing() -> str:
    return (ROOT / "docs" / "CONTRIBUTING.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_cloud_has_every_piece(cloud: str) -> None:
    assert missing_pieces(cloud) == []


def test_a_cloud_with_nothing_lacks_every_piece_by_name() -> None:
    assert "gcp" not in CLOUDS
    assert missing_pieces("gcp") == [name for name, _ in CHECKLIST]


def _hiding(hidden: str) -> Importer:
    def load(name: str) -> ModuleType | None:
        return None if name == hidden else real_import(name)

    return load


# A piece hidden from a real provider → (importer, file test) that hide it.
HIDE_MODULE = {
    "package": "gpupool.adapters.{cloud}",
    "compute": "gpupool.adapters.{cloud}.compute",
    "request": "gpupool.adapters.{cloud}.request",
    "errors": "gpupool.adapters.{cloud}.errors",
    "wiring": "gpupool.adapters.{cloud}.wiring",
    "pricing": "gpupool.adapters.{cloud}.pricing",
    "intake": "gpupool.core.intake.{cloud}",
}
HIDE_FILE = {
    "catalog": "{cloud}.json",
    "functions": "{entry}",
    "deployment": "{template}",
    "interfaces": "interfaces-{cloud}.md",
    "events": "{cloud}",
}


@pytest.mark.parametrize("cloud", CLOUDS)
@pytest.mark.parametrize("piece", sorted({*HIDE_MODULE, *HIDE_FILE, "handler"}))
def test_a_provider_lacking_a_piece_fails_by_its_name(cloud: str, piece: str) -> None:
    platform = PLATFORMS[cloud]
    if piece == "handler":
        load = _hiding(f"gpupool.handlers.{platform.handler}")
        assert "handler" in missing_pieces(cloud, load=load)
        return
    if piece in HIDE_MODULE:
        load = _hiding(HIDE_MODULE[piece].format(cloud=cloud))
        missing = missing_pieces(cloud, load=load)
    else:
        name = HIDE_FILE[piece].format(cloud=cloud, entry=platform.entry, template=platform.template)
        missing = missing_pieces(cloud, exists=lambda path: path.name != name and path.exists())
    assert piece in missing, missing


def test_contributing_lists_the_pieces_walked_here_and_their_file_count() -> None:
    text = _contributing()
    section = text[text.index("## Adding a cloud provider") :]
    listed = re.findall(r"^\d+\. \*\*([a-z ]+)\*\*", section, flags=re.MULTILINE)
    assert listed == [name for name, _ in CHECKLIST]
    stated = re.search(r"A provider is (\d+) files at least", section)
    assert stated is not None, "CONTRIBUTING.md states how many files a provider is"
    for cloud in CLOUDS:
        assert int(stated.group(1)) == len(provider_files(cloud)), sorted(provider_files(cloud))
        today = re.search(rf"`{cloud}`(?: is)? (\d+)", section)
        assert today is not None, f"CONTRIBUTING.md states how many files {cloud} is today"
        assert int(today.group(1)) == len(provider_files_today(cloud)), sorted(provider_files_today(cloud))


def provider_files_today(cloud: str) -> set[Path]:
    """The files `cloud`'s provider is now: the checklist's, every file of its package (the
    modules its SDK seam, credentials and secrets take), and its platform's signature module."""
    package = PACKAGE / "adapters" / cloud
    signature = PLATFORMS[cloud].signature
    return (
        provider_files(cloud)
        | {path for path in package.rglob("*") if path.is_file() and "__pycache__" not in path.parts}
        | ({PACKAGE / "core" / "intake" / f"{signature}.py"} if signature else set())
    )


def provider_files(cloud: str) -> set[Path]:
    """Every file the checklist has a provider own or edit, as they are for `cloud`."""
    platform = PLATFORMS[cloud]
    package = PACKAGE / "adapters" / cloud
    return {
        *(
            package / f"{name}.py"
            for name in ("__init__", "compute", "request", "errors", "wiring", "pricing")
        ),
        ROOT / "pyproject.toml",  # the import contract and the extra
        PACKAGE / "core" / "model" / "cloud.py",  # the cloud list
        PACKAGE / "core" / "catalog" / f"{cloud}.yaml",
        PACKAGE / "core" / "catalog" / f"{cloud}.json",
        PACKAGE / "core" / "intake" / f"{cloud}.py",
        PACKAGE / "handlers" / f"{platform.handler}.py",
        *(ROOT / "functions" / function / platform.entry for function in FUNCTIONS),
        ROOT / platform.template,
        PACKAGE / "core" / "intake" / "caller.py",  # the functions' relay authentication
        PACKAGE / "handlers" / "relay_auth.py",  # the functions' check of that mode
        ROOT / "incluster" / "gpupool_incluster" / "relay" / "signing.py",  # the relay's signature
        ROOT / "docs" / f"interfaces-{cloud}.md",
    }


@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_files_counted_exist(cloud: str) -> None:
    assert [path for path in sorted(provider_files_today(cloud)) if not path.exists()] == []
