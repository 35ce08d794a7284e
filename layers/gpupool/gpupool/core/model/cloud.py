"""The clouds gpupool launches in, listed once.

Role: `Cloud` (the type) and `CLOUDS` (in order: each with its adapter package
`gpupool.adapters.<cloud>`, its bundled catalog `core/catalog/<cloud>.yaml`, its intake and its
functions; docs/CONTRIBUTING.md lists what a new one adds). Every other list of clouds is derived
from this one.

Must not: import anything but the standard library, or hold behaviour.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["CLOUDS", "Cloud"]

Cloud = Literal["aws", "alibaba"]
CLOUDS: tuple[Cloud, ...] = get_args(Cloud)
