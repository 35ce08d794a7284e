"""`gpupool agent run`: the node agent (NVML discovery, device plugin, VRAM and compute enforcement).

Must not: import the agent (grpc, kubernetes, pynvml, prometheus_client) before `run`, so
`gpupool --help` stays instant.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpupool.cli.errors import UserError

NAME = "agent"
HELP = "run the node agent on a GPU node: GPU discovery, device plugin, NVML limits enforcement, metrics"


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="agent_command", metavar="SUBCOMMAND")
    run = sub.add_parser("run", help="run until SIGTERM (stopped processes are always resumed on exit)")
    run.add_argument("--node", required=True, help="this node's name (the DaemonSet passes spec.nodeName)")
    run.add_argument("--kubeconfig", help="kubeconfig (default: the pod's in-cluster service account)")
    run.add_argument(
        "--nvml", default="real", help="'real' (nvidia-ml-py) or 'fake:FILE' (a simulated GPU; docs/agent.md)"
    )
    run.add_argument("--pool", help="pool of this node's GPUs (default: from its GPUNode's pool label)")
    run.add_argument("--compute-interval", type=float, default=0.1, help="seconds between compute ticks")
    run.add_argument("--memory-interval", type=float, default=0.5, help="seconds between VRAM samples")
    run.add_argument("--discovery-interval", type=float, default=5.0, help="seconds between discoveries")
    run.add_argument(
        "--vram-policy", choices=("kill", "evict"), default="kill", help="over vram-limit: (default kill)"
    )
    run.add_argument(
        "--vram-grace", type=int, default=2, help="samples over the limit before acting (default 2)"
    )
    run.add_argument(
        "--dry-run", action="store_true", help="report what would be done; signal and evict nothing"
    )
    run.add_argument("--metrics", default="0.0.0.0:9400", help="HOST:PORT for /metrics, or 'off'")
    run.add_argument(
        "--metrics-auth",
        default="token",
        help="who may read /metrics: 'token' (a bearer token TokenReview authenticates and RBAC allows"
        " get on /metrics; default) or 'none' (anyone: local runs only)",
    )
    run.add_argument(
        "--metrics-audience",
        action="append",
        default=None,
        metavar="AUDIENCE",
        help="accept only tokens made for this audience (repeatable; default: the API server's own)",
    )
    run.add_argument(
        "--device-plugin-dir",
        default="/var/lib/kubelet/device-plugins",
        help="kubelet device-plugins directory, or 'off' (default /var/lib/kubelet/device-plugins)",
    )
    run.add_argument(
        "--guardian-fifo",
        help="FIFO of the pod's guardian container (`gpupool agent guardian`), which outlives this one",
    )
    run.add_argument("--proc-root", default="/proc", help=argparse.SUPPRESS)
    guardian = sub.add_parser(
        "guardian", help="resume what a killed agent left stopped (the agent pod's second container)"
    )
    guardian.add_argument("--fifo", required=True, help="the FIFO the agent writes to (created if missing)")


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UserError(f"--metrics {text!r} must be HOST:PORT with a port in 0..65535, or 'off'")
    return host.strip("[]") or "0.0.0.0", int(port)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "agent_command", None) == "guardian":
        if not Path(args.fifo).parent.is_dir():
            raise UserError(f"--fifo {args.fifo}: no such directory")
        from gpupool_incluster.agent.guardian import main

        return main(["--fifo", args.fifo])
    if getattr(args, "agent_command", None) != "run":
        raise UserError("usage: gpupool agent run --node NAME [--kubeconfig FILE] [--nvml real|fake:FILE]")
    if args.kubeconfig is not None and not Path(args.kubeconfig).is_file():
        raise UserError(f"--kubeconfig {args.kubeconfig}: no such file")
    if args.nvml != "real" and not args.nvml.startswith("fake:"):
        raise UserError(f"--nvml {args.nvml!r} must be 'real' or 'fake:FILE'")
    if args.nvml.startswith("fake:") and not Path(args.nvml.removeprefix("fake:")).is_file():
        raise UserError(f"--nvml {args.nvml}: no such file")
    metrics = None if args.metrics == "off" else _listen(args.metrics)
    if args.metrics_auth not in ("token", "none"):
        raise UserError(f"--metrics-auth {args.metrics_auth!r} must be 'token' or 'none'")
    audiences = tuple(a.strip() for a in args.metrics_audience) if args.metrics_audience else None
    if audiences is not None and not all(audiences):
        raise UserError("--metrics-audience must not be empty")
    if audiences is not None and args.metrics_auth != "token":
        raise UserError("--metrics-audience needs --metrics-auth token")
    plugin_dir = None if args.device_plugin_dir == "off" else Path(args.device_plugin_dir)
    if plugin_dir is not None and not plugin_dir.is_dir():
        raise UserError(f"--device-plugin-dir {plugin_dir}: no such directory (or pass 'off')")
    from gpupool_incluster.agent.runner import AgentOptions
    from gpupool_incluster.agent.serve import ServeOptions, StartupError, serve

    try:
        options = AgentOptions(
            node=args.node,
            pool=args.pool,
            compute_interval_s=args.compute_interval,
            memory_interval_s=args.memory_interval,
            discovery_interval_s=args.discovery_interval,
            vram_policy=args.vram_policy,
            vram_grace_samples=args.vram_grace,
            dry_run=args.dry_run,
            guardian_fifo=Path(args.guardian_fifo) if args.guardian_fifo else None,
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if options.vram_grace_samples < 1:
        raise UserError(f"--vram-grace {options.vram_grace_samples} must be at least 1")
    try:
        serve(
            ServeOptions(
                agent=options,
                nvml=args.nvml,
                kubeconfig=args.kubeconfig,
                proc_root=Path(args.proc_root),
                metrics_host=metrics[0] if metrics else "0.0.0.0",
                metrics_port=metrics[1] if metrics else None,
                metrics_auth=args.metrics_auth,
                metrics_audiences=audiences,
                device_plugin_dir=plugin_dir,
            )
        )
    except StartupError as exc:
        raise UserError(str(exc)) from None
    return 0
