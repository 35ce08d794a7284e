"""Who holds a bearer token and whether they may make a request: a TokenReview, then a SubjectAccessReview.

Role: `TokenAccess.check(authorization, verb, path)` asks the API server a TokenReview (who is
this token, and was it made for us?) and then a SubjectAccessReview for the non-resource URL and
HTTP verb (may they?), the way kube-rbac-proxy and the kubelet authenticate and authorise their
callers. `audiences` says which tokens count: a tuple names the audiences the TokenReview asks
for, and a token counts only when the review's `status.audiences` holds one of them (a token made
for the API server is then refused); None asks for the API server's own audiences (what the
kubelet and kube-rbac-proxy accept by default: a pod's service-account token). Missing / unknown /
wrong-audience token → 401, known but not allowed → 403, review failed or not answered within
`timeout` seconds → 503 (a hanging API server holds a caller that long, never a thread forever).
Answers are cached for `ttl` seconds per (token digest, verb, path) so a busy client does not
cost two API calls per request. Used by the relay's `/api/*` (`relay/access.py`) and the node
agent's `/metrics` (`agent/metrics_http.py`).

Must not: log or keep a token (only its SHA-256 digest is a cache key), or decide anything else.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client as _client

__all__ = ["AccessDenied", "TokenAccess"]

log = logging.getLogger("gpupool.token_access")
client: Any = _client


@dataclass(frozen=True, slots=True)
class AccessDenied:
    status: int
    message: str


def _bearer(authorization: str) -> str:
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class TokenAccess:
    def __init__(
        self, api: Any, *, audiences: tuple[str, ...] | None, ttl: float = 10.0, timeout: float = 5.0
    ) -> None:
        if audiences is not None and (not audiences or not all(a.strip() for a in audiences)):
            raise ValueError("name at least one non-empty token audience (or None for the API server's)")
        self.authentication = client.AuthenticationV1Api(api)
        self.authorization = client.AuthorizationV1Api(api)
        self.audiences = audiences
        self.ttl = ttl
        self.timeout = timeout
        self._cache: dict[tuple[str, str, str], tuple[float, AccessDenied | None]] = {}
        self._lock = threading.Lock()

    def check(self, authorization: str, verb: str, path: str) -> AccessDenied | None:
        """None when allowed; otherwise the status and one line to answer with."""
        token = _bearer(authorization)
        if not token:
            return AccessDenied(401, "a bearer token is required (Authorization: Bearer ...)")
        key = (hashlib.sha256(token.encode()).hexdigest(), verb, path)
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached[0] > now:
                return cached[1]
        try:
            verdict = self._review(token, verb, path)
        except Exception as exc:
            log.warning("token or access review failed: %s", type(exc).__name__)
            return AccessDenied(503, "cannot review the token now; retry")
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = (now + self.ttl, verdict)
        return verdict

    def _review(self, token: str, verb: str, path: str) -> AccessDenied | None:
        spec: dict[str, Any] = {"token": token}
        if self.audiences is not None:
            spec["audiences"] = list(self.audiences)
        review = self.authentication.create_token_review({"spec": spec}, _request_timeout=self.timeout)
        status = review.status
        if self.audiences is None:
            refused = AccessDenied(401, "the token is not valid for the API server")
        else:
            refused = AccessDenied(
                401, f"the token is not valid for this service (audience {self.audiences[0]})"
            )
        if status is None or not status.authenticated or status.user is None:
            return refused
        if self.audiences is not None and not set(status.audiences or ()) & set(self.audiences):
            return refused  # empty status.audiences: valid for the API server, not made for us
        user = status.user
        access = self.authorization.create_subject_access_review(
            {
                "spec": {
                    "user": user.username,
                    "groups": list(user.groups or []),
                    "uid": user.uid,
                    "nonResourceAttributes": {"path": path, "verb": verb},
                }
            },
            _request_timeout=self.timeout,
        )
        if access.status is None or not access.status.allowed:
            return AccessDenied(403, f"{user.username} may not {verb} {path}")
        return None
