"""Reads the catalog data bundled in this package.

Role: parse catalog YAML handed to it (`parse_catalog`), and read the two data files shipped
inside the package (`load_catalog`) through importlib.resources. Reading bundled package data is
static data, the same on every run, not I/O on user input — the one exception the core allows.

Must not: read any path a user names, reach the network, or cache anything but the bundled files.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml
from pydantic import ValidationError

from gpupool.core.catalog.model import CLOUDS, Catalog, Cloud

__all__ = ["CLOUDS", "CatalogError", "Cloud", "load_catalog", "parse_catalog"]

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
    data = resources.files("gpupool.core.catalog").joinpath(f"{cloud}.yaml").read_bytes()
    return parse_catalog(data)
