"""A create-only kind (how access reviews plug in): one ResourceType with `verbs=("create",)`
and one entry in `endpoints.CREATE_ONLY_HANDLERS`. A POST is answered by the handler (201) and
stores nothing; every other verb is 405; discovery lists only `create`."""

from __future__ import annotations

from typing import Any

import pytest
from kubeapi_builders import http_call

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, endpoints
from gpupool.sandbox.kubeapi.operations import ApiOperations
from gpupool.sandbox.kubeapi.resources import ResourceType

REVIEWS = ResourceType(
    "review.gpupool.dev",
    "v1",
    "echoreviews",
    "EchoReview",
    "echoreview",
    False,
    has_status=False,
    verbs=("create",),
)
PATH = "/apis/review.gpupool.dev/v1/echoreviews"


def _echo(_cluster: ApiOperations, _rt: ResourceType, request: endpoints.Request) -> dict[str, Any]:
    return {**request.body, "status": {"allowed": True}}


@pytest.fixture
def with_reviews(kube_api: EmbeddedKubeAPI, monkeypatch: pytest.MonkeyPatch) -> EmbeddedKubeAPI:
    kube_api.cluster.registry.install("echoreviews.review.gpupool.dev", [REVIEWS])
    monkeypatch.setitem(endpoints.CREATE_ONLY_HANDLERS, ("review.gpupool.dev", "echoreviews"), _echo)
    return kube_api


def test_a_post_is_answered_and_nothing_is_stored(with_reviews: EmbeddedKubeAPI) -> None:
    before = with_reviews.cluster.store.resource_version
    body = {"apiVersion": "review.gpupool.dev/v1", "kind": "EchoReview", "spec": {"verb": "get"}}
    status, answer, _ = http_call(with_reviews.port, "POST", PATH, body)
    assert (status, answer["status"], answer["spec"]) == (201, {"allowed": True}, {"verb": "get"})
    assert with_reviews.cluster.store.resource_version == before


def test_other_verbs_are_refused_and_discovery_says_create(with_reviews: EmbeddedKubeAPI) -> None:
    status, answer, _ = http_call(with_reviews.port, "GET", PATH)
    assert (status, answer["reason"]) == (405, "MethodNotAllowed")
    resources = http_call(with_reviews.port, "GET", "/apis/review.gpupool.dev/v1")[1]["resources"]
    assert [(r["name"], r["verbs"]) for r in resources] == [("echoreviews", ["create"])]
