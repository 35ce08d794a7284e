"""How the relay authenticates a delivery: the headers one signed POST carries.

Role: one `Signer` per `--forward-auth` mode.
- `none`: nothing added (local use);
- `hmac`: `x-gpupool-timestamp` / `x-gpupool-signature` from `gpupool.core.intake.signature`;
- `sigv4`: AWS Signature V4 for service `lambda` (Lambda Function URLs with AuthType AWS_IAM),
  signed by botocore with credentials from its default chain (IRSA web identity, EKS Pod
  Identity container credentials, environment) — refreshed credentials are picked up per request;
- `fc`: the signature Function Compute 3.0 checks on an HTTP trigger with `authType: function`,
  ACS3-HMAC-SHA256 (`gpupool.core.intake.acs3`): `Authorization: ACS3-HMAC-SHA256
  Credential=<ak>,SignedHeaders=…,Signature=…` over the method, path, query, `host`,
  `content-type`, `x-acs-date`, a fresh `x-acs-signature-nonce`, `x-acs-content-sha256` (the
  body's SHA-256, so the body is covered; the function checks it against what it received) and,
  for STS, `x-acs-security-token`; an unsigned RFC 1123 `date` too (FC's FAQ names its absence
  as a refusal). The AccessKey pair is read from files `ak` / `sk` (the Secret
  `tf-cloud-vendor-credentials` the TensorFusion docs name, mounted as a directory) on every
  request, so a rotated Secret is used; without those files, RRSA: the pod's OIDC token
  (`ALIBABA_CLOUD_ROLE_ARN`, `ALIBABA_CLOUD_OIDC_PROVIDER_ARN`, `ALIBABA_CLOUD_OIDC_TOKEN_FILE`,
  set by ACK's RRSA webhook) exchanged for STS credentials by `alibabacloud_credentials`, which renews them.

Must not: send anything, log a secret or a signature.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from email.utils import formatdate
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from gpupool.core.intake import acs3
from gpupool.core.intake.signature import sign_body

__all__ = ["AUTH_MODES", "Signer", "make_signer"]

AUTH_MODES = ("none", "hmac", "sigv4", "fc")


class Signer(Protocol):
    def __call__(self, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        """The headers to send: `headers` plus what authenticates this exact body to `url`."""
        ...


def _unsigned(url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
    return dict(headers)


def hmac_signer(secret: bytes, *, clock: Callable[[], float] = time.time) -> Signer:
    if not secret:
        raise ValueError("the HMAC secret is empty")

    def sign(url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        return dict(headers) | sign_body(secret, body, timestamp=int(clock()))

    return sign


def sigv4_signer(region: str, *, service: str = "lambda", credentials: object | None = None) -> Signer:
    """SigV4 by botocore; `credentials` (botocore Credentials) default to the default chain."""
    import botocore.session
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    if not region:
        raise ValueError("SigV4 needs a region (--region)")
    source = credentials or botocore.session.Session().get_credentials()
    if source is None:
        raise ValueError("no AWS credentials found (IRSA, EKS Pod Identity or the environment)")

    def sign(url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        frozen = source.get_frozen_credentials() if hasattr(source, "get_frozen_credentials") else source
        request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
        SigV4Auth(frozen, service, region).add_auth(request)
        return {str(k): str(v) for k, v in request.headers.items()}

    return sign


AlibabaKeys = Callable[[], tuple[str, str, str]]  # (AccessKey id, secret, STS token or "")
RRSA_ENV = ("ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE")


def alibaba_keys_from_files(credentials_dir: Path) -> AlibabaKeys:
    """The pair in `credentials_dir`/ak and /sk (and an optional /token), re-read on every call."""

    def read(name: str) -> str:
        path = credentials_dir / name
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise ValueError(
                f"cannot read the Alibaba Cloud credential file {path}: {exc.strerror}"
            ) from None

    read("ak"), read("sk")  # fail at start, not at the first delivery

    def keys() -> tuple[str, str, str]:
        token_file = credentials_dir / "token"
        return read("ak"), read("sk"), token_file.read_text().strip() if token_file.is_file() else ""

    return keys


def alibaba_keys_from_rrsa() -> AlibabaKeys:
    """STS credentials for the pod's RRSA role, built on first use and renewed by the SDK."""
    holder: list[Any] = []

    def keys() -> tuple[str, str, str]:
        if not holder:
            from alibabacloud_credentials.client import Client

            holder.append(Client())
        credential = holder[0].get_credential()
        return credential.access_key_id, credential.access_key_secret, credential.security_token or ""

    return keys


def fc_signer(
    keys: AlibabaKeys,
    *,
    clock: Callable[[], float] = time.time,
    nonce: Callable[[], str] = lambda: secrets.token_hex(16),
) -> Signer:
    """ACS3-HMAC-SHA256 for an FC HTTP trigger, with the keys `keys()` returns at each request."""

    def sign(url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        key_id, secret, token = keys()
        parts = urlsplit(url)
        now = clock()
        signed = {k.lower(): v for k, v in headers.items()} | {
            "host": parts.netloc.rpartition("@")[2],
            "date": formatdate(now, usegmt=True),
            acs3.DATE_HEADER: acs3.acs_date(now),
            acs3.NONCE_HEADER: nonce(),
            acs3.CONTENT_SHA256_HEADER: acs3.content_sha256(body),
        }
        if token:
            signed[acs3.SECURITY_TOKEN_HEADER] = token
        signed["authorization"] = acs3.authorization(
            method="POST", path=parts.path, query=parts.query, headers=signed, key_id=key_id, secret=secret
        )
        return signed

    return sign


def make_signer(
    mode: str,
    *,
    hmac_secret: bytes | None = None,
    region: str = "",
    fc_credentials_dir: Path | None = None,
) -> Signer:
    """The signer for `mode`; ValueError (one clear line) when its inputs are missing."""
    if mode == "none":
        return _unsigned
    if mode == "hmac":
        if not hmac_secret:
            raise ValueError("--forward-auth hmac needs --hmac-secret-file with a non-empty secret")
        return hmac_signer(hmac_secret)
    if mode == "sigv4":
        return sigv4_signer(region)
    if mode == "fc":
        if fc_credentials_dir is None:
            raise ValueError("--forward-auth fc needs --fc-credentials-dir (files ak and sk) or RRSA")
        if not (fc_credentials_dir / "ak").exists() and all(os.environ.get(name) for name in RRSA_ENV):
            return fc_signer(alibaba_keys_from_rrsa())
        return fc_signer(alibaba_keys_from_files(fc_credentials_dir))
    raise ValueError(f"unknown --forward-auth {mode!r}; choose one of {', '.join(AUTH_MODES)}")
