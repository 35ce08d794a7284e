"""The real tools the tests run (helm, promtool, sam, s — `gpupool sandbox build` puts them in its
cache): the path of one, or the test fails with one line naming the command that installs it. Never
a skip: a fresh clone runs every test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupool.sandbox.cluster.build import BuildError
from gpupool.sandbox.cluster.tools import program


def real_tool(name: str) -> Path:
    try:
        return program(name)
    except BuildError as error:
        pytest.fail(f"this test runs the real {name}: {error}", pytrace=False)
