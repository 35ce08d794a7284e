"""Shared pytest configuration: the `needs_kubectl` fixture, which fails a test (never skips it)
when `gpupool sandbox build` has not built kubectl."""

from __future__ import annotations

import pytest

from tests.programs import require_built


@pytest.fixture
def needs_kubectl() -> None:
    require_built("kubectl")
