"""Install the command-line tools the install guides name that are not Go programs: `gpupool sandbox build`.

Role: AWS SAM CLI (`sam`, from PyPI) and Serverless Devs (`s`, from npm) are installed, each at a
pinned version, into the same per-machine cache as the control plane's binaries (`build.cache_dir()`):
`sam` into a virtual environment of its own (aws-sam-cli pins old boto3 and click, which must not
meet gpupool's), `s` into an npm prefix of its own. Each gets a link in `build.bin_dir()`, where the
tests look for every real tool, and a stamp (the version and the interpreter it runs on) so a second
run does nothing. A failed or half-done install leaves no link and no stamp, so it is never found.

Must not: download anything but the pinned packages through pip and npm as the machine has them
configured, or touch any environment but its own folders under the cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpupool.sandbox.cluster.build import BuildError, bin_dir, cache_dir


@dataclass(frozen=True)
class Tool:
    """One command-line tool installed from a package registry."""

    name: str  # the command, and the name of its link in bin_dir()
    registry: str  # "pypi" or "npm"
    package: str
    version: str


TOOLS: tuple[Tool, ...] = (
    Tool("sam", "pypi", "aws-sam-cli", "1.170.0"),
    Tool("s", "npm", "@serverless-devs/s", "3.1.10"),
)


def _home(tool: Tool) -> Path:
    return cache_dir() / "tools" / tool.name


def _stamp_file(tool: Tool) -> Path:
    return cache_dir() / "stamps" / f"tool-{tool.name}.json"


def _runtime(tool: Tool) -> str:
    """What the installed tool runs on: a change of it means a new install."""
    if tool.registry == "pypi":
        return f"python {sys.version_info.major}.{sys.version_info.minor}"
    node = shutil.which("node")
    if node is None:
        raise BuildError(
            f"{tool.name}: node is not on PATH — {tool.package} runs on Node.js (install nodejs and npm)"
        )
    found = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    return f"node {found.stdout.strip()}"


def _stamp(tool: Tool) -> dict[str, str]:
    return {"package": tool.package, "version": tool.version, "runtime": _runtime(tool)}


def _entry(tool: Tool, home: Path) -> Path:
    """The tool's executable inside its install folder."""
    if tool.registry == "pypi":
        return home / "bin" / tool.name
    return home / "node_modules" / ".bin" / tool.name


def is_current(tool: Tool) -> bool:
    try:
        recorded = json.loads(_stamp_file(tool).read_text())
    except (FileNotFoundError, ValueError):
        return False
    link = bin_dir() / tool.name
    return recorded == _stamp(tool) and link.exists() and os.access(link, os.X_OK)


def _commands(tool: Tool, home: Path) -> list[list[str]]:
    if tool.registry == "pypi":
        pip = [str(home / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        return [[sys.executable, "-m", "venv", str(home)], [*pip, f"{tool.package}=={tool.version}"]]
    npm = shutil.which("npm")
    if npm is None:
        raise BuildError(
            f"{tool.name}: npm is not on PATH — {tool.package} installs from npm (install nodejs and npm)"
        )
    quiet = ["--no-audit", "--no-fund", "--loglevel=error"]
    return [[npm, "install", "--prefix", str(home), *quiet, f"{tool.package}@{tool.version}"]]


def install_tool(tool: Tool, *, say: Callable[[str], None] = print) -> bool:
    """Install one tool unless its stamp matches; True when it installed."""
    if is_current(tool):
        say(f"{tool.name} {tool.version}: up to date ({tool.package})")
        return False
    log = cache_dir() / "logs" / f"tool-{tool.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    home, link = _home(tool), bin_dir() / tool.name
    # A venv cannot be moved once made, so the install happens in place: the link and the stamp go
    # first, and come back only when the install succeeded — a half install is never found.
    link.unlink(missing_ok=True)
    _stamp_file(tool).unlink(missing_ok=True)
    shutil.rmtree(home, ignore_errors=True)
    home.parent.mkdir(parents=True, exist_ok=True)
    say(f"{tool.name} {tool.version}: installing {tool.package} from {tool.registry} (log: {log})")
    started = time.monotonic()
    with log.open("w") as out:
        for command in _commands(tool, home):
            out.write(f"$ {' '.join(command)}\n")
            out.flush()
            if subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False).returncode != 0:
                raise BuildError(f"{tool.name}: `{' '.join(command[:4])} …` failed — see {log}")
    entry = _entry(tool, home)
    if not entry.is_file():
        raise BuildError(f"{tool.name}: {entry} is missing after the install — see {log}")
    bin_dir().mkdir(parents=True, exist_ok=True)
    link.symlink_to(entry)
    _stamp_file(tool).parent.mkdir(parents=True, exist_ok=True)
    _stamp_file(tool).write_text(json.dumps(_stamp(tool), indent=2) + "\n")
    say(f"{tool.name} {tool.version}: installed in {time.monotonic() - started:.0f} s")
    return True


def select(names: Sequence[str]) -> tuple[Tool, ...]:
    known = {tool.name: tool for tool in TOOLS}
    return tuple(known[name] for name in names if name in known) if names else TOOLS


def install(names: Sequence[str] = (), *, say: Callable[[str], None] = print) -> int:
    """Install what is missing or stale among `names` (every tool when empty); how many installed."""
    return sum(install_tool(tool, say=say) for tool in select(names))
