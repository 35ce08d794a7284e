"""GPU instance catalog: the types each cloud sells, their FP16 TFLOPS and VRAM, and regional prices.

Must not: choose offerings (see `gpupool.core.planning.cheapest`) or read anything but its bundled data.
"""

from gpupool.core.catalog.loader import CatalogError, load_catalog, parse_catalog
from gpupool.core.catalog.model import (
    CAPACITY_TYPES,
    CapacityType,
    Catalog,
    InstanceType,
    Offering,
    PriceTable,
    RegionPrices,
)
from gpupool.core.model.cloud import CLOUDS, Cloud  # listed once, there

__all__ = [
    "CAPACITY_TYPES",
    "CLOUDS",
    "CapacityType",
    "Catalog",
    "CatalogError",
    "Cloud",
    "InstanceType",
    "Offering",
    "PriceTable",
    "RegionPrices",
    "load_catalog",
    "parse_catalog",
]
