"""Which HTTP callers a function trusts: the deployment's relay authentication, and the one check.

Role: ``RelayAuth`` says how a deployment authenticates the relay's calls to a function's HTTP
entry point, in exactly one mode (``AUTH_MODES``):
- ``hmac``: the relay's own signature (``signature.signature_problem``) with the shared secret;
- ``aws-iam``: a Lambda Function URL with AuthType ``AWS_IAM``. Lambda checks the SigV4 signature
  (which covers the body) before the function runs and writes the caller into the request context
  (``HttpRequest.caller``); the function then accepts only the relay's principal (an IAM role,
  whose sessions call as ``arn:…:sts::<account>:assumed-role/<role>/<session>``, or an IAM user);
- ``fc-signature``: a Function Compute HTTP trigger with ``authType: function``. FC's gateway
  checks the relay's ACS3-HMAC-SHA256 signature before the function runs; that signature covers
  the ``x-acs-content-sha256`` header, which FC does not compare with the body, so the function
  does (``acs3.payload_problem``).
``request_problem(auth, request, now=...)`` is why a request must be refused, or None. It fails
closed: a deployment that configured nothing (no secret, no platform mode), or configured it
wrongly (``RelayAuth.refusing``), refuses every call.

Must not: read the environment, the clock or a secret store (the handler does), or log; a
``RelayAuth``'s repr never shows its secret.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, get_args

from gpupool.core.intake.acs3 import payload_problem
from gpupool.core.intake.envelope import HttpRequest
from gpupool.core.intake.signature import request_signature_problem

__all__ = ["AUTH_MODES", "AuthMode", "RelayAuth", "principal_matches", "request_problem"]

AuthMode = Literal["hmac", "aws-iam", "fc-signature"]
AUTH_MODES: tuple[AuthMode, ...] = get_args(AuthMode)

_NAME = r"[\w+=,.@-]+"
_ROLE = re.compile(rf"^arn:([a-z-]+):iam::(\d{{12}}):role/(?:[\x21-\x7e]*/)?({_NAME})$")
_ASSUMED_ROLE = re.compile(rf"^arn:([a-z-]+):sts::(\d{{12}}):assumed-role/({_NAME})/({_NAME})$")


@dataclass(frozen=True, slots=True)
class RelayAuth:
    """How one deployment authenticates the relay's HTTP calls (see the module docstring)."""

    mode: AuthMode | None
    hmac_secret: bytes = field(default=b"", repr=False)
    # aws-iam: the IAM role or user ARN the relay calls as.
    principal: str | None = None
    # Why this deployment's configuration cannot authenticate anyone: every call is refused.
    misconfigured: str | None = None

    @classmethod
    def refusing(cls, reason: str) -> RelayAuth:
        """A configuration that refuses every call, saying why."""
        return cls(mode=None, misconfigured=reason)


def principal_matches(principal: str, caller: str) -> bool:
    """Whether ``caller`` (as Lambda reports it) is ``principal``: the same ARN, or a session of
    the role ``principal`` names (same partition and account; a role's path is not in its session
    ARN)."""
    if not principal or not caller:
        return False
    if caller == principal:
        return True
    role, session = _ROLE.match(principal), _ASSUMED_ROLE.match(caller)
    if role is None or session is None:
        return False
    return role.groups() == session.groups()[:3]


def request_problem(auth: RelayAuth, request: HttpRequest, *, now: float) -> str | None:
    """Why ``request`` must be refused under ``auth``, or None when it may be acted on."""
    if auth.misconfigured is not None or auth.mode is None:
        return auth.misconfigured or "no relay authentication is configured: every HTTP call is refused"
    if auth.mode == "hmac":
        if not auth.hmac_secret:
            return "no relay HMAC secret is configured: every HTTP call is refused"
        return request_signature_problem(auth.hmac_secret, request, now=now)
    if auth.mode == "aws-iam":
        if not auth.principal:
            return "no relay principal is configured: every HTTP call is refused"
        if request.caller is None:
            return "the platform authenticated no caller (no IAM authorizer in the request context)"
        if not principal_matches(auth.principal, request.caller):
            return "the caller is not the relay's principal"
        return None
    return payload_problem(request)
