"""The docker double all three install guides share (the relay image: `docker login`, `buildx create`,
`buildx build --push`): no Docker daemon runs here, and the build's base image is on Docker Hub, which
no machine of the project reaches. It records what was pushed; the walk checks that every pod the real
`helm upgrade --install --wait` started runs a pushed image. Rules: install_doubles.py.

Must not: reach a network beyond 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from doubles_base import ROOT, Refused, flags_of

STDIN: dict[str, str] = {}  # standard input, read before the state is locked (install_doubles.main)


# ---- docker ------------------------------------------------------------------------------------
def docker(argv: list[str], state: dict[str, Any]) -> str:
    if argv[:2] == ["buildx", "create"]:
        flags, _ = flags_of(argv[2:], boolean=("--use",))
        if not flags.get("--use"):
            raise Refused("the guide builds with the builder it creates (--use)")
        state["buildx_builder"] = flags.get("--name", "builder")
        return state["buildx_builder"] + "\n"
    if argv[:1] == ["login"]:
        flags, positional = flags_of(argv[1:], boolean=("--password-stdin",))
        if not flags.get("--password-stdin") or not STDIN.get("text", "").strip():
            raise Refused("Error: Cannot perform an interactive login from a non TTY device")
        state.setdefault("registries", []).extend(positional)
        return "Login Succeeded\n"
    if argv[:2] == ["buildx", "build"]:
        flags, positional = flags_of(argv[2:], repeated=("-t", "--tag"), boolean=("--push", "--load"))
        if not state.get("buildx_builder"):
            raise Refused(
                "ERROR: Multi-platform build is not supported for the docker driver (create a buildx builder)"
            )
        (context,) = positional
        platforms = set(flags.get("--platform", "").split(","))
        if not {"linux/amd64", "linux/arm64"} <= platforms:
            raise Refused(f"the image must be built for linux/amd64 and linux/arm64, not {sorted(platforms)}")
        dockerfile = Path(flags.get("-f") or flags.get("--file") or "Dockerfile")
        if (
            dockerfile.resolve() != (ROOT / "incluster" / "Dockerfile").resolve()
            or not (Path(context) / "pyproject.toml").exists()
        ):
            raise Refused(
                "the relay image is built from incluster/Dockerfile with the repository root as context"
            )
        if not flags.get("--push"):
            raise Refused("a multi-platform image must be pushed (--push)")
        for tag in flags.get("-t", []) + flags.get("--tag", []):
            repository, _, _ = tag.rpartition(":")
            if ".dkr.ecr." in repository and repository not in state.get("ecr", {}):
                raise Refused(
                    f"ERROR: failed to push {tag}: repository does not exist"
                )  # ECR: create it first
            if repository.split("/", 1)[0] not in state.get("registries", []):
                raise Refused(f"ERROR: failed to push {tag}: no basic auth credentials")
            state.setdefault("pushed", []).append(tag)
        return "pushed\n"
    raise Refused(f"the docker double knows no `docker {' '.join(argv[:2])}`")
