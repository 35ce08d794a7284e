"""Where gpupool's ECS calls get their Alibaba Cloud credentials from, in order.

Role: inside Function Compute, the function role's STS credentials FC hands each invocation
(`context.credentials`: access_key_id, access_key_secret, security_token); in the relay or
agent, the files of the Secret `tf-cloud-vendor-credentials` (keys `ak` and `sk`, mounted at
`/tmp/secret` as TensorFusion's chart does — read from there when both files exist — or
where GPUPOOL_ALIBABA_ACCESS_KEY_PATH / GPUPOOL_ALIBABA_SECRET_KEY_PATH say); elsewhere the
variables of `alibabacloud-credentials` (ALIBABA_CLOUD_ACCESS_KEY_ID,
ALIBABA_CLOUD_ACCESS_KEY_SECRET, ALIBABA_CLOUD_SECURITY_TOKEN); and when none of these is
there, None: the SDK's own default chain (profile file, ECS RAM role, OIDC).

Must not: log or print a credential, put one in an exception message, or read `os.environ`
(callers pass the mapping).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gpupool.adapters.alibaba.api import EcsCredentials

__all__ = [
    "ACCESS_KEY_PATH_VARIABLE",
    "SECRET_KEY_PATH_VARIABLE",
    "CredentialsError",
    "from_environment",
    "from_fc_context",
    "from_files",
]

ACCESS_KEY_PATH_VARIABLE = "GPUPOOL_ALIBABA_ACCESS_KEY_PATH"
SECRET_KEY_PATH_VARIABLE = "GPUPOOL_ALIBABA_SECRET_KEY_PATH"
# Where TensorFusion's chart mounts the Secret tf-cloud-vendor-credentials (keys `ak`, `sk`).
SECRET_MOUNT = Path("/tmp/secret")  # the chart's mount point, not a temp file


class CredentialsError(ValueError):
    """Credentials named but unusable (a missing or empty file); the message names the path, never a value."""


def from_fc_context(context: object) -> EcsCredentials | None:
    """The STS credentials Function Compute passes in `context.credentials`, when complete."""
    given = getattr(context, "credentials", None)
    key_id = getattr(given, "access_key_id", None) or getattr(given, "accessKeyId", None)
    secret = getattr(given, "access_key_secret", None) or getattr(given, "accessKeySecret", None)
    token = getattr(given, "security_token", None) or getattr(given, "securityToken", None)
    if isinstance(key_id, str) and key_id and isinstance(secret, str) and secret:
        return EcsCredentials(key_id, secret, token if isinstance(token, str) and token else None)
    return None


def _read(path: Path) -> str:
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise CredentialsError(f"cannot read the credential file {path}: {error.strerror}") from None
    if not value:
        raise CredentialsError(f"the credential file {path} is empty")
    return value


def from_files(environ: Mapping[str, str], *, mount: Path = SECRET_MOUNT) -> EcsCredentials | None:
    """The `ak` / `sk` files named by the two path variables; when neither is set, those of the
    Secret's mount (`/tmp/secret/ak` and `sk`) if both exist; else None."""
    access_path = environ.get(ACCESS_KEY_PATH_VARIABLE)
    secret_path = environ.get(SECRET_KEY_PATH_VARIABLE)
    if not access_path and not secret_path:
        if (mount / "ak").is_file() and (mount / "sk").is_file():
            return EcsCredentials(_read(mount / "ak"), _read(mount / "sk"))
        return None
    if not access_path or not secret_path:
        raise CredentialsError(
            f"set both {ACCESS_KEY_PATH_VARIABLE} and {SECRET_KEY_PATH_VARIABLE}, or neither"
        )
    return EcsCredentials(_read(Path(access_path)), _read(Path(secret_path)))


def from_environment(environ: Mapping[str, str], *, mount: Path = SECRET_MOUNT) -> EcsCredentials | None:
    """Files first (the relay's Secret), then the variables `alibabacloud-credentials` reads; else None."""
    files = from_files(environ, mount=mount)
    if files is not None:
        return files
    key_id = environ.get("ALIBABA_CLOUD_ACCESS_KEY_ID")
    secret = environ.get("ALIBABA_CLOUD_ACCESS_KEY_SECRET")
    if key_id and secret:
        return EcsCredentials(key_id, secret, environ.get("ALIBABA_CLOUD_SECURITY_TOKEN") or None)
    return None
