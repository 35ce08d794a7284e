"""Read one secret from Alibaba Cloud KMS (AWS's Secrets Manager: `aws.secrets_manager`).

Role: the functions keep no secret in a plaintext variable; a variable names the secret and this
reads its value on first use — `kms_secret_data` (KMS 2016-01-20 `GetSecretValue`, `SecretData`, base64
undone for a `binary` secret; the RPC call made by `alibabacloud-tea-openapi`'s own client, the
one the ECS SDK is built on, against `kms.<region>.aliyuncs.com` or the endpoint given). A
secret that cannot be read — missing, empty, not permitted, or the store unreachable — is a
`SecretUnavailable` naming the secret, never showing a value.

Must not: cache (the callers decide how long a value lives), log a value, or import an SDK at
module import.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from gpupool.adapters.environment import SecretUnavailable

if TYPE_CHECKING:
    from gpupool.adapters.alibaba.api import EcsCredentials

__all__ = ["KMS_API_VERSION", "SecretUnavailable", "kms_secret_data"]

KMS_API_VERSION = "2016-01-20"


def _kms_client(
    region: str, endpoint: str | None, credentials: EcsCredentials | None, timeout_s: float
) -> Any:
    from alibabacloud_tea_openapi.client import Client

    from gpupool.adapters.alibaba.api import openapi_config

    return Client(
        openapi_config("kms", region=region, endpoint=endpoint, credentials=credentials, timeout_s=timeout_s)
    )


def kms_secret_data(
    name: str,
    *,
    region: str,
    credentials: EcsCredentials | None,
    endpoint: str | None = None,
    timeout_s: float = 10.0,
) -> str:
    """The current value (`SecretData`) of KMS secret `name`; `credentials` None: the SDK's default chain."""
    from alibabacloud_tea_openapi.utils_models import OpenApiRequest, Params
    from darabonba.runtime import RuntimeOptions
    from Tea.exceptions import TeaException

    params = Params(
        action="GetSecretValue",
        version=KMS_API_VERSION,
        protocol="HTTPS",
        pathname="/",
        method="POST",
        auth_type="AK",
        style="RPC",
        req_body_type="formData",
        body_type="json",
    )
    try:
        client = _kms_client(region, endpoint, credentials, timeout_s)
        answer = client.call_api(
            params, OpenApiRequest(query={"SecretName": name}), RuntimeOptions(autoretry=False)
        )
    except TeaException as error:
        raise SecretUnavailable(f"KMS secret {name}: cannot read it: {error.code}: {error.message}") from None
    except (OSError, ValueError) as error:
        raise SecretUnavailable(f"KMS secret {name}: cannot reach KMS: {type(error).__name__}") from None
    body = answer.get("body") if isinstance(answer, dict) else None
    if not isinstance(body, dict) or not isinstance(body.get("SecretData"), str) or not body["SecretData"]:
        raise SecretUnavailable(f"KMS secret {name} has no SecretData")
    data: str = body["SecretData"]
    if body.get("SecretDataType") == "binary":
        try:
            return base64.b64decode(data, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise SecretUnavailable(f"KMS secret {name}: its binary SecretData is not UTF-8 text") from None
    return data
