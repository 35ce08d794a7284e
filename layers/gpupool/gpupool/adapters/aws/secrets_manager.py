"""Read one secret from AWS Secrets Manager (Alibaba Cloud's KMS: `alibaba.kms`).

Role: the functions keep no secret in a plaintext variable; a variable names the secret and
`aws_secret_string` reads its `SecretString` (`GetSecretValue`) on first use, through the
functions' `AwsSession`. A secret that cannot be read — missing, empty, not permitted, or the
store unreachable — is a `SecretUnavailable` naming the secret, never showing a value.

Must not: cache (the callers decide how long a value lives), log a value, or import botocore at
module import.
"""

from __future__ import annotations

from typing import Any

from gpupool.adapters.environment import SecretUnavailable

__all__ = ["SecretUnavailable", "aws_secret_string"]


def aws_secret_string(session: Any, secret_id: str, *, endpoint_url: str | None = None) -> str:
    """The `SecretString` of Secrets Manager secret `secret_id`, through `session` (an `AwsSession`)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client = session.client("secretsmanager", endpoint_url=endpoint_url)
        content = client.get_secret_value(SecretId=secret_id).get("SecretString")
    except (ClientError, BotoCoreError) as error:
        raise SecretUnavailable(f"Secrets Manager secret {secret_id}: cannot read it: {error}") from None
    if not content:
        raise SecretUnavailable(f"Secrets Manager secret {secret_id} has no SecretString")
    return str(content)
