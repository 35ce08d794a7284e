"""The programs the tests run for real — kubectl, the control plane's components, helm, promtool,
sam and s — as `gpupool sandbox build` built or installed them: a missing one fails the test with
the command to run, never skips it (a fresh clone runs every test).

`program_path` only says where a program lives (safe at import time); `require_built` fails the
calling test when it is not there, and the `needs_kubectl` fixture (tests/conftest.py) does that
for kubectl.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupool.sandbox.cluster.build import BuildError, bin_dir, binary


def program_path(name: str) -> str:
    return str(bin_dir() / name)


def real_tool(name: str) -> Path:
    """The path of a real program, or the test fails with one line naming the command to run."""
    try:
        return binary(name)
    except BuildError as error:
        pytest.fail(f"this test runs the real {name}: {error}", pytrace=False)


def require_built(*names: str) -> None:
    try:
        for name in names:
            binary(name)
    except BuildError as error:
        pytest.fail(f"this test needs a built program: {error}", pytrace=False)
