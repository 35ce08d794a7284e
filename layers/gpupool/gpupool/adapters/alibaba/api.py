"""How `EcsCompute` talks to ECS: one `call(action, params) -> dict` seam, and that seam on the real SDK.

Role: `EcsApi` is the protocol (ECS API action name, parameter map by the API's own names →
the response body as a JSON map); `SdkEcsApi` implements it on `alibabacloud-ecs20140526`
7.x: the parameter map becomes the SDK's request model (`<Action>Request.from_map`), the
SDK signs and sends it, and its Tea exceptions become `EcsApiError` (code, message, HTTP
status; an empty code for a transport failure). `sdk_client` builds the SDK client from
explicit credentials or `alibabacloud-credentials`' default chain, for an endpoint or a
region. The SDK is imported only when a client is built (it costs ~0.6 s to import).

Must not: retry (the adapter's one policy does), log credentials, or decide anything.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gpupool.adapters.alibaba.errors import EcsApiError

__all__ = ["ACTIONS", "EcsApi", "EcsCredentials", "SdkEcsApi", "openapi_config", "sdk_client"]

# ECS API action → the SDK 7.x method that sends it (request model: `<Action>Request`).
ACTIONS: dict[str, str] = {
    "RunInstances": "run_instances_with_options",
    "DescribeInstances": "describe_instances_with_options",
    "DeleteInstances": "delete_instances_with_options",
    "DescribeVSwitches": "describe_vswitches_with_options",
    "DescribeSecurityGroups": "describe_security_groups_with_options",
    "DescribeImages": "describe_images_with_options",
    "DescribeRegions": "describe_regions_with_options",
    "DescribeUserData": "describe_user_data_with_options",
    # Live offerings and prices (alibaba.pricing).
    "DescribeAvailableResource": "describe_available_resource_with_options",
    "DescribePrice": "describe_price_with_options",
    "DescribeSpotPriceHistory": "describe_spot_price_history_with_options",
}


class EcsApi(Protocol):
    def call(self, action: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Send one ECS API request; the response body as a map. Raises EcsApiError."""
        ...


@dataclass(frozen=True, repr=False)
class EcsCredentials:
    """An AccessKey pair, with the STS token when it is temporary. Its repr never shows them."""

    access_key_id: str
    access_key_secret: str
    security_token: str | None = None

    def __repr__(self) -> str:
        return "EcsCredentials(<hidden>)"


def openapi_config(
    product: str,
    *,
    region: str,
    endpoint: str | None,
    credentials: EcsCredentials | None,
    timeout_s: float,
) -> Any:
    """The Tea OpenAPI `Config` of an Alibaba Cloud product's client (`product` names its endpoint,
    `<product>.<region>.aliyuncs.com`, unless `endpoint` is given): `credentials` when given, else
    the default chain of `alibabacloud-credentials` (environment, profile file, ECS RAM role, OIDC)."""
    from alibabacloud_tea_openapi.utils_models import Config

    config = Config(
        region_id=region,
        endpoint=endpoint or f"{product}.{region}.aliyuncs.com",
        read_timeout=int(timeout_s * 1000),
        connect_timeout=int(min(timeout_s, 5.0) * 1000),
    )
    if credentials is not None:
        config.access_key_id = credentials.access_key_id
        config.access_key_secret = credentials.access_key_secret
        config.security_token = credentials.security_token
    else:
        from alibabacloud_credentials.client import Client as CredentialClient

        config.credential = CredentialClient()
    return config


def sdk_client(
    *,
    region: str,
    endpoint: str | None = None,
    credentials: EcsCredentials | None = None,
    timeout_s: float = 20.0,
) -> Any:
    """An `alibabacloud_ecs20140526.client.Client` (credentials as `openapi_config` takes them)."""
    from alibabacloud_ecs20140526.client import Client

    return Client(
        openapi_config("ecs", region=region, endpoint=endpoint, credentials=credentials, timeout_s=timeout_s)
    )


class SdkEcsApi:
    """`EcsApi` on an `alibabacloud_ecs20140526` client (see `sdk_client`).

    `client_for(credentials)` builds a client; `credentials()` says which to use now (None: the
    default chain). A client is built on first use and again only when the credentials change,
    as Function Compute's STS credentials do while an instance lives.
    """

    def __init__(
        self,
        client_for: Callable[[EcsCredentials | None], Any],
        credentials: Callable[[], EcsCredentials | None] = lambda: None,
    ) -> None:
        self._client_for = client_for
        self._credentials = credentials
        self._lock = threading.Lock()
        self._current: tuple[EcsCredentials | None, Any] | None = None

    @classmethod
    def on(cls, client: Any) -> SdkEcsApi:
        """On one ready client."""
        return cls(lambda _credentials: client)

    def _client(self) -> Any:
        wanted = self._credentials()
        with self._lock:
            if self._current is None or self._current[0] != wanted:
                self._current = (wanted, self._client_for(wanted))
            return self._current[1]

    def call(self, action: str, params: Mapping[str, Any]) -> dict[str, Any]:
        from alibabacloud_ecs20140526 import models
        from darabonba.runtime import RuntimeOptions
        from Tea.exceptions import TeaException

        method_name = ACTIONS.get(action)
        if method_name is None:
            raise EcsApiError("UnsupportedOperation", f"gpupool does not call ECS {action}", status=400)
        request = getattr(models, f"{action}Request")().from_map(dict(params))
        method = getattr(self._client(), method_name)
        try:
            response = method(request, RuntimeOptions(autoretry=False))
        except TeaException as error:
            status = getattr(error, "status_code", None) or getattr(error, "statusCode", None) or 0
            code = str(error.code or "")  # none for a wrapped transport failure
            message = str(error.message or error)
            raise EcsApiError(code, message, status=int(status)) from None
        except (OSError, ValueError) as error:  # connection refused, timeouts, unreadable answers
            raise EcsApiError("", f"{type(error).__name__}: {error}") from None
        body: dict[str, Any] = response.body.to_map() if response.body is not None else {}
        return body
