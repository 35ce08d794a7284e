"""Run the relay: kubeconfig → watches → hub → Starlette apps under uvicorn, TLS unless told not to.

Role: wiring and lifecycle only. Listeners:
- `--listen` (the Service port; TLS): the pod webhook, /healthz, /readyz, and the /api/* routes when
  `api_access` is `token` (bearer token made for `api_audiences`, TokenReview + SubjectAccessReview)
  or `open` (local use) — never /metrics;
- `--extender-listen` (loopback only, plain HTTP inside the pod): the kube-scheduler extender, the
  /api/* routes for `kubectl port-forward`, and /metrics unless `metrics_listen` gives it (with
  /healthz and /readyz) a port of its own (the chart's, which its NetworkPolicy can restrict).
TLS is the default: with `--tls-cert/--tls-key` the given pair is served, and re-read when the
files change (a renewed Secret ends the process, and the kubelet restarts the container on the
new pair: uvicorn cannot swap a certificate in place; see `_watch_certificate`); without
them a self-signed certificate for the listen host is generated into a private temporary
directory. Plain HTTP only with `insecure_http=True`. One list+watch per resource serves the
whole process (`informers`): the hub subscribes at start, the forwarder (with forward URLs)
whenever this replica holds the Lease.

Must not: decide anything.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import os
import socket
import tempfile
import threading
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client as _client
from kubernetes import config as _config
from starlette.applications import Starlette

from gpupool.core.deferred_model import build_imported_models
from gpupool_incluster.relay.access import DEFAULT_AUDIENCE, TokenAccess
from gpupool_incluster.relay.app import create_app
from gpupool_incluster.relay.forwarder import Forwarder, ForwardSettings
from gpupool_incluster.relay.hub import HubSettings, SchedulerHub
from gpupool_incluster.relay.informers import SharedInformers
from gpupool_incluster.relay.kube import KubeWriter, subscribe_hub
from gpupool_incluster.relay.lease import LeaderElector, LeaseTimings
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.signing import Signer
from gpupool_incluster.relay.watching import WatchTimings

__all__ = ["RelayOptions", "self_signed_pair", "serve"]

config: Any = _config
client: Any = _client
log = logging.getLogger("gpupool.relay")
CERT_POLL_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class RelayOptions:
    kubeconfig: str | None
    host: str
    port: int
    insecure_http: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    settings: HubSettings = field(default_factory=HubSettings)
    extender_listen: tuple[str, int] = ("127.0.0.1", 8444)
    metrics_listen: tuple[str, int] | None = None
    api_access: str = "none"  # none | token | open
    api_audiences: tuple[str, ...] = (DEFAULT_AUDIENCE,)
    forward: ForwardSettings = field(default_factory=ForwardSettings)
    signer: Signer | None = None
    lease_namespace: str = ""
    lease_name: str = "gpupool-relay"
    lease: LeaseTimings = field(default_factory=LeaseTimings)
    watch: WatchTimings = field(default_factory=WatchTimings)


def self_signed_pair(host: str, directory: Path, *, now: dt.datetime) -> tuple[Path, Path]:
    """A one-year self-signed certificate and key for `host` (an IP or a DNS name)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host or "localhost")])
    try:
        alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        alt = x509.DNSName(host or "localhost")
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName([alt, x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path


def _pod_namespace() -> str:
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    env = os.environ.get("POD_NAMESPACE")
    if env:
        return env
    try:
        with open(path) as handle:
            return handle.read().strip() or "default"
    except OSError:
        return "default"


def _server(app: Starlette, host: str, port: int, **tls: str) -> uvicorn.Server:
    settings: dict[str, Any] = {"host": host, "port": port, "log_level": "info", **tls}
    return uvicorn.Server(uvicorn.Config(app, **settings))


def _start_in_thread(server: uvicorn.Server, name: str) -> threading.Thread:
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    return thread


def _surfaces(options: RelayOptions) -> tuple[Collection[str], Collection[str]]:
    """The route groups of the Service port and of the loopback port."""
    main = {"webhook", "health"}
    if options.api_access in ("token", "open"):
        main.add("api")
    loopback = {"extender", "api", "health"}
    if options.metrics_listen is None:
        loopback.add("metrics")
    return main, loopback


def _fingerprint(*paths: Path) -> tuple[float, ...]:
    try:
        return tuple(p.stat().st_mtime for p in paths)
    except OSError:
        return ()


def _watch_certificate(cert: Path, key: Path, server: uvicorn.Server, stop: threading.Event) -> None:
    """End the server when the mounted pair changes (a renewed or rotated Secret)."""
    first = _fingerprint(cert, key)
    while not stop.wait(CERT_POLL_SECONDS):
        if _fingerprint(cert, key) != first:
            log.warning("the TLS certificate changed; exiting so the container restarts on the new pair")
            server.should_exit = True
            return


def serve(options: RelayOptions) -> None:
    """Block serving the relay until interrupted."""
    build_imported_models()  # before the first request, not in its latency
    if options.kubeconfig is None:
        config.load_incluster_config()
        api = client.ApiClient()
    else:
        api = config.new_client_from_config(config_file=options.kubeconfig)
    writer = KubeWriter(api)
    hub = SchedulerHub(writer, options.settings, tainter=writer, labeller=writer)
    metrics = RelayMetrics()
    metrics.watch_allocation(hub)  # the allocation gauges the chart's PrometheusRule reads
    stop = threading.Event()
    informers = SharedInformers(api, metrics=metrics, stop=stop, timings=options.watch)
    subscribe_hub(hub, informers, stop)
    elector: LeaderElector | None = None
    forwarder: Forwarder | None = None
    if options.forward.urls and options.signer is not None:
        forwarder = Forwarder(informers, options.signer, options.forward, metrics)
        identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"

        def started() -> None:
            metrics.leader.set(1)
            assert forwarder is not None
            forwarder.start()

        def stopped() -> None:
            metrics.leader.set(0)
            assert forwarder is not None
            forwarder.stop()

        elector = LeaderElector(
            api,
            namespace=options.lease_namespace or _pod_namespace(),
            name=options.lease_name,
            identity=identity,
            on_started=started,
            on_stopped=stopped,
            timings=options.lease,
        )
        elector.start()

    def ready() -> bool:
        return hub.synced.is_set() and (forwarder is None or not forwarder.running or forwarder.synced())

    access = TokenAccess(api, audiences=options.api_audiences) if options.api_access == "token" else None
    main_surfaces, loopback_surfaces = _surfaces(options)
    main_app = create_app(hub, surfaces=main_surfaces, metrics=metrics, access=access, ready=ready)
    extender_app = create_app(hub, surfaces=loopback_surfaces, metrics=metrics, ready=ready)
    threads = [_start_in_thread(_server(extender_app, *options.extender_listen), "extender")]
    if options.metrics_listen is not None:
        metrics_app = create_app(hub, surfaces={"metrics", "health"}, metrics=metrics, ready=ready)
        threads.append(_start_in_thread(_server(metrics_app, *options.metrics_listen), "metrics"))
    with tempfile.TemporaryDirectory(prefix="gpupool-relay-tls-") as scratch:
        tls: dict[str, str] = {}
        given: tuple[Path, Path] | None = None
        if not options.insecure_http:
            if options.tls_cert and options.tls_key:
                given = cert, key = Path(options.tls_cert), Path(options.tls_key)
            else:
                cert, key = self_signed_pair(options.host, Path(scratch), now=dt.datetime.now(dt.UTC))
                log.warning("no --tls-cert/--tls-key given: serving a self-signed certificate")
            tls = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
        main = _server(main_app, options.host, options.port, **tls)
        if given is not None:
            threading.Thread(target=_watch_certificate, args=(*given, main, stop), daemon=True).start()
        try:
            main.run()
        finally:
            stop.set()
            if elector is not None:
                elector.stop(release=True)
            if forwarder is not None:
                forwarder.stop()
            informers.stop()
            api.close()
