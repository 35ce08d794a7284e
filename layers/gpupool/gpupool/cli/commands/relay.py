"""`gpupool relay serve`: run the relay (extender, pod webhook, simulate/allocation API) against a cluster.

Must not: import the relay (Starlette, uvicorn, kubernetes) before `run`, so `gpupool --help` stays instant.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpupool.cli.errors import UserError

NAME = "relay"
HELP = "run the in-cluster relay: scheduler extender, pod webhook, simulate-schedule and allocation API"

MODES = ("CompactFirst", "LowLoadFirst", "NodeCompactGPULowLoad", "FragmentationAware")


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="relay_command", metavar="SUBCOMMAND")
    serve = sub.add_parser("serve", help="serve HTTPS (or HTTP with --insecure-http) until interrupted")
    serve.add_argument(
        "--kubeconfig",
        help="kubeconfig of the cluster to watch (default: the pod's in-cluster service account)",
    )
    serve.add_argument("--listen", default="0.0.0.0:8443", help="HOST:PORT (default 0.0.0.0:8443)")
    serve.add_argument("--insecure-http", action="store_true", help="serve plain HTTP (tests, loopback only)")
    serve.add_argument("--tls-cert", help="PEM certificate (default: a generated self-signed one)")
    serve.add_argument("--tls-key", help="PEM private key for --tls-cert")
    serve.add_argument("--default-pool", default="", help="pool for pods without tensor-fusion.ai/gpupool")
    serve.add_argument("--placement-mode", choices=MODES, default="NodeCompactGPULowLoad")
    serve.add_argument("--vram-weight", type=float, default=0.7)
    serve.add_argument("--tflops-weight", type=float, default=0.3)
    serve.add_argument("--max-worker-per-node", type=int, default=256)
    serve.add_argument(
        "--progressive-migration",
        action="store_true",
        help="route native nvidia.com/gpu pods to tensor-fusion-scheduler (production guide step 5)",
    )


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--listen {text!r} must be HOST:PORT with a port in 1..65535")
    return host.strip("[]") or "0.0.0.0", int(port)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "relay_command", None) != "serve":
        raise UserError("usage: gpupool relay serve [--kubeconfig FILE] --listen HOST:PORT [--insecure-http]")
    host, port = _listen(args.listen)
    if args.kubeconfig is not None and not Path(args.kubeconfig).is_file():
        raise UserError(f"--kubeconfig {args.kubeconfig}: no such file")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise UserError("--tls-cert and --tls-key go together")
    if args.insecure_http and args.tls_cert:
        raise UserError("--insecure-http and --tls-cert exclude each other")
    from gpupool.core.allocator import PlacementMode, PlacementPolicy

    try:
        policy = PlacementPolicy(
            mode=PlacementMode(args.placement_mode),
            vram_weight=args.vram_weight,
            tflops_weight=args.tflops_weight,
            max_worker_per_node=args.max_worker_per_node,
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    from gpupool_incluster.relay.hub import HubSettings
    from gpupool_incluster.relay.serve import RelayOptions, serve

    settings = HubSettings(
        policy=policy, default_pool=args.default_pool, progressive_migration=args.progressive_migration
    )
    serve(
        RelayOptions(
            kubeconfig=args.kubeconfig,
            host=host,
            port=port,
            insecure_http=args.insecure_http,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            settings=settings,
        )
    )
    return 0
