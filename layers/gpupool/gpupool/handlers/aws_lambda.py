"""The Lambda flavour of the shared handler body (launch, bind, compact).

Role: read the Lambda event with ``intake_aws`` (EventBridge events, schedules, Function URL
requests carrying the relay's CloudEvents — intake tells which, and decodes a request's body)
and hand it to ``gpupool.handlers.common``, whose body maps outcomes: retryable → raise (Lambda
retries, then the on-failure SQS destination); permanent → logged and acknowledged; on the
Function URL → HTTP 200 / 400 / 401 / 503. Relay calls are trusted as
``gpupool.handlers.relay_auth`` reads the environment: ``aws-iam`` (the Function URL's AuthType
AWS_IAM, the caller the relay's principal) or ``hmac`` (the secret from Secrets Manager,
GPUPOOL_RELAY_HMAC_SECRET_ID); nothing configured refuses every call.
``functions/<name>/app.py`` binds it to one function: ``make_handler = partial(make_handler,
"launch")``, ``handler = make_handler()``.

Init: where Lambda runs the init phase off a request's path — SnapStart (the phase runs once,
when a version is published, and its memory is snapshotted) and provisioned concurrency — it says
so in ``AWS_LAMBDA_INITIALIZATION_TYPE`` (``snap-start`` / ``provisioned-concurrency``), and
``make_handler`` then imports the function's service and the adapters' modules (botocore, the
kubernetes client) at init (``PRELOADED``), and builds the models they define: what an
on-demand cold start imports and builds at its first event is in the snapshot instead. Clients
and credentials are still made at the first event (SnapStart: a snapshot must not hold
credentials or connections).

Must not: decide anything, talk to AWS or Kubernetes itself, or import botocore / kubernetes at
module import of an on-demand function (``gpupool.adapters.aws.wiring`` is imported when the first
real event needs deps).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gpupool.core.deferred_model import build_imported_models
from gpupool.core.intake.aws import intake_aws
from gpupool.core.intake.envelope import Intake
from gpupool.core.intake.routing import FunctionName
from gpupool.handlers.common import SERVICE_ENTRIES, Handler, ServiceEntry, build_handler
from gpupool.handlers.relay_auth import RelayAuthReader

if TYPE_CHECKING:
    from gpupool.service.deps import Deps

__all__ = ["INIT_OFF_THE_REQUEST_PATH", "PRELOADED", "aws_deps", "make_handler", "preload"]

# AWS_LAMBDA_INITIALIZATION_TYPE values whose init phase no request waits for.
INIT_OFF_THE_REQUEST_PATH = frozenset({"snap-start", "provisioned-concurrency"})
# Imported by `preload`: what deps are built from (`gpupool.adapters.aws.wiring` imports them lazily).
PRELOADED = (
    "gpupool.adapters.aws.wiring",
    "gpupool.adapters.kube.cluster",
    "gpupool.adapters.kube.auth",
    "gpupool.adapters.aws.compute",
)


def preload(function: FunctionName) -> None:
    """Import the function's service and the adapters' modules now, and build the models they
    define (no client is built)."""
    import importlib

    SERVICE_ENTRIES[function]()
    for module in (*PRELOADED, "botocore.session", "kubernetes.config"):
        importlib.import_module(module)
    build_imported_models()


def aws_deps() -> Deps:
    """Deps for the real cloud, from the function's environment (imports botocore / kubernetes)."""
    from gpupool.adapters.aws.wiring import build_aws_deps

    return build_aws_deps(os.environ)


def _read_event(event: Any, function: FunctionName) -> Intake:
    return intake_aws(event, function=function)


def make_handler(
    function: FunctionName,
    deps_factory: Callable[[], Deps] = aws_deps,
    *,
    service: Callable[[], ServiceEntry] | None = None,
    dry_run: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Handler:
    """A Lambda handler whose deps come from ``deps_factory`` (called once, on first need) and
    whose relay authentication is read from ``environ`` (default: the process environment, read
    on every call).

    Tests and ``gpupool invoke`` pass fakes or sandbox-backed deps here; nothing is patched.
    """
    settings = os.environ if environ is None else environ
    if settings.get("AWS_LAMBDA_INITIALIZATION_TYPE") in INIT_OFF_THE_REQUEST_PATH:
        preload(function)

    def secret(secret_id: str) -> str:  # a Secrets Manager secret (imports botocore on first use)
        from gpupool.adapters.aws.wiring import aws_secret

        return aws_secret(settings, secret_id)

    reader = RelayAuthReader(platform="aws-iam", load_secret=secret)
    return build_handler(
        function,
        deps_factory,
        read_event=_read_event,
        relay_auth=lambda: reader.read(settings),
        service=service,
        dry_run=dry_run,
    )
