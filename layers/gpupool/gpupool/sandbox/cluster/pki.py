"""The real control plane's credentials: a CA, kube-apiserver's serving certificate, the
service-account signing key, and one static bearer token per client.

Role: everything loopback-only and throw-away, written under the control plane's own directory
with owner-only permissions. The serving certificate names 127.0.0.1 and localhost, so clients
verify TLS against the CA in the kubeconfig instead of skipping verification.

Must not: be reused for anything but a local test cluster, or print a key or a token.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

# Who each component authenticates as (the names Kubernetes' bootstrap RBAC binds), and its groups.
IDENTITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": ("gpupool-admin", ("system:masters",)),
    "kube-controller-manager": ("system:kube-controller-manager", ()),
    "kube-scheduler": ("system:kube-scheduler", ()),
    # KWOK writes node and pod status as every node's kubelet would; Karpenter runs cluster-wide.
    "kwok": ("gpupool-kwok", ("system:masters",)),
    "karpenter": ("gpupool-karpenter", ("system:masters",)),
}


@dataclass(frozen=True)
class Pki:
    root: Path

    @property
    def ca_cert(self) -> Path:
        return self.root / "ca.crt"

    @property
    def serving_cert(self) -> Path:
        return self.root / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.root / "apiserver.key"

    @property
    def service_account_key(self) -> Path:
        return self.root / "sa.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.root / "sa.pub"

    @property
    def tokens_file(self) -> Path:
        return self.root / "tokens.csv"

    def token(self, identity: str) -> str:
        for line in self.tokens_file.read_text().splitlines():
            token, user, *_ = line.split(",")
            if user == IDENTITIES[identity][0]:
                return token
        raise KeyError(identity)


def _write_private(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    os.chmod(path, 0o600)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def create_pki(root: Path) -> Pki:
    """Write a fresh CA, serving certificate, service-account key pair and token file under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("gpupool-local-ca"))
        .issuer_name(_name("gpupool-local-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    serving_key = ec.generate_private_key(ec.SECP256R1())
    serving_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca_cert.subject)
        .public_key(serving_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.DNSName("kubernetes.default.svc"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(root)
    pem = serialization.Encoding.PEM
    pkcs8 = serialization.PrivateFormat.PKCS8
    plain = serialization.NoEncryption()
    pki.ca_cert.write_bytes(ca_cert.public_bytes(pem))
    pki.serving_cert.write_bytes(serving_cert.public_bytes(pem))
    _write_private(pki.serving_key, serving_key.private_bytes(pem, pkcs8, plain))
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_private(pki.service_account_key, sa_key.private_bytes(pem, pkcs8, plain))
    pki.service_account_public_key.write_bytes(
        sa_key.public_key().public_bytes(pem, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    lines = []
    for user, groups in IDENTITIES.values():
        group_field = f',"{",".join(groups)}"' if groups else ""
        lines.append(f"{secrets.token_urlsafe(32)},{user},{user}{group_field}")
    _write_private(pki.tokens_file, ("\n".join(lines) + "\n").encode())
    return pki
