"""Which of gpupool's extras brings a missing module: the one line a partial install prints.

Role: `pip install 'gpupool[aws]'` then `gpupool demo` (which needs moto) must not end in a
traceback. The command's ModuleNotFoundError is turned into `this needs X, which the installed
extras do not bring: pip install 'gpupool[E]'`, E read from the installed distribution's own
metadata (its Requires-Dist lines with `extra == "E"`), so the answer follows pyproject.toml.

Must not: import anything optional, or guess an extra the metadata does not name.
"""

from __future__ import annotations

import re
from importlib import metadata

# Import name → distribution name, where they differ beyond `_` / `-`.
DISTRIBUTIONS = {
    "pynvml": "nvidia-ml-py",
    "grpc": "grpcio",
    "yaml": "PyYAML",
    "google": "protobuf",
}
# The extra named when several bring the module: the smallest that serves a user, dev last.
_PREFERENCE = ("aws", "alibaba", "cli", "incluster", "agent", "plot", "dev")
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?[^;]*(?:;(.*))?$")
_EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extras_bringing(module: str) -> list[str]:
    """gpupool's extras that require the distribution of top-level `module`, preferred first."""
    top = module.split(".")[0]
    wanted = _normalised(DISTRIBUTIONS.get(top, top))
    try:
        requires = metadata.requires("gpupool") or []
    except metadata.PackageNotFoundError:
        return []
    found: set[str] = set()
    for line in requires:
        match = _REQUIREMENT.match(line.strip())
        if match is None or _normalised(match.group(1)) != wanted:
            continue
        extra = _EXTRA.search(match.group(2) or "")
        if extra:
            found.add(extra.group(1))
    rank = {name: index for index, name in enumerate(_PREFERENCE)}
    return sorted(found, key=lambda name: (rank.get(name, len(rank) - 1), name))


def missing_module_message(error: ModuleNotFoundError) -> str | None:
    """The one line for a missing third-party module; None when it is gpupool's own (a real bug)."""
    name = error.name or ""
    if not name or name.split(".")[0] in ("gpupool", "gpupool_incluster"):
        return None
    top = name.split(".")[0]
    extras = extras_bringing(top)
    if not extras:
        return f"this needs the Python module {top!r}, which is not installed"
    return (
        f"this needs {DISTRIBUTIONS.get(top, top)}, which the installed extras do not bring: "
        f"pip install 'gpupool[{extras[0]}]'"
        + (f" (also in {', '.join(extras[1:])})" if len(extras) > 1 else "")
    )
