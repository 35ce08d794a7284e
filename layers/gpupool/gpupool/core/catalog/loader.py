"""Reads the catalog data bundled in this package.

Role: parse catalog YAML handed to it (`parse_catalog`), and read the catalogs shipped inside
the package (`load_catalog`) through importlib.resources. Reading bundled package data is static
data, the same on every run, not I/O on user input — the one exception the core allows.

Each catalog is written by hand as `{cloud}.yaml`, every figure beside its source, and shipped
also as `{cloud}.json`, the same data as JSON, which `load_catalog` reads: every cold start of a
launch reads its catalog, and JSON parses in a fraction of the time libyaml takes.
`layers/gpupool/compile_catalogs.py` writes the JSON from the YAML; a test fails while they differ.

Must not: read any path a user names, reach the network, or cache anything but the bundled files.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

import yaml
from pydantic import ValidationError

from gpupool.core.catalog.model import Catalog
from gpupool.core.model.cloud import CLOUDS, Cloud

__all__ = ["CLOUDS", "CatalogError", "Cloud", "compiled_name", "load_catalog", "parse_catalog"]

# libyaml's scanner and parser when the PyYAML build has them (the same safe constructors and
# resolver run either way): a function reads its catalog on every cold start, ~10× faster so.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CatalogError(ValueError):
    """Catalog data that does not parse or validate."""


def parse_catalog(text: str | bytes) -> Catalog:
    """Validate catalog YAML; raise CatalogError naming the first problem."""
    try:
        raw = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise CatalogError(f"catalog is not valid YAML: {exc}") from None
    return _validated(raw)


def _validated(raw: object) -> Catalog:
    try:
        return Catalog.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CatalogError(f"invalid catalog at {where}: {first['msg']}") from None


@cache
def load_catalog(cloud: Cloud) -> Catalog:
    """The catalog bundled with gpupool for one cloud."""
    if cloud not in CLOUDS:
        raise CatalogError(f"unknown cloud {cloud!r}; expected one of {', '.join(CLOUDS)}")
    data = resources.files("gpupool.core.catalog").joinpath(compiled_name(cloud)).read_bytes()
    return _validated(json.loads(data))


def compiled_name(cloud: Cloud) -> str:
    """The file holding `cloud`'s bundled catalog as JSON, beside its YAML source."""
    return f"{cloud}.json"
