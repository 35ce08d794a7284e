"""EKS bearer tokens: a presigned STS GetCallerIdentity URL, as aws-iam-authenticator expects.

Role: turn the function's own AWS credentials (its execution role) into a short-lived
Kubernetes bearer token for an EKS cluster, and keep a Kubernetes client configuration's
token fresh; `eks_api_client(access, session)` is the `eks` access mode of `kube.auth`.
The token is `k8s-aws-v1.` + unpadded base64url of a SigV4-presigned
`GET https://sts.<region>.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15`
whose signed headers include `x-k8s-aws-id: <cluster name>` (format documented by
kubernetes-sigs/aws-iam-authenticator). The URL carries `X-Amz-Expires=60`; the EKS
authenticator accepts a token for up to 15 minutes, so a cached token is renewed well
before that.

Must not: store or read any long-lived secret, call the network (presigning is local), or
import botocore at module import time of the service (this module is imported only by the
wiring, lazily).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from botocore.credentials import Credentials
from botocore.hooks import HierarchicalEmitter
from botocore.model import ServiceId
from botocore.signers import RequestSigner

from gpupool.adapters.kube.auth import KubeAccess, KubeAccessError

__all__ = [
    "CLUSTER_ID_HEADER",
    "PRESIGN_EXPIRES_SECONDS",
    "TOKEN_PREFIX",
    "TOKEN_RENEW_AFTER_SECONDS",
    "TokenSource",
    "eks_api_client",
    "install_token_refresh",
    "make_eks_token",
    "presigned_url_from_token",
]

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
PRESIGN_EXPIRES_SECONDS = 60
# EKS accepts a token for 15 minutes after signing; renew comfortably before that.
TOKEN_RENEW_AFTER_SECONDS = 10 * 60


def _sts_url(region: str) -> str:
    # Regional endpoint: the EKS authenticator accepts sts.amazonaws.com and the regional hosts.
    return f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15"


def make_eks_token(*, cluster_name: str, region: str, credentials: Credentials) -> str:
    """A bearer token for `cluster_name`, signed with `credentials` for STS in `region`.

    Raises ValueError when the cluster name or region is empty. Works offline.
    """
    if not cluster_name:
        raise ValueError("EKS token: the cluster name is empty")
    if not region:
        raise ValueError("EKS token: the AWS region is empty (set AWS_REGION)")
    # RequestSigner keeps only a weak reference to its emitter: hold it for the call.
    emitter = HierarchicalEmitter()
    signer = RequestSigner(ServiceId("STS"), region, "sts", "v4", credentials, emitter)
    request = {
        "method": "GET",
        "url": _sts_url(region),
        "body": {},
        "headers": {CLUSTER_ID_HEADER: cluster_name},
        "context": {},
    }
    url: str = signer.generate_presigned_url(
        request, region_name=region, expires_in=PRESIGN_EXPIRES_SECONDS, operation_name=""
    )
    encoded = base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")
    return TOKEN_PREFIX + encoded


def presigned_url_from_token(token: str) -> str:
    """The presigned URL inside a token (for tests and debugging). Raises ValueError if not a token."""
    if not token.startswith(TOKEN_PREFIX):
        raise ValueError(f"not an EKS token: it does not start with {TOKEN_PREFIX!r}")
    body = token[len(TOKEN_PREFIX) :]
    padded = body + "=" * (-len(body) % 4)
    return base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8")


class TokenSource:
    """Caches one EKS token and renews it after TOKEN_RENEW_AFTER_SECONDS (monotonic clock passed in).

    `credentials` is a callable so rotating role credentials (Lambda refreshes them) are re-read
    at each renewal.
    """

    def __init__(
        self,
        *,
        cluster_name: str,
        region: str,
        credentials: Callable[[], Credentials],
        monotonic: Callable[[], float],
    ) -> None:
        self._cluster_name = cluster_name
        self._region = region
        self._credentials = credentials
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._token: str | None = None
        self._issued_at = 0.0

    def token(self) -> str:
        with self._lock:
            now = self._monotonic()
            if self._token is None or now - self._issued_at >= TOKEN_RENEW_AFTER_SECONDS:
                self._token = make_eks_token(
                    cluster_name=self._cluster_name, region=self._region, credentials=self._credentials()
                )
                self._issued_at = now
            return self._token


def install_token_refresh(configuration: Any, source: TokenSource) -> None:
    """Make a kubernetes.client.Configuration ask `source` for its bearer token before each request."""

    def _refresh(config: Any) -> None:
        config.api_key["BearerToken"] = source.token()
        config.api_key_prefix["BearerToken"] = "Bearer"

    configuration.refresh_api_key_hook = _refresh
    _refresh(configuration)


def _write_ca(ca_data: str) -> str:
    try:
        pem = base64.b64decode(ca_data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise KubeAccessError("eks access: the CA data is not base64") from error
    # Lambda can write only under /tmp; the file lives as long as the execution environment. Named
    # by its content, so warm invocations reuse one file instead of leaving one per client.
    path = Path(tempfile.gettempdir()) / f"gpupool-eks-ca-{hashlib.sha256(pem).hexdigest()[:24]}.crt"
    if not path.exists() or path.read_bytes() != pem:
        descriptor, scratch = tempfile.mkstemp(dir=path.parent, prefix=".gpupool-eks-ca-")
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(pem)
        os.replace(scratch, path)  # whole files only, by rename
    return str(path)


def _describe_eks(session: Any, access: KubeAccess) -> tuple[str, str]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        eks = session.client("eks", region_name=access.region)
        cluster = eks.describe_cluster(name=access.eks_cluster_name)["cluster"]
        return str(cluster["endpoint"]), str(cluster["certificateAuthority"]["data"])
    except (ClientError, BotoCoreError, KeyError) as error:
        raise KubeAccessError(
            f"eks access: cannot describe EKS cluster {access.eks_cluster_name}: {error}"
        ) from error


def eks_api_client(access: KubeAccess, session: Any) -> Any:
    """A `kubernetes.client.ApiClient` for `access` (mode `eks`) on `session` (an `AwsSession`):
    a bearer token from the session's credentials, renewed before it expires, and the endpoint
    and CA given or read from `eks:DescribeCluster`. Raises KubeAccessError."""
    from kubernetes import client as k8s

    if session is None:
        raise KubeAccessError("eks access needs an AWS session")
    if access.endpoint and access.ca_data:
        endpoint, ca_data = access.endpoint, access.ca_data
    else:
        endpoint, ca_data = _describe_eks(session, access)
    configuration = k8s.Configuration()
    configuration.host = endpoint
    configuration.ssl_ca_cert = _write_ca(ca_data)
    configuration.verify_ssl = True

    def credentials() -> Any:
        found = session.get_credentials()
        if found is None:
            raise KubeAccessError("eks access: no AWS credentials in this environment")
        return found

    source = TokenSource(
        cluster_name=str(access.eks_cluster_name),
        region=str(access.region),
        credentials=credentials,
        monotonic=time.monotonic,
    )
    install_token_refresh(configuration, source)
    return k8s.ApiClient(configuration)
