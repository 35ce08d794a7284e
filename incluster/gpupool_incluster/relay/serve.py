"""Run the relay: kubeconfig → watches → hub → Starlette app under uvicorn, TLS unless told not to.

Role: wiring and lifecycle only. TLS is the default: with `--tls-cert/--tls-key` the given pair is
served; without them a self-signed certificate for the listen host is generated into a private
temporary directory (the admission webhook and kube-scheduler need HTTPS in a cluster; give the
chart's certificate there). Plain HTTP only with `insecure_http=True`.

Must not: decide anything.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import tempfile
import threading
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

from gpupool_incluster.relay.app import create_app
from gpupool_incluster.relay.hub import HubSettings, SchedulerHub
from gpupool_incluster.relay.kube import KubeWriter, start_watches

__all__ = ["RelayOptions", "self_signed_pair", "serve"]

config: Any = _config
client: Any = _client
log = logging.getLogger("gpupool.relay")


@dataclass(frozen=True, slots=True)
class RelayOptions:
    kubeconfig: str | None
    host: str
    port: int
    insecure_http: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    settings: HubSettings = field(default_factory=HubSettings)


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


def serve(options: RelayOptions) -> None:
    """Block serving the relay until interrupted."""
    if options.kubeconfig is None:
        config.load_incluster_config()
        api = client.ApiClient()
    else:
        api = config.new_client_from_config(config_file=options.kubeconfig)
    writer = KubeWriter(api)
    hub = SchedulerHub(writer, options.settings, tainter=writer)
    stop = threading.Event()
    start_watches(api, hub, stop)
    uvicorn_options: dict[str, Any] = {"host": options.host, "port": options.port, "log_level": "info"}
    with tempfile.TemporaryDirectory(prefix="gpupool-relay-tls-") as scratch:
        if not options.insecure_http:
            if options.tls_cert and options.tls_key:
                cert, key = Path(options.tls_cert), Path(options.tls_key)
            else:
                cert, key = self_signed_pair(options.host, Path(scratch), now=dt.datetime.now(dt.UTC))
                log.warning("no --tls-cert/--tls-key given: serving a self-signed certificate")
            uvicorn_options |= {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
        try:
            uvicorn.run(create_app(hub), **uvicorn_options)
        finally:
            stop.set()
            api.close()
