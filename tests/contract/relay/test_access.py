"""Who may call /api/* on the Service port: each refusal of `TokenAccess`, against review answers shaped as
the official client returns them — no token, a token the API server does not know, one made for the API
server rather than the relay's audience, an audience-unaware authenticator, a user RBAC does not allow,
and a review that fails (503, the token never logged); and, with no audiences (the node agent's
/metrics default), the API server's own tokens count as the kubelet takes them."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from gpupool_incluster.relay.access import DEFAULT_AUDIENCE, TokenAccess


class FakeReviews:
    """TokenReview and SubjectAccessReview answers, and the review bodies the relay sent."""

    def __init__(
        self, *, audiences: list[str] | None, authenticated: bool = True, allowed: bool = True
    ) -> None:
        self.audiences, self.authenticated, self.allowed = audiences, authenticated, allowed
        self.sent: list[dict[str, Any]] = []
        self.fail: Exception | None = None

    def create_token_review(self, body: dict[str, Any], **options: Any) -> Any:
        assert 0 < options["_request_timeout"] < 10  # a hanging API server holds no caller for long
        self.sent.append(body)
        if self.fail is not None:
            raise self.fail
        user = SimpleNamespace(username="dave", groups=["viewers"], uid="u-1") if self.authenticated else None
        return SimpleNamespace(
            status=SimpleNamespace(authenticated=self.authenticated, user=user, audiences=self.audiences)
        )

    def create_subject_access_review(self, body: dict[str, Any], **options: Any) -> Any:
        assert 0 < options["_request_timeout"] < 10
        self.sent.append(body)
        return SimpleNamespace(status=SimpleNamespace(allowed=self.allowed))


def _access(reviews: FakeReviews, **options: Any) -> TokenAccess:
    access = TokenAccess(client.ApiClient(), **({"audiences": (DEFAULT_AUDIENCE,)} | options))
    access.authentication = reviews
    access.authorization = reviews
    return access


def test_a_token_made_for_the_relay_and_allowed_by_rbac_passes() -> None:
    reviews = FakeReviews(audiences=[DEFAULT_AUDIENCE])
    assert _access(reviews).check("Bearer good", "get", "/api/allocation") is None
    token_review, access_review = reviews.sent
    assert token_review["spec"] == {"token": "good", "audiences": [DEFAULT_AUDIENCE]}
    assert access_review["spec"]["nonResourceAttributes"] == {"path": "/api/allocation", "verb": "get"}


@pytest.mark.parametrize(
    ("authorization", "reviews", "status"),
    [
        ("", FakeReviews(audiences=[DEFAULT_AUDIENCE]), 401),
        ("Basic dXNlcjpwYXNz", FakeReviews(audiences=[DEFAULT_AUDIENCE]), 401),
        ("Bearer unknown", FakeReviews(audiences=None, authenticated=False), 401),
        # authenticated, but status.audiences empty: valid for the API server, not made for the relay
        ("Bearer kube-token", FakeReviews(audiences=None), 401),
        ("Bearer other", FakeReviews(audiences=["https://kubernetes.default.svc"]), 401),
        ("Bearer good", FakeReviews(audiences=[DEFAULT_AUDIENCE], allowed=False), 403),
    ],
    ids=["none", "basic", "unknown", "audience-unaware", "other-audience", "not-allowed"],
)
def test_each_refusal(authorization: str, reviews: FakeReviews, status: int) -> None:
    denied = _access(reviews).check(authorization, "get", "/api/allocation")
    assert denied is not None and denied.status == status
    if status == 403:
        assert denied.message == "dave may not get /api/allocation"
    if status == 401 and authorization.startswith("Bearer"):
        assert "audience gpupool-relay" in denied.message
        assert len(reviews.sent) == 1  # no SubjectAccessReview for a token that is not ours


def test_a_failed_review_is_a_503_and_the_token_is_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    reviews = FakeReviews(audiences=[DEFAULT_AUDIENCE])
    reviews.fail = ConnectionError("api server gone; token=secret-token-value")
    with caplog.at_level(logging.DEBUG):
        denied = _access(reviews).check("Bearer secret-token-value", "get", "/api/allocation")
    assert denied is not None and denied.status == 503
    assert "secret-token-value" not in caplog.text and "ConnectionError" in caplog.text


def test_audiences_are_configurable_and_never_empty() -> None:
    reviews = FakeReviews(audiences=["relay.example"])
    assert _access(reviews, audiences=("relay.example",)).check("Bearer t", "get", "/api/allocation") is None
    assert reviews.sent[0]["spec"]["audiences"] == ["relay.example"]
    for bad in ((), ("",)):
        with pytest.raises(ValueError, match="non-empty token audience"):
            TokenAccess(client.ApiClient(), audiences=bad)


def test_without_audiences_the_api_servers_own_tokens_count_as_the_kubelet_takes_them() -> None:
    """The node agent's /metrics default (None): no audiences asked, the API server's tokens count."""
    reviews = FakeReviews(audiences=["https://kubernetes.default.svc"])
    assert _access(reviews, audiences=None).check("Bearer prometheus", "get", "/metrics") is None
    token_review, access_review = reviews.sent
    assert token_review["spec"] == {"token": "prometheus"}
    assert access_review["spec"]["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
    unknown = _access(FakeReviews(audiences=None, authenticated=False), audiences=None)
    denied = unknown.check("Bearer forged", "get", "/metrics")
    assert denied is not None and denied.status == 401 and "API server" in denied.message
    not_allowed = _access(FakeReviews(audiences=None, allowed=False), audiences=None)
    denied = not_allowed.check("Bearer dave", "get", "/metrics")
    assert denied is not None and denied.status == 403
