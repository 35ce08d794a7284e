"""Who may call the relay's `/api/*` routes on the Service port: the relay's audience and its routes.

Role: the relay's policy for `gpupool.adapters.kube.token_access.TokenAccess` (a TokenReview, then a
SubjectAccessReview for the non-resource URL and HTTP verb, the way kube-rbac-proxy and the
kubelet do): its token audience, `DEFAULT_AUDIENCE` (`gpupool-relay`: `kubectl create token SA
--audience gpupool-relay`) — a token made for the API server (any pod's own service-account
token, a user's kubeconfig token) is refused, so the relay never becomes a place where
credentials good for the API server are handed over — and `VIEWER_RULES`, the non-resource URLs
and verbs the chart's `gpupool-viewer` ClusterRole grants (`get` on `/api/allocation`, `post` on
`/api/simulate-schedule`). `TokenAccess` and `AccessDenied` are re-exported for the relay.

Must not: hold the review logic (token_access does) or log a token.
"""

from __future__ import annotations

from gpupool.adapters.kube.token_access import AccessDenied, TokenAccess

__all__ = ["DEFAULT_AUDIENCE", "VIEWER_RULES", "AccessDenied", "TokenAccess"]

# The non-resource URLs and verbs gpupool-viewer grants (the chart renders the same list).
VIEWER_RULES = (("/api/allocation", "get"), ("/api/simulate-schedule", "post"))
DEFAULT_AUDIENCE = "gpupool-relay"
