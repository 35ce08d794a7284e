"""`gpupool relay serve`: run the relay (extender, pod webhook, simulate/allocation API) against a cluster.

Must not: import the relay (Starlette, uvicorn, kubernetes) before `run`, so `gpupool --help` stays instant.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gpupool.cli.errors import UserError
from gpupool.core.intake.routing import FUNCTIONS
from gpupool.core.model.constants import SCHEDULER_NAME
from gpupool.core.model.placement_mode import PLACEMENT_MODES

if TYPE_CHECKING:
    from gpupool_incluster.relay.signing import Signer

NAME = "relay"
HELP = "run the in-cluster relay: scheduler extender, pod webhook, simulate API, event forwarder"

AUTH_MODES = ("sigv4", "fc", "hmac", "none")

FC_CREDENTIALS_DIR = "/etc/gpupool/alibaba"
# Flags that say how deliveries are signed: each applies to one --forward-auth only.
_AUTH_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("hmac_secret_file", "--hmac-secret-file", "hmac"),
    ("region", "--region", "sigv4"),
    ("fc_credentials_dir", "--fc-credentials-dir", "fc"),
)


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
    serve.add_argument(
        "--placement-mode",
        choices=PLACEMENT_MODES,
        default="NodeCompactGPULowLoad",
        help="how the extender places TensorFusion workers on GPUs (default NodeCompactGPULowLoad; "
        "docs/scheduling.md)",
    )
    serve.add_argument(
        "--vram-weight",
        type=float,
        default=0.7,
        metavar="W",
        help="weight of VRAM in a GPU's score, 0..1; with --tflops-weight it sums to 1 (default 0.7)",
    )
    serve.add_argument(
        "--tflops-weight",
        type=float,
        default=0.3,
        metavar="W",
        help="weight of TFLOPS in a GPU's score, 0..1 (default 0.3)",
    )
    serve.add_argument(
        "--max-worker-per-node",
        type=int,
        default=256,
        metavar="N",
        help="most TensorFusion workers placed on one node (default 256)",
    )
    serve.add_argument(
        "--progressive-migration",
        action="store_true",
        help=f"route native nvidia.com/gpu pods to {SCHEDULER_NAME} (production guide step 5)",
    )
    serve.add_argument(
        "--extender-listen",
        default="127.0.0.1:8444",
        metavar="HOST:PORT",
        help="HOST:PORT of the kube-scheduler extender and /api/* for port-forward (plain HTTP: loopback)",
    )
    serve.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help="HOST:PORT serving /metrics, /healthz, /readyz on their own",
    )
    serve.add_argument(
        "--api-access",
        choices=("none", "token", "open"),
        default="none",
        help="/api/* on --listen: none (loopback only), token (bearer token, TokenReview + "
        "SubjectAccessReview), open (no check; local use)",
    )
    serve.add_argument(
        "--api-audience",
        action="append",
        default=[],
        metavar="AUDIENCE",
        help="with --api-access token: the audience a bearer token must be made for; repeatable "
        "(default gpupool-relay: kubectl create token SA --audience gpupool-relay)",
    )
    serve.add_argument(
        "--forward",
        action="append",
        default=[],
        metavar="FUNCTION=URL",
        help="send Kubernetes events for FUNCTION (launch, bind, compact) to URL; repeatable",
    )
    serve.add_argument(
        "--forward-auth", choices=AUTH_MODES, help="how deliveries are signed (needed with --forward)"
    )
    serve.add_argument(
        "--hmac-secret-file", metavar="FILE", help="file holding the shared secret for --forward-auth hmac"
    )
    serve.add_argument(
        "--region", default="", help="AWS region for --forward-auth sigv4 (default: $AWS_REGION)"
    )
    serve.add_argument(
        "--fc-credentials-dir",
        metavar="DIR",
        help="directory with files ak and sk (Secret tf-cloud-vendor-credentials) for --forward-auth fc "
        f"(default {FC_CREDENTIALS_DIR})",
    )
    serve.add_argument(
        "--cluster", default="cluster", help="cluster name in the events' source /gpupool/relay/NAME"
    )
    serve.add_argument(
        "--queue-limit", type=int, default=10_000, help="events held per function (default 10000)"
    )
    serve.add_argument(
        "--lease-namespace", default="", help="namespace of the forwarder's Lease (default: the pod's)"
    )


def _listen(text: str, flag: str = "--listen") -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"{flag} {text!r} must be HOST:PORT with a port in 1..65535")
    return host.strip("[]") or "0.0.0.0", int(port)


def _forwards(items: list[str]) -> dict[str, str]:
    urls: dict[str, str] = {}
    for item in items:
        function, sep, url = item.partition("=")
        if not sep or function not in FUNCTIONS:
            raise UserError(
                f"--forward {item!r} must be FUNCTION=URL with FUNCTION one of {', '.join(FUNCTIONS)}"
            )
        if not url.startswith(("https://", "http://")):
            raise UserError(f"--forward {function}: {url!r} is not an http(s) URL")
        if function in urls:
            raise UserError(f"--forward {function} is given twice")
        urls[function] = url
    return urls


def _signer(args: argparse.Namespace, urls: dict[str, str]) -> Signer | None:
    import os

    from gpupool_incluster.relay.signing import make_signer

    if not urls:
        given = [flag for attribute, flag, _mode in _AUTH_FLAGS if getattr(args, attribute)]
        if args.forward_auth is not None:
            given.insert(0, "--forward-auth")
        if given:
            raise UserError(
                f"{given[0]} applies to forwarded events only: add --forward FUNCTION=URL or drop it"
            )
        return None
    if args.forward_auth is None:
        raise UserError("--forward needs --forward-auth (sigv4, fc, hmac, or none for local use)")
    for attribute, flag, mode in _AUTH_FLAGS:
        if getattr(args, attribute) and args.forward_auth != mode:
            raise UserError(f"{flag} applies to --forward-auth {mode} only, not {args.forward_auth}")
    secret: bytes | None = None
    if args.forward_auth == "hmac":
        if not args.hmac_secret_file:
            raise UserError("--forward-auth hmac needs --hmac-secret-file")
        try:
            secret = Path(args.hmac_secret_file).read_bytes().strip()
        except OSError as exc:
            raise UserError(f"--hmac-secret-file {args.hmac_secret_file}: {exc.strerror}") from None
    try:
        return make_signer(
            args.forward_auth,
            hmac_secret=secret,
            region=args.region or os.environ.get("AWS_REGION", ""),
            fc_credentials_dir=Path(args.fc_credentials_dir or FC_CREDENTIALS_DIR),
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    if getattr(args, "relay_command", None) != "serve":
        raise UserError(
            "usage: gpupool relay serve [--kubeconfig FILE] --listen HOST:PORT [--insecure-http] "
            "[--forward FUNCTION=URL]... [--forward-auth sigv4|fc|hmac|none]"
        )
    host, port = _listen(args.listen)
    if args.kubeconfig is not None and not Path(args.kubeconfig).is_file():
        raise UserError(f"--kubeconfig {args.kubeconfig}: no such file")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise UserError("--tls-cert and --tls-key go together")
    if args.insecure_http and args.tls_cert:
        raise UserError("--insecure-http and --tls-cert exclude each other")
    extender = _listen(args.extender_listen, "--extender-listen")
    metrics_listen = _listen(args.metrics_listen, "--metrics-listen") if args.metrics_listen else None
    urls = _forwards(args.forward)
    audiences = tuple(a.strip() for a in args.api_audience)
    if not all(audiences):
        raise UserError("--api-audience must not be empty")
    if args.queue_limit < 1:
        raise UserError("--queue-limit must be at least 1")
    signer = _signer(args, urls)
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
    from gpupool_incluster.relay.access import DEFAULT_AUDIENCE
    from gpupool_incluster.relay.delivery import DeliverySettings
    from gpupool_incluster.relay.forwarder import ForwardSettings, warn_unsigned
    from gpupool_incluster.relay.hub import HubSettings
    from gpupool_incluster.relay.serve import RelayOptions, serve

    settings = HubSettings(
        policy=policy, default_pool=args.default_pool, progressive_migration=args.progressive_migration
    )
    warn_unsigned(urls, args.forward_auth or "none")
    serve(
        RelayOptions(
            kubeconfig=args.kubeconfig,
            host=host,
            port=port,
            insecure_http=args.insecure_http,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            settings=settings,
            extender_listen=extender,
            metrics_listen=metrics_listen,
            api_access=args.api_access,
            api_audiences=audiences or (DEFAULT_AUDIENCE,),
            forward=ForwardSettings(
                urls=urls,
                delivery=DeliverySettings(
                    queue_limit=args.queue_limit, source=f"/gpupool/relay/{args.cluster}"
                ),
            ),
            signer=signer,
            lease_namespace=args.lease_namespace,
        )
    )
    return 0
