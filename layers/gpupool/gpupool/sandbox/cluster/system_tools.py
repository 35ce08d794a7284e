"""System programs the tests drive that no registry but Debian's ships: installed by
`gpupool sandbox build` when missing, so a new machine runs every test with none skipped.

Role: `tmux` (the `gpupool status --watch` test types into a real terminal). Installed with
`apt-get` when this runs as root on a Debian-like machine; otherwise one line saying what to install.

Must not: install anything that is already there, or anything but the packages named here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable

# program → the Debian package that ships it
PACKAGES: dict[str, str] = {"tmux": "tmux"}


class SystemToolError(Exception):
    """A system program that is missing and cannot be installed here; one line saying what to do."""


def ensure_system_tools(*, say: Callable[[str], None] = print) -> list[str]:
    """Install the missing programs' packages; the packages installed."""
    missing = sorted({package for program, package in PACKAGES.items() if shutil.which(program) is None})
    if not missing:
        return []
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        raise SystemToolError(
            f"{', '.join(missing)}: not installed, and this is not root on a machine with apt-get — "
            f"install {' '.join(missing)} with the system's package manager"
        )
    say(f"installing {', '.join(missing)} with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", *missing]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise SystemToolError(f"{' '.join(command[:2])} failed: {last[0][:300]}")
    return missing
