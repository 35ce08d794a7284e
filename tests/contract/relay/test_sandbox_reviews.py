"""The sandbox's TokenReview (audiences as kube-apiserver checks them) / SubjectAccessReview /
SelfSubjectAccessReview, through the official client,
the relay's `/readyz` and route groups (a listener serves only the groups it is given), and its
reaction to a renewed certificate file (the server ends, so the kubelet restarts it on the new pair).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client, config
from starlette.testclient import TestClient

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.kubeapi.reviews import ReviewBook, book_of
from gpupool_incluster.relay.app import create_app
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.metrics import RelayMetrics

RULES = [
    {"nonResourceURLs": ["/api/allocation"], "verbs": ["get"]},
    {"apiGroups": ["tensor-fusion.ai"], "resources": ["gpupools"], "verbs": ["get", "list"]},
]


@pytest.fixture
def sandbox() -> Any:
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        book = book_of(api.cluster)
        book.add_token("carol-token", "carol", ["team-a"])
        book.bind([{"kind": "Group", "name": "team-a"}], RULES)
        book.bind(
            [{"kind": "ServiceAccount", "name": "relay", "namespace": "gpupool"}],
            [{"nonResourceURLs": ["/api/*"], "verbs": ["*"]}],
        )
        try:
            yield api, api_client
        finally:
            api_client.close()


def test_token_review_knows_only_the_sandbox_tokens(sandbox: Any) -> None:
    _, api_client = sandbox
    authn = client.AuthenticationV1Api(api_client)
    known = authn.create_token_review({"spec": {"token": "carol-token"}})
    assert known.status.authenticated and known.status.user.username == "carol"
    assert set(known.status.user.groups) == {"team-a", "system:authenticated"}
    unknown = authn.create_token_review({"spec": {"token": "forged"}})
    assert not unknown.status.authenticated and unknown.status.user is None


def _sar(api_client: Any, **spec: Any) -> bool:
    review = client.AuthorizationV1Api(api_client).create_subject_access_review({"spec": spec})
    return bool(review.status.allowed)


def test_subject_access_review_evaluates_the_bound_rules(sandbox: Any) -> None:
    _, api_client = sandbox
    path = {"path": "/api/allocation", "verb": "get"}
    assert _sar(api_client, user="carol", groups=["team-a"], nonResourceAttributes=path)
    assert not _sar(api_client, user="carol", groups=["team-b"], nonResourceAttributes=path)
    assert not _sar(
        api_client, user="carol", groups=["team-a"], nonResourceAttributes=path | {"verb": "post"}
    )
    pools = {"group": "tensor-fusion.ai", "resource": "gpupools", "verb": "list"}
    assert _sar(api_client, user="x", groups=["team-a"], resourceAttributes=pools)
    assert not _sar(api_client, user="x", groups=["team-a"], resourceAttributes=pools | {"verb": "delete"})
    relay = "system:serviceaccount:gpupool:relay"
    assert _sar(
        api_client, user=relay, nonResourceAttributes={"path": "/api/simulate-schedule", "verb": "post"}
    )


def test_self_subject_access_review_uses_the_callers_token(sandbox: Any) -> None:
    api, _ = sandbox
    configuration = client.Configuration()
    configuration.host = api.url
    configuration.api_key = {"authorization": "Bearer carol-token"}
    with client.ApiClient(configuration) as as_carol:
        review = client.AuthorizationV1Api(as_carol).create_self_subject_access_review(
            {"spec": {"nonResourceAttributes": {"path": "/api/allocation", "verb": "get"}}}
        )
    assert review.status.allowed


def test_a_malformed_review_is_a_400_and_changes_nothing(sandbox: Any) -> None:
    _, api_client = sandbox
    with pytest.raises(client.exceptions.ApiException) as caught:
        client.AuthorizationV1Api(api_client).create_subject_access_review(
            {"spec": {"nonResourceAttributes": {"path": "/x", "verb": "get"}}}
        )
    assert caught.value.status == 400
    with pytest.raises(ValueError, match="non-empty"):
        ReviewBook().add_token("", "nobody")


class _NoWrites:
    def read_pod(self, namespace: str, name: str) -> dict[str, Any]:
        raise AssertionError("no writes expected")

    annotate_pod = bind_pod = read_pod  # type: ignore[assignment]


def test_readyz_is_503_until_synced_and_each_listener_serves_only_its_routes() -> None:
    hub = SchedulerHub(_NoWrites())  # type: ignore[arg-type]
    synced = {"done": False}
    app = create_app(
        hub, surfaces={"webhook", "health"}, metrics=RelayMetrics(), ready=lambda: synced["done"]
    )
    with TestClient(app) as http:
        assert http.get("/readyz").status_code == 503
        assert http.get("/healthz").status_code == 200  # liveness does not wait for the caches
        synced["done"] = True
        assert http.get("/readyz").status_code == 200
        assert http.post("/scheduler/bind", json={}).status_code == 404
        assert http.get("/api/allocation").status_code == 404
        assert http.get("/metrics").status_code == 404
    with pytest.raises(ValueError, match="unknown relay surfaces"):
        create_app(hub, surfaces={"everything"})


def test_a_renewed_certificate_ends_the_server_so_the_pod_restarts_on_it(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import threading
    import types

    from gpupool_incluster.relay import serve

    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_text("old")
    key.write_text("old")
    monkeypatch.setattr(serve, "CERT_POLL_SECONDS", 0.05)
    server = types.SimpleNamespace(should_exit=False)
    stop = threading.Event()
    watcher = threading.Thread(target=serve._watch_certificate, args=(cert, key, server, stop), daemon=True)
    watcher.start()
    try:
        watcher.join(0.3)
        assert watcher.is_alive() and not server.should_exit  # unchanged files: keep serving
        cert.write_text("renewed")
        os.utime(cert, (cert.stat().st_atime, cert.stat().st_mtime + 10))
        watcher.join(5)
        assert server.should_exit and not watcher.is_alive()
    finally:
        stop.set()


def test_token_review_checks_audiences_as_kube_apiserver_does(sandbox: Any) -> None:
    api, api_client = sandbox
    book_of(api.cluster).add_token("relay-token", "dave", audiences=["gpupool-relay"])
    authn = client.AuthenticationV1Api(api_client)
    # no spec.audiences: the API server's own, which a token made for the relay does not carry
    plain = authn.create_token_review({"spec": {"token": "relay-token"}})
    assert not plain.status.authenticated and "invalid for the target audiences" in plain.status.error
    asked = authn.create_token_review({"spec": {"token": "relay-token", "audiences": ["x", "gpupool-relay"]}})
    assert asked.status.authenticated and asked.status.audiences == ["gpupool-relay"]
    # carol's token was made for the API server: valid without audiences, refused for the relay's
    carol = authn.create_token_review({"spec": {"token": "carol-token"}})
    assert carol.status.authenticated and carol.status.audiences == ["https://kubernetes.default.svc"]
    for_relay = authn.create_token_review({"spec": {"token": "carol-token", "audiences": ["gpupool-relay"]}})
    assert not for_relay.status.authenticated and for_relay.status.user is None
