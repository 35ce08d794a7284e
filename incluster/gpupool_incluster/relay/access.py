"""Who may call the relay's `/api/*` routes on the Service port: a bearer token the API server vouches for.

Role: `TokenAccess.check(authorization, verb, path)` asks the API server a TokenReview (who is
this token, and was it made for us?) and then a SubjectAccessReview for the non-resource URL and
HTTP verb (may they?), the way kube-rbac-proxy and the kubelet do; the chart's `gpupool-viewer`
ClusterRole grants `get` on `/api/allocation` and `post` on `/api/simulate-schedule`. The
TokenReview names the relay's `audiences` (default `gpupool-relay`: `kubectl create token SA
--audience gpupool-relay`), and a token counts only when the review's `status.audiences` holds one
of them — so a token made for the API server (any pod's own service-account token, a user's
kubeconfig token) is refused: the relay never becomes a place where credentials good for the API
server are handed over. Missing / unknown / wrong-audience token → 401, known but not allowed →
403, review failed → 503. Answers are cached for `ttl` seconds per (token digest, verb, path) so a
busy client does not cost two API calls per request.

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

__all__ = ["DEFAULT_AUDIENCE", "VIEWER_RULES", "AccessDenied", "TokenAccess"]

log = logging.getLogger("gpupool.relay.access")
client: Any = _client
# The non-resource URLs and verbs gpupool-viewer grants (the chart renders the same list).
VIEWER_RULES = (("/api/allocation", "get"), ("/api/simulate-schedule", "post"))
DEFAULT_AUDIENCE = "gpupool-relay"


@dataclass(frozen=True, slots=True)
class AccessDenied:
    status: int
    message: str


def _bearer(authorization: str) -> str:
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class TokenAccess:
    def __init__(
        self, api: Any, *, audiences: tuple[str, ...] = (DEFAULT_AUDIENCE,), ttl: float = 10.0
    ) -> None:
        if not audiences or not all(a.strip() for a in audiences):
            raise ValueError("the relay's API needs at least one non-empty token audience")
        self.authentication = client.AuthenticationV1Api(api)
        self.authorization = client.AuthorizationV1Api(api)
        self.audiences = audiences
        self.ttl = ttl
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
        review = self.authentication.create_token_review(
            {"spec": {"token": token, "audiences": list(self.audiences)}}
        )
        status = review.status
        refused = AccessDenied(401, f"the token is not valid for this relay (audience {self.audiences[0]})")
        if status is None or not status.authenticated or status.user is None:
            return refused
        if not set(status.audiences or ()) & set(self.audiences):
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
            }
        )
        if access.status is None or not access.status.allowed:
            return AccessDenied(403, f"{user.username} may not {verb} {path}")
        return None
