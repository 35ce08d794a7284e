"""The sandbox's background process: `python -m gpupool.sandbox.daemon --dir D`.

Started by `gpupool sandbox up --background` in its own session; serves until SIGTERM
(`gpupool sandbox down`). Its output goes to D/sandbox.log.

Must not: be started by hand in normal use; the CLI checks for a running sandbox first.
"""

from __future__ import annotations

import argparse
import sys

from gpupool.sandbox.files import SandboxFiles
from gpupool.sandbox.lifecycle import SandboxError, SandboxInfo, run_foreground


def _announce(info: SandboxInfo) -> None:
    print(
        f"sandbox pid {info.pid}: Kubernetes API {info.kube_url}, EC2 {info.aws_url}, ECS {info.ecs_url}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpupool.sandbox.daemon")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--real", action="store_true")
    args = parser.parse_args(argv)
    try:
        run_foreground(SandboxFiles.at(args.dir), announce=_announce, real=args.real)
    except SandboxError as error:
        print(f"sandbox: {error}", file=sys.stderr, flush=True)
        return 1
    print("sandbox stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
