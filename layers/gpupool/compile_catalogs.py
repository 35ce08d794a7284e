"""Write `gpupool/core/catalog/{cloud}.json` from `{cloud}.yaml`: the bundled catalogs as JSON.

Role: the one way the shipped JSON catalogs are made (never by hand). The YAML is the catalog's
source, written by hand with every figure's source beside it; `load_catalog` reads the JSON,
which parses in a fraction of libyaml's time on every cold start. Run it after editing a
catalog (tests/unit/catalog/test_compiled_catalogs.py fails until the JSON matches the YAML):

    .venv/bin/python layers/gpupool/compile_catalogs.py

Must not: run in the layer build (the files are committed and tested) or reach the network.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

import yaml

from gpupool.core.catalog import CLOUDS, Cloud, parse_catalog
from gpupool.core.catalog.loader import compiled_name


def compiled(cloud: Cloud) -> str:
    """The JSON text `cloud`'s YAML catalog compiles to (validated first: a broken catalog is
    reported, not shipped)."""
    source = resources.files("gpupool.core.catalog").joinpath(f"{cloud}.yaml").read_bytes()
    parse_catalog(source)
    return json.dumps(yaml.safe_load(source), ensure_ascii=False, separators=(",", ":")) + "\n"


def main() -> int:
    folder = Path(str(resources.files("gpupool.core.catalog")))
    for cloud in CLOUDS:
        target = folder / compiled_name(cloud)
        target.write_text(compiled(cloud), encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
