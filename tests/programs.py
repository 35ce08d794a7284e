"""The programs the tests run for real — kubectl and the control plane's components — as
`gpupool sandbox build` built them: a missing one fails the test with the command to run, never
skips it (a fresh clone runs every test).

`program_path` only says where a program lives (safe at import time); `require_built` fails the
calling test when it is not there, and the `needs_kubectl` fixture (tests/conftest.py) does that
for kubectl.
"""

from __future__ import annotations

import pytest

from gpupool.sandbox.cluster.build import BuildError, bin_dir, binary


def program_path(name: str) -> str:
    return str(bin_dir() / name)


def require_built(*names: str) -> None:
    try:
        for name in names:
            binary(name)
    except BuildError as error:
        pytest.fail(f"this test needs a built program: {error}", pytrace=False)
