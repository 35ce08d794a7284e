"""Secrets from the clouds' encrypted stores, through the real clients: Secrets Manager (moto) and KMS.

`KmsEndpoint` is a local stand-in for Alibaba Cloud KMS's `GetSecretValue` (API 2016-01-20,
RPC style), answering the real `alibabacloud-tea-openapi` client as KMS does: the action and
version from `x-acs-action` / `x-acs-version`, `SecretName` from the query or form body, the
answer `{"SecretName", "SecretData", "SecretDataType", "VersionId", "RequestId"}`; an unknown
secret is HTTP 404 `Forbidden.ResourceNotFound`; a request must name the expected AccessKey id in
its ACS3 `Authorization` (simpler than KMS: the signature itself is not recomputed, as the
sandbox's ECS endpoint does not). Covers: `aws_secret` / `kms_secret_data` return the value, text
and binary; a missing secret, a refused key and an unreachable store are `SecretUnavailable`
naming the secret and never a value; the Lambda and FC handlers in `hmac` mode read the relay's
secret from their store (GPUPOOL_RELAY_HMAC_SECRET_ID) and accept what it signs; a kubeconfig held
in KMS (GPUPOOL_KUBECONFIG_SECRET) reaches the embedded API server through `build_alibaba_deps`,
and one that cannot be read is a ConfigError naming the variable.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest

from gpupool.adapters.alibaba.kms import KMS_API_VERSION, SecretUnavailable, kms_secret_data
from gpupool.adapters.alibaba.wiring import alibaba_secret, build_alibaba_deps
from gpupool.adapters.aws.wiring import aws_secret
from gpupool.adapters.environment import ConfigError
from gpupool.core.intake.signature import sign_body
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.moto_ec2 import MotoEC2
from tests.service.test_handlers import DepsFactory, StubService

ROOT = Path(__file__).resolve().parents[3]
KEY_ID, KEY_SECRET = "LTAI-kms-test", "kms-test-secret"
ALIBABA = {
    "ALIBABA_CLOUD_REGION_ID": "cn-hangzhou",
    "ALIBABA_CLOUD_ACCESS_KEY_ID": KEY_ID,
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET": KEY_SECRET,
}


class KmsEndpoint:
    """KMS GetSecretValue on 127.0.0.1 (see the module docstring for what it checks)."""

    def __init__(self, secrets: dict[str, tuple[str, str]]) -> None:
        self.secrets = secrets  # name -> (SecretData, SecretDataType)
        self.requests: list[dict[str, str]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                split = urllib.parse.urlsplit(self.path)
                pairs = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
                length = int(self.headers.get("content-length") or 0)
                if length:
                    pairs += urllib.parse.parse_qsl(self.rfile.read(length).decode(), keep_blank_values=True)
                query = dict(pairs)
                action = self.headers.get("x-acs-action") or query.get("Action", "")
                version = self.headers.get("x-acs-version") or query.get("Version", "")
                endpoint.requests.append({"action": action, "version": version, **query})
                status, body = endpoint.answer(
                    action, version, self.headers.get("authorization") or "", query
                )
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json;charset=utf-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, action: str, version: str, authorization: str, query: dict[str, str]) -> tuple[int, Any]:
        def fault(status: int, code: str, message: str) -> tuple[int, Any]:
            return status, {"RequestId": "kms-local", "HostId": "kms.local", "Code": code, "Message": message}

        if action != "GetSecretValue" or version != KMS_API_VERSION:
            return fault(400, "InvalidAction.NotFound", f"{action} {version} is not served here")
        if f"Credential={KEY_ID}," not in authorization:
            return fault(403, "InvalidAccessKeyId.NotFound", "the access key id does not exist")
        name = query.get("SecretName", "")
        if name not in self.secrets:
            return fault(404, "Forbidden.ResourceNotFound", f"secret {name} does not exist")
        data, kind = self.secrets[name]
        return 200, {
            "RequestId": "kms-local",
            "SecretName": name,
            "SecretData": data,
            "SecretDataType": kind,
            "VersionId": "v1",
        }

    def __enter__(self) -> KmsEndpoint:
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def moto_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    with MotoEC2() as moto:
        yield moto.reset().url


def _aws(url: str) -> dict[str, str]:
    return {
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _store_in_secrets_manager(url: str, name: str, value: str) -> None:
    client = boto3.client(
        "secretsmanager",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_secret(Name=name, SecretString=value)


def test_secrets_manager_returns_the_value_and_names_a_missing_secret(moto_url: str) -> None:
    environ = _aws(moto_url)
    _store_in_secrets_manager(moto_url, "gpupool/relay-hmac", "s3cret")
    assert aws_secret(environ, "gpupool/relay-hmac") == "s3cret"
    with pytest.raises(SecretUnavailable, match="gpupool/none") as raised:
        aws_secret(environ, "gpupool/none")
    assert "s3cret" not in str(raised.value)
    with pytest.raises(SecretUnavailable, match="AWS_REGION"):
        aws_secret({}, "gpupool/relay-hmac")


def test_kms_returns_text_and_binary_secrets_and_refuses_what_it_should() -> None:
    secrets = {
        "gpupool/relay-hmac": ("s3cret", "text"),
        "gpupool/binary": (base64.b64encode(b"bytes-value").decode(), "binary"),
    }
    with KmsEndpoint(secrets) as kms:
        environ = {**ALIBABA, "GPUPOOL_KMS_ENDPOINT": kms.url}
        assert alibaba_secret(environ, "gpupool/relay-hmac") == "s3cret"
        assert alibaba_secret(environ, "gpupool/binary") == "bytes-value"
        assert (
            kms.requests[0]["action"] == "GetSecretValue"
            and kms.requests[0]["SecretName"] == "gpupool/relay-hmac"
        )
        with pytest.raises(SecretUnavailable, match=r"Forbidden\.ResourceNotFound") as raised:
            alibaba_secret(environ, "gpupool/none")
        assert "s3cret" not in str(raised.value)
        with pytest.raises(SecretUnavailable, match="InvalidAccessKeyId"):
            alibaba_secret({**environ, "ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAI-other"}, "gpupool/relay-hmac")
    with pytest.raises(SecretUnavailable, match="gpupool/relay-hmac"):
        kms_secret_data(
            "gpupool/relay-hmac", region="cn-hangzhou", credentials=None, endpoint="http://127.0.0.1:9"
        )
    with pytest.raises(SecretUnavailable, match="ALIBABA_CLOUD_REGION_ID"):
        alibaba_secret({}, "gpupool/relay-hmac")


def _signed(request: dict[str, Any], secret: str) -> dict[str, Any]:
    headers = sign_body(secret.encode(), request["body"].encode(), timestamp=int(time.time()))
    return {**request, "headers": {**request["headers"], **headers}}


def test_the_lambda_handler_checks_relay_calls_with_the_secret_from_secrets_manager(moto_url: str) -> None:
    _store_in_secrets_manager(moto_url, "gpupool/relay-hmac", "s3cret")
    app = _load(ROOT / "functions" / "bind" / "app.py", "gpupool_secrets_test_bind_app")
    environ = {
        **_aws(moto_url),
        "GPUPOOL_HTTP_AUTH": "hmac",
        "GPUPOOL_RELAY_HMAC_SECRET_ID": "gpupool/relay-hmac",
    }
    request = json.loads((ROOT / "events" / "aws" / "function-url-node-ready.json").read_text())
    service = StubService()
    handler = app.make_handler(DepsFactory(), service=lambda: service, environ=environ)
    assert handler(_signed(request, "s3cret"), None)["statusCode"] == 200
    assert handler(_signed(request, "another"), None)["statusCode"] == 401
    assert len(service.calls) == 1


def test_the_fc_handler_checks_relay_calls_with_the_secret_from_kms() -> None:
    app = _load(ROOT / "functions" / "compact" / "index.py", "gpupool_secrets_test_compact_index")
    request = json.loads((ROOT / "events" / "alibaba" / "fc-http-pool-manual-compaction.json").read_text())
    with KmsEndpoint({"gpupool/relay-hmac": ("s3cret", "text")}) as kms:
        environ = {**ALIBABA, "GPUPOOL_KMS_ENDPOINT": kms.url, "GPUPOOL_HTTP_AUTH": "hmac",
                   "GPUPOOL_RELAY_HMAC_SECRET_ID": "gpupool/relay-hmac"}  # fmt: skip
        service = StubService()
        handler = app.make_handler(DepsFactory(), service=lambda: service, environ=environ)
        assert handler(json.dumps(_signed(request, "another")).encode(), None)["statusCode"] == 401
        assert handler(json.dumps(_signed(request, "s3cret")).encode(), None)["statusCode"] == 200
        assert len(service.calls) == 1 and len(kms.requests) == 1  # read once, then cached


def test_a_kubeconfig_held_in_kms_reaches_the_api_server() -> None:
    with EmbeddedKubeAPI() as api:
        kubeconfig = Path(api.kubeconfig_path).read_text()
        with KmsEndpoint({"gpupool/kubeconfig": (kubeconfig, "text")}) as kms:
            environ = {**ALIBABA, "GPUPOOL_CLUSTER_NAME": "demo", "GPUPOOL_KMS_ENDPOINT": kms.url,
                       "GPUPOOL_KUBECONFIG_SECRET": "gpupool/kubeconfig"}  # fmt: skip
            deps = build_alibaba_deps(environ)
            assert deps.cluster.list_pools() == []
            assert deps.deliveries is not None
            assert (
                deps.deliveries.claim(
                    "k" * 40, holder="h", now=deps.clock.now(), hold_for=timedelta(minutes=1)
                )
                == "first"
            )
            missing = build_alibaba_deps({**environ, "GPUPOOL_KUBECONFIG_SECRET": "gpupool/none"})
            with pytest.raises(ConfigError, match="GPUPOOL_KUBECONFIG_SECRET=gpupool/none"):
                missing.cluster.list_pools()
