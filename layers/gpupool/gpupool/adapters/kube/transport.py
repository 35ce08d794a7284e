"""The HTTP the Kubernetes adapters send: requests on the official client's `ApiClient`, by path.

Role: `KubeTransport(api_client)` — `call(method, path, …) -> bytes` (the answer's body, read to
the end) and `open(…)` (the unread answer, for a watch's stream). Every request goes through the
`ApiClient`'s REST client — its connection pool, TLS and proxy settings — with the client's
default headers and its BearerToken auth (`Configuration.get_api_key_with_prefix`, which runs the
configuration's refresh hook: an EKS token is renewed there); an answer outside 2xx raises the
client's `ApiException` with its status, reason and body, as the generated methods do, so
`kube.errors` translates it the same way. Paths are the API's own (`core_path`, `group_path`).

Why not the generated API classes (CoreV1Api, CoordinationV1Api, CustomObjectsApi): the adapters
read raw JSON anyway, and importing those classes costs more than the rest of the client — client
37's `core_v1_api` module alone ~0.6 s at a function's cold start, its methods each wrapped in a
pydantic `validate_call` that also checks every call's arguments.

Must not: retry, translate errors, or parse a body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from kubernetes.client.exceptions import ApiException

__all__ = ["JSON", "KubeTransport", "Timeout", "core_path", "group_path"]

JSON = "application/json"
Timeout = float | tuple[float, float]


def _segments(*parts: str | None) -> str:
    return "".join(f"/{quote(part, safe='')}" for part in parts if part)


def core_path(
    plural: str, name: str | None = None, *, namespace: str | None = None, sub: str | None = None
) -> str:
    """`/api/v1[/namespaces/NS]/PLURAL[/NAME[/SUB]]`."""
    scope = _segments("namespaces", namespace) if namespace else ""
    return "/api/v1" + scope + _segments(plural, name, sub)


def group_path(
    group: str,
    version: str,
    plural: str,
    name: str | None = None,
    *,
    namespace: str | None = None,
    sub: str | None = None,
) -> str:
    """`/apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME[/SUB]]`."""
    scope = _segments("namespaces", namespace) if namespace else ""
    return f"/apis/{group}/{version}" + scope + _segments(plural, name, sub)


def _query_value(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


class KubeTransport:
    def __init__(self, api_client: Any) -> None:
        self._client = api_client
        self._configuration = api_client.configuration
        # Clients generated since 2025 (kubernetes 35+) answer with a wrapper and raise nothing;
        # the older generator's REST client raised for non-2xx and took `_preload_content`.
        self._legacy = not hasattr(api_client, "param_serialize")

    def _headers(self, accept: str | None, content_type: str | None) -> dict[str, str]:
        headers = {**getattr(self._client, "default_headers", {}), "Accept": accept or JSON}
        if content_type:
            headers["Content-Type"] = content_type
        # The kubeconfig loader and the EKS client keep the token under "BearerToken" (the
        # generated client's auth setting; older loaders wrote "authorization"): ask for both.
        token = self._configuration.get_api_key_with_prefix("BearerToken", alias="authorization")
        if token:
            headers["Authorization"] = token
        return headers

    def open(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, object] | None = None,
        body: Any = None,
        accept: str | None = None,
        content_type: str | None = None,
        timeout: Timeout,
    ) -> Any:
        """The answer, unread (a urllib3 response); ApiException when it is not 2xx."""
        pairs = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        url = self._configuration.host + path + (f"?{urlencode(pairs)}" if pairs else "")
        if body is not None and content_type is None:
            content_type = JSON
        headers = self._headers(accept, content_type)
        rest = self._client.rest_client
        if self._legacy:
            return rest.request(
                method, url, headers=headers, body=body, _preload_content=False, _request_timeout=timeout
            )
        answer = rest.request(method, url, headers=headers, body=body, _request_timeout=timeout)
        if not 200 <= answer.status <= 299:
            answer.read()
            raise ApiException(http_resp=answer)
        return answer.response

    def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, object] | None = None,
        body: Any = None,
        accept: str | None = None,
        content_type: str | None = None,
        timeout: Timeout,
    ) -> bytes:
        """The answer's body, read to the end (its connection goes back to the pool)."""
        response = self.open(
            method, path, query=query, body=body, accept=accept, content_type=content_type, timeout=timeout
        )
        try:
            data: bytes = response.data
        finally:
            response.release_conn()
        return data

    def call_json(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(self.call(method, path, **options))
        return decoded
