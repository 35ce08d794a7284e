"""`gpupool sandbox up|down|status`: a local Kubernetes API server and EC2 (moto) to try
gpupool and run its tests without a cloud or a cluster.

Must not: hold sandbox logic; it parses flags, calls `gpupool.sandbox.lifecycle`, and prints.
"""

from __future__ import annotations

import argparse
from typing import Any

from gpupool.cli.errors import UserError

NAME = "sandbox"
HELP = "run a local Kubernetes API server and EC2 endpoint (moto) for trying gpupool"


def register(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = actions.add_parser("up", help="start the sandbox (foreground until Ctrl-C, or --background)")
    down = actions.add_parser("down", help="stop a background sandbox")
    state = actions.add_parser("status", help="say whether a sandbox runs and where")
    build = actions.add_parser(
        "build",
        help="build the real control plane and the real tools the tests run (needs Go ≥ 1.26, npm)",
        description="Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, KWOK, "
        "Karpenter, helm and promtool from the Go modules pinned under tests/cluster/, and install "
        "sam (PyPI) and s (npm) at their pinned versions; does nothing for a component whose pinned "
        "build is already in the cache.",
    )
    build.add_argument("components", nargs="*", metavar="COMPONENT", help="only these (default: all)")
    for sub in (up, down, state):
        sub.add_argument("--dir", default=None, help="sandbox directory (default: .gpupool/sandbox)")
    up.add_argument("--background", action="store_true", help="detach and return once the servers answer")
    up.add_argument(
        "--real",
        action="store_true",
        help="the real control plane (kube-apiserver, etcd, controllers, kube-scheduler, KWOK, Karpenter) "
        "instead of the embedded API server; builds what is missing first (`gpupool sandbox build`)",
    )


def _usage(info: Any) -> str:
    files = info.files
    return "\n".join(
        [
            f"gpupool sandbox is up in {files.root} (pid {info.pid})",
            f"  Kubernetes API  {info.kube_url}   kubeconfig: {files.kubeconfig}"
            + ("   (real: kube-apiserver, KWOK nodes, Karpenter)" if info.real else ""),
            f"  EC2 (moto)      {info.aws_url}   region us-east-1, credentials testing/testing",
            f"  ECS (sandbox)   {info.ecs_url}   region cn-hangzhou (GPUPOOL_ECS_ENDPOINT in the env file)",
            "Use it from a shell:",
            f"  set -a; . {files.env}; set +a",
            "  kubectl get gpupools",
            f"Stop it with: gpupool sandbox down --dir {files.root}",
        ]
    )


def _build(components: list[str]) -> int:
    from gpupool.sandbox.cluster import tools
    from gpupool.sandbox.cluster.build import COMPONENTS, BuildError, build

    def say(line: str) -> None:
        print(line, flush=True)

    known = [component.name for component in COMPONENTS] + [tool.name for tool in tools.TOOLS]
    unknown = [name for name in components if name not in known]
    if unknown:
        raise UserError(f"unknown component {', '.join(unknown)}; known: {', '.join(known)}", exit_code=2)
    go_programs = [name for name in components if name not in {tool.name for tool in tools.TOOLS}]
    try:
        if go_programs or not components:
            build(go_programs, say=say)
        tools.install(components, say=say)
    except BuildError as error:
        raise UserError(str(error), exit_code=1) from error
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "build":
        return _build(args.components)
    from gpupool.sandbox import lifecycle as sandbox
    from gpupool.sandbox.files import SandboxFiles

    files = SandboxFiles.at(args.dir)
    if files.root.exists() and not files.root.is_dir():
        raise UserError(f"--dir {files.root} exists and is not a directory")
    try:
        if args.action == "up":
            if args.real:
                _build([])
            if args.background:
                print(_usage(sandbox.start_background(files, real=args.real)))
            else:
                sandbox.run_foreground(
                    files,
                    announce=lambda info: print(_usage(info) + "  (or press Ctrl-C)", flush=True),
                    real=args.real,
                )
                print("gpupool sandbox stopped")
            return 0
        if args.action == "down":
            pid = sandbox.stop(files)
            print(f"gpupool sandbox in {files.root} stopped (pid {pid})")
            return 0
        found = sandbox.status(files)
        if found.running is not None:
            print(_usage(found.running))
            return 0
        if found.starting_pid is not None:
            print(f"a sandbox is starting in {files.root} (pid {found.starting_pid})")
        elif found.stale_pid is not None:
            print(
                f"no sandbox runs in {files.root} (stale pid file names pid {found.stale_pid}, which is gone)"
            )
        else:
            print(f"no sandbox runs in {files.root}")
        return 1
    except sandbox.SandboxError as error:
        raise UserError(str(error)) from error
    except OSError as error:  # unwritable directory, no free port, ...
        raise UserError(f"sandbox in {files.root}: {error.strerror or error}") from error
