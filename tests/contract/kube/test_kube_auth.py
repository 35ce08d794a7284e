"""kube.auth and aws.eks: every access mode builds a working client, or fails with a clear error.

Covers: kubeconfig by path and by content reach the embedded API server; a bad kubeconfig and
in-cluster outside a pod are `KubeAccessError`s; the EKS token is `k8s-aws-v1.` + unpadded
base64url of a presigned STS GetCallerIdentity URL (regional host, X-Amz-Expires=60,
x-k8s-aws-id signed) made offline; the token is renewed after 10 minutes; EKS endpoint and CA
come from eks:DescribeCluster (moto) or from the settings.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.credentials import Credentials
from moto import mock_aws

from gpupool.adapters.aws.eks import (
    TOKEN_PREFIX,
    TokenSource,
    eks_api_client,
    make_eks_token,
    presigned_url_from_token,
)
from gpupool.adapters.kube.auth import KubeAccess, KubeAccessError, build_api_client
from gpupool.adapters.kube.cluster import KubeCluster
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

CREDENTIALS = Credentials("AKIDEXAMPLE", "secret", "session-token")
CA_PEM = b"-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


def through_eks(access: KubeAccess, session: Any) -> Any:
    """`build_api_client` in eks mode as the AWS wiring calls it: with `eks_api_client` on `session`."""
    return build_api_client(access, eks=lambda given: eks_api_client(given, session))


def test_kubeconfig_content_reaches_the_server(kube_api: EmbeddedKubeAPI) -> None:
    content = Path(kube_api.kubeconfig_path).read_text(encoding="utf-8")
    api_client = build_api_client(KubeAccess(mode="kubeconfig", kubeconfig_content=content))
    assert KubeCluster(api_client).list_pools() == []


def test_kubeconfig_context_must_exist(kube_api: EmbeddedKubeAPI) -> None:
    with pytest.raises(KubeAccessError, match="kubeconfig"):
        build_api_client(
            KubeAccess(mode="kubeconfig", kubeconfig_path=str(kube_api.kubeconfig_path), context="nope")
        )


@pytest.mark.parametrize(
    "access",
    [
        KubeAccess(mode="kubeconfig", kubeconfig_path="/no/such/kubeconfig"),
        KubeAccess(mode="kubeconfig", kubeconfig_content="just a string"),
        KubeAccess(mode="kubeconfig", kubeconfig_content="a: [unclosed"),
    ],
)
def test_bad_kubeconfig_is_a_clear_error(access: KubeAccess) -> None:
    with pytest.raises(KubeAccessError, match="kubeconfig"):
        build_api_client(access)


def test_incluster_outside_a_pod_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeAccessError, match="in-cluster"):
        build_api_client(KubeAccess(mode="incluster"))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"mode": "kubeconfig"}, "path or its content"),
        ({"mode": "eks", "region": "us-east-1"}, "cluster name"),
        ({"mode": "eks", "eks_cluster_name": "c"}, "region"),
        ({"mode": "eks", "eks_cluster_name": "c", "region": "r", "endpoint": "https://x"}, "both"),
        ({"mode": "ssh"}, "unknown"),
    ],
)
def test_incomplete_access_is_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(KubeAccessError, match=message):
        KubeAccess(**fields)


def test_eks_token_is_a_presigned_get_caller_identity_url() -> None:
    token = make_eks_token(cluster_name="prod-gpu", region="eu-west-1", credentials=CREDENTIALS)
    assert token.startswith(TOKEN_PREFIX)
    assert "=" not in token  # unpadded base64url
    body = token[len(TOKEN_PREFIX) :]
    assert set(body) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    url = urlsplit(presigned_url_from_token(token))
    query = parse_qs(url.query)
    assert (url.scheme, url.netloc, url.path) == ("https", "sts.eu-west-1.amazonaws.com", "/")
    assert query["Action"] == ["GetCallerIdentity"] and query["Version"] == ["2011-06-15"]
    assert query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert (
        query["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/")
        and "/eu-west-1/sts/" in query["X-Amz-Credential"][0]
    )
    assert query["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
    assert query["X-Amz-Security-Token"] == ["session-token"]
    other = make_eks_token(cluster_name="other", region="eu-west-1", credentials=CREDENTIALS)
    assert (
        parse_qs(urlsplit(presigned_url_from_token(other)).query)["X-Amz-Signature"]
        != query["X-Amz-Signature"]
    )


@pytest.mark.parametrize(("cluster", "region"), [("", "us-east-1"), ("c", "")])
def test_eks_token_needs_cluster_and_region(cluster: str, region: str) -> None:
    with pytest.raises(ValueError):
        make_eks_token(cluster_name=cluster, region=region, credentials=CREDENTIALS)


def test_not_a_token_is_refused() -> None:
    with pytest.raises(ValueError, match="k8s-aws-v1"):
        presigned_url_from_token("Bearer abc")


def test_token_source_renews_after_ten_minutes() -> None:
    clock = [1000.0]
    calls: list[int] = []

    def credentials() -> Credentials:
        calls.append(1)
        return CREDENTIALS

    source = TokenSource(
        cluster_name="c", region="us-east-1", credentials=credentials, monotonic=lambda: clock[0]
    )
    first = source.token()
    clock[0] += 599
    assert source.token() == first and len(calls) == 1
    clock[0] += 1
    source.token()
    assert len(calls) == 2


class _Session:
    """The two things aws.eks asks of a boto3 Session in eks mode."""

    def __init__(self, credentials: Credentials | None) -> None:
        self._credentials = credentials

    def get_credentials(self) -> Credentials | None:
        return self._credentials

    def client(self, *_: Any, **__: Any) -> Any:
        raise AssertionError("DescribeCluster must not be called when endpoint and CA are given")


def test_eks_with_given_endpoint_and_ca_uses_a_bearer_token() -> None:
    access = KubeAccess(
        mode="eks",
        eks_cluster_name="prod-gpu",
        region="us-west-2",
        endpoint="https://ABC.gr7.us-west-2.eks.amazonaws.com",
        ca_data=base64.b64encode(CA_PEM).decode(),
    )
    api_client = through_eks(access, _Session(CREDENTIALS))
    configuration = api_client.configuration
    assert configuration.host == "https://ABC.gr7.us-west-2.eks.amazonaws.com"
    with open(configuration.ssl_ca_cert, "rb") as handle:
        assert handle.read() == CA_PEM
    header = configuration.get_api_key_with_prefix("BearerToken")
    assert header.startswith("Bearer " + TOKEN_PREFIX)
    token = header.removeprefix("Bearer ")
    assert "sts.us-west-2.amazonaws.com" in presigned_url_from_token(token)
    # A warm container's next client reuses the one CA file instead of leaving another in /tmp.
    again = through_eks(access, _Session(CREDENTIALS)).configuration.ssl_ca_cert
    assert again == configuration.ssl_ca_cert
    os.unlink(configuration.ssl_ca_cert)


def test_eks_without_credentials_or_with_bad_ca_is_a_clear_error() -> None:
    given = {"mode": "eks", "eks_cluster_name": "c", "region": "us-east-1", "endpoint": "https://x"}
    with pytest.raises(KubeAccessError, match="credentials"):
        through_eks(KubeAccess(**given, ca_data=base64.b64encode(CA_PEM).decode()), _Session(None))
    with pytest.raises(KubeAccessError, match="base64"):
        through_eks(KubeAccess(**given, ca_data="not base64!"), _Session(CREDENTIALS))
    with pytest.raises(KubeAccessError, match="AWS session"):
        build_api_client(KubeAccess(**given, ca_data=base64.b64encode(CA_PEM).decode()))


def test_eks_endpoint_and_ca_come_from_describe_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        session = boto3.session.Session(
            region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        eks = session.client("eks")
        eks.create_cluster(
            name="prod-gpu",
            roleArn="arn:aws:iam::123456789012:role/eks",
            resourcesVpcConfig={"subnetIds": []},
        )
        described = eks.describe_cluster(name="prod-gpu")["cluster"]
        access = KubeAccess(mode="eks", eks_cluster_name="prod-gpu", region="us-east-1")
        api_client = through_eks(access, session)
        assert api_client.configuration.host == described["endpoint"]
        with open(api_client.configuration.ssl_ca_cert, "rb") as handle:
            assert handle.read() == base64.b64decode(described["certificateAuthority"]["data"])
        with pytest.raises(KubeAccessError, match="cannot describe"):
            through_eks(KubeAccess(mode="eks", eks_cluster_name="missing", region="us-east-1"), session)


class _RecordingServer:
    """An HTTP server that answers every GET with an empty list and keeps each request's
    Authorization header (what an API server that authenticates would read)."""

    def __init__(self) -> None:
        import http.server
        import threading

        seen: list[str | None] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.headers.get("Authorization"))
                body = b'{"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.seen = seen
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_the_kubeconfig_token_is_sent_on_every_request() -> None:
    """A token kubeconfig (what kube-apiserver's token file, a ServiceAccount or `sandbox up --real`
    give): the adapters' requests carry it; without it a real API server sees system:anonymous."""
    server = _RecordingServer()
    try:
        content = (
            "apiVersion: v1\nkind: Config\n"
            f"clusters: [{{name: c, cluster: {{server: '{server.url}'}}}}]\n"
            "users: [{name: u, user: {token: the-functions-token}}]\n"
            "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
        )
        api_client = build_api_client(KubeAccess(mode="kubeconfig", kubeconfig_content=content))
        assert KubeCluster(api_client).list_pools() == []
    finally:
        server.close()
    assert server.seen and all(header == "Bearer the-functions-token" for header in server.seen), server.seen
