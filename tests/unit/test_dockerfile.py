"""incluster/Dockerfile, read statically (no Docker here): multi-stage on a slim Python, installs only
the `incluster` and `agent` extras (the node agent's DaemonSet runs the same image), copies only
paths that exist and that its .dockerignore lets into the build context, builds the same for every
platform (no build-platform stage, no machine-specific wheel), runs as a numeric non-root user (the
chart's runAsNonRoot needs a number), and starts `gpupool`.
"""

from __future__ import annotations

import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINES = [
    line.strip()
    for line in (ROOT / "incluster" / "Dockerfile").read_text().replace("\\\n", " ").splitlines()
    if line.strip() and not line.strip().startswith("#")
]


def _instructions(name: str) -> list[str]:
    return [line.split(None, 1)[1] for line in LINES if line.split(None, 1)[0].upper() == name]


def test_two_stages_on_a_slim_python() -> None:
    bases = _instructions("FROM")
    assert len(bases) == 2 and all("-slim" in base for base in bases)
    assert bases[0].endswith(" AS build") and "--from=build" in " ".join(_instructions("COPY"))


def test_it_installs_only_the_incluster_and_agent_extras_from_paths_that_exist() -> None:
    (run,) = [r for r in _instructions("RUN") if "pip install" in r]
    assert '".[incluster,agent]"' in run and "agent run --help" in run
    assert "[dev]" not in run and "[aws]" not in run
    for copy in _instructions("COPY"):
        if copy.startswith("--from"):
            continue
        *sources, _ = shlex.split(copy)
        for source in sources:
            assert (ROOT / source).exists(), source


def test_it_runs_gpupool_as_a_numeric_non_root_user() -> None:
    (user,) = _instructions("USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    assert _instructions("ENTRYPOINT") == ['["gpupool"]']
    assert _instructions("CMD") == ['["relay", "serve"]']


def _context_patterns() -> list[str]:
    ignore = (ROOT / "incluster" / "Dockerfile.dockerignore").read_text().splitlines()
    return [line.strip() for line in ignore if line.strip() and not line.startswith("#")]


def test_every_copied_path_is_let_into_the_build_context() -> None:
    patterns = _context_patterns()
    assert patterns[0] == "*"  # everything else stays out
    allowed = [p[1:].removesuffix("/**") for p in patterns if p.startswith("!")]
    for copy in _instructions("COPY"):
        if copy.startswith("--from"):
            continue
        *sources, _ = shlex.split(copy)
        for source in sources:
            assert source.rstrip("/") in allowed, f"{source} is ignored by Dockerfile.dockerignore"


def test_the_build_is_the_same_for_every_platform() -> None:
    text = " ".join(LINES)
    assert "BUILDPLATFORM" not in text  # the venv holds target-platform wheels: build it on the target
    (run,) = [r for r in _instructions("RUN") if "pip install" in r]
    assert "--platform" not in run and "--only-binary" not in run
    assert all(base.split()[0].startswith("python:${PYTHON_VERSION}-slim") for base in _instructions("FROM"))
