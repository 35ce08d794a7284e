"""How the relay authenticates a delivery: the headers one signed POST carries.

Role: one `Signer` per `--forward-auth` mode.
- `none`: nothing added (local use);
- `hmac`: `x-gpupool-timestamp` / `x-gpupool-signature` from `gpupool.core.intake.signature`;
- `sigv4`: AWS Signature V4 for service `lambda` (Lambda Function URLs with AuthType AWS_IAM),
  signed by botocore with credentials from its default chain (IRSA web identity, EKS Pod
  Identity container credentials, environment) — refreshed credentials are picked up per request;
- `fc`: an Alibaba Function Compute HTTP trigger's signature (`Authorization: FC <ak>:<sig>`,
  with `date` and, for STS, `x-fc-security-token`), computed by the `fc2` SDK's own signer, with
  the AccessKey pair read from files `ak` / `sk` (the Secret `tf-cloud-vendor-credentials` the
  TensorFusion docs name, mounted as a directory) on every request, so a rotated Secret is used.

Must not: send anything, log a secret or a signature.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from email.utils import formatdate
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

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


def fc_signer(credentials_dir: Path) -> Signer:
    """FC HTTP trigger signature with the AccessKey in `credentials_dir`/ak and /sk."""
    from fc2.auth import Auth

    def read(name: str) -> str:
        path = credentials_dir / name
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise ValueError(
                f"cannot read the Alibaba Cloud credential file {path}: {exc.strerror}"
            ) from None

    read("ak"), read("sk")  # fail at start, not at the first delivery

    def sign(url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        token_file = credentials_dir / "token"
        token = token_file.read_text().strip() if token_file.is_file() else ""
        signed = dict(headers) | {"date": formatdate(usegmt=True)}
        if token:
            signed["x-fc-security-token"] = token
        parts = urlsplit(url)
        signed["authorization"] = Auth(read("ak"), read("sk"), token).sign_request(
            "POST", parts.path or "/", {k.lower(): v for k, v in signed.items()}
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
            raise ValueError("--forward-auth fc needs --fc-credentials-dir (files ak and sk)")
        return fc_signer(fc_credentials_dir)
    raise ValueError(f"unknown --forward-auth {mode!r}; choose one of {', '.join(AUTH_MODES)}")
