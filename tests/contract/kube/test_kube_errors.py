"""The Kubernetes error table: every HTTP status the adapter may meet becomes the intended domain error.

Covers: 404 NotFound, 409 AlreadyExists vs Conflict by the Status reason, 410 Conflict, 429 and
5xx Throttled (retryable), other 4xx PermanentError with the server's message, and an
unreachable API server → Throttled through a real KubeCluster call.
"""

from __future__ import annotations

import json
import socket

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from gpupool.adapters.kube.cluster import KubeCluster
from gpupool.adapters.kube.errors import translate_api_error
from gpupool.service.errors import (
    AlreadyExists,
    Conflict,
    DomainError,
    NotFound,
    PermanentError,
    Throttled,
)


def _error(status: int, reason: str = "", message: str = "the message") -> ApiException:
    error = ApiException(status=status, reason="HTTP reason")
    error.body = json.dumps({"kind": "Status", "reason": reason, "message": message, "code": status})
    return error


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (410, "Expired", Conflict),
        (429, "TooManyRequests", Throttled),
        (500, "InternalError", Throttled),
        (503, "ServiceUnavailable", Throttled),
        (504, "Timeout", Throttled),
        (400, "BadRequest", PermanentError),
        (401, "Unauthorized", PermanentError),
        (403, "Forbidden", PermanentError),
        (422, "Invalid", PermanentError),
        (418, "", PermanentError),
    ],
)
def test_status_table(status: int, reason: str, expected: type[DomainError]) -> None:
    translated = translate_api_error(_error(status, reason), action="patch GPUPool a")
    assert type(translated) is expected
    assert "the message" in translated.message and "patch GPUPool a" in translated.message
    assert translated.retryable == issubclass(expected, (Conflict, Throttled))


def test_body_that_is_not_json_keeps_the_http_reason() -> None:
    error = ApiException(status=403, reason="Forbidden")
    error.body = "<html>no</html>"
    translated = translate_api_error(error, action="list gpupools")
    assert isinstance(translated, PermanentError) and "Forbidden" in translated.message


def test_unreachable_api_server_is_throttled() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    configuration = k8s.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    configuration.retries = 0
    cluster = KubeCluster(k8s.ApiClient(configuration), request_timeout_s=2)
    with pytest.raises(Throttled, match="cannot reach"):
        cluster.list_pools()
