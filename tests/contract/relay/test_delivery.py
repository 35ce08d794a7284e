"""Delivery lanes against a local receiver: retries through an outage, every retried answer (5xx, 429,
401 / 403 among them) retried until accepted, an answer retrying cannot fix dead-lettered at once,
attempts capped then dead-lettered and counted, one stuck event not blocking its lane, a bounded
queue, retry-after honoured, and SigV4 checked by recomputing botocore's own signature.

The 30-second outage is the issue's acceptance figure; the back-off is shortened (0.05 s → 0.5 s)
so the test waits for the outage, not for a long back-off.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from botocore.credentials import Credentials

from gpupool.testing.relay_receiver import RelayReceiver
from gpupool_incluster.relay.changes import RelayEvent
from gpupool_incluster.relay.delivery import DeliveryLane, DeliverySettings
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.signing import make_signer, sigv4_signer

sys.path.insert(0, str(Path(__file__).parent))
from forward_builders import FAST_DELIVERY, SECRET, provisioned_node, rig, sample, wait_for


def _node_event(i: int) -> RelayEvent:
    return RelayEvent(kind="node.joined", id=f"uid-{i}-1", data={"node": f"n-{i}", "claim": f"c-{i}"})


def _lane(
    receiver: RelayReceiver, metrics: RelayMetrics, settings: DeliverySettings = FAST_DELIVERY
) -> DeliveryLane:
    lane = DeliveryLane(
        "bind", receiver.url("/bind"), make_signer("hmac", hmac_secret=SECRET), metrics, settings
    )
    lane.start()
    return lane


@pytest.mark.slow
def test_a_receiver_down_for_thirty_seconds_gets_every_event_once_it_recovers() -> None:
    outage_ends = time.monotonic() + 30.0

    def answer(event: dict[str, Any]) -> int:
        return 503 if time.monotonic() < outage_ends else 200

    with rig(answer=answer) as r:
        forwarder = r.forwarder()
        forwarder.start()
        try:
            wait_for(forwarder.synced, "the forwarder's watches to sync")
            for i in range(20):
                r.create("nodes", provisioned_node(f"n-{i}", f"claim-{i}"))
                time.sleep(0.5)
            assert time.monotonic() < outage_ends and not r.receiver.received
            wait_for(lambda: len(r.receiver.received) == 20, "every node.joined after the outage", timeout=45)
            assert time.monotonic() >= outage_ends
            assert sorted(e["data"]["node"] for e in r.receiver.events("/bind")) == sorted(
                f"n-{i}" for i in range(20)
            )
            assert r.receiver.answered[503] >= 20
            failed = sample(
                r.metrics,
                "gpupool_relay_delivery_failures_total",
                type="node.joined",
                function="bind",
                reason="503",
            )
            assert failed == r.receiver.answered[503]
            # The receiver records an event before the relay has read its 200 and counted it.
            wait_for(
                lambda: (
                    sample(
                        r.metrics, "gpupool_relay_events_delivered_total", type="node.joined", function="bind"
                    )
                    == 20
                ),
                "the relay to count every delivery",
            )
            assert sample(r.metrics, "gpupool_relay_delivery_latency_seconds_count", function="bind") == 20
        finally:
            forwarder.stop()


def test_a_400_is_dropped_and_counted_and_the_next_event_still_goes_out() -> None:
    def answer(event: dict[str, Any]) -> int:
        return 400 if event["data"]["node"] == "n-0" else 200

    metrics = RelayMetrics()
    with RelayReceiver(auth="hmac", hmac_secret=SECRET, answer=answer) as receiver:
        lane = _lane(receiver, metrics)
        try:
            lane.put(_node_event(0))
            lane.put(_node_event(1))
            wait_for(lambda: len(receiver.received) == 1, "the second event")
            assert receiver.answered == {400: 1, 200: 1}
            assert (
                sample(
                    metrics,
                    "gpupool_relay_events_dropped_total",
                    type="node.joined",
                    function="bind",
                    reason="rejected",
                )
                == 1
            )
        finally:
            lane.stop()


def _between_attempts(lane: DeliveryLane, then: Callable[[], None]) -> bool:
    """Run `then` while the lane holds no attempt, under its lock (no attempt starts meanwhile);
    False when an attempt is in flight."""
    with lane._ready:
        if lane._in_flight:
            return False
        then()
        return True


def test_the_queue_bound_holds_under_a_flood_dropping_the_oldest() -> None:
    down = [True]
    attempted: set[str] = set()  # what the lane took out of the queue while the function was down

    def answer(event: dict[str, Any]) -> int:
        if down[0]:
            attempted.add(event["data"]["node"])
        return 503 if down[0] else 200

    metrics = RelayMetrics()
    with RelayReceiver(auth="hmac", hmac_secret=SECRET, answer=answer) as receiver:
        lane = _lane(
            receiver, metrics, DeliverySettings(queue_limit=100, first_backoff=0.05, max_backoff=0.2)
        )
        try:
            lane.put(_node_event(0))
            wait_for(lambda: receiver.answered.get(503), "the first attempt to be in flight")
            for i in range(1, 10_001):
                lane.put(_node_event(i))
                assert lane.depth() <= 100
            assert sample(metrics, "gpupool_relay_queue_depth", function="bind") <= 100
            newest = {f"n-{i}" for i in range(9_901, 10_001)}
            # The function comes back between two attempts: an event the lane took out of the
            # queue before then was attempted while the function was down (none is held across).
            wait_for(lambda: _between_attempts(lane, lambda: down.__setitem__(0, False)), "no attempt")
            assert lane.wait_idle(30), "every event taken and the 100 newest delivered"
            expected = attempted | newest
            nodes = [e["data"]["node"] for e in receiver.events()]
            assert "n-0" in attempted and len(attempted) < 50  # the lane paused between attempts
            assert sorted(nodes) == sorted(expected)  # each once; every other one was dropped, oldest first
            dropped = sample(
                metrics,
                "gpupool_relay_events_dropped_total",
                type="node.joined",
                function="bind",
                reason="queue-full",
            )
            assert dropped == 10_001 - len(expected)
        finally:
            lane.stop()


def test_retry_after_is_honoured() -> None:
    answers: list[float] = []

    def answer(event: dict[str, Any]) -> int:
        answers.append(time.monotonic())
        return 429 if len(answers) == 1 else 200

    with RelayReceiver(auth="hmac", hmac_secret=SECRET, answer=answer, retry_after="1") as receiver:
        lane = _lane(receiver, RelayMetrics())
        try:
            lane.put(_node_event(0))
            wait_for(lambda: receiver.received, "the retried event")
            assert answers[1] - answers[0] >= 1.0  # the back-off alone would have been ≤ 0.05 s
        finally:
            lane.stop()


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429, 408, 404, 403, 401])
def test_a_failed_attempt_is_retried_until_the_function_accepts_it(status: int) -> None:
    answers: list[int] = []

    def answer(event: dict[str, Any]) -> int:
        answers.append(status if not answers else 200)
        return answers[-1]

    metrics = RelayMetrics()
    with RelayReceiver(auth="hmac", hmac_secret=SECRET, answer=answer) as receiver:
        lane = _lane(receiver, metrics)
        try:
            lane.put(_node_event(0))
            wait_for(lambda: receiver.received, f"the event after an HTTP {status}")
            assert answers == [status, 200] and lane.wait_idle(5)
            labels = {"type": "node.joined", "function": "bind"}
            assert sample(metrics, "gpupool_relay_delivery_failures_total", **labels, reason=str(status)) == 1
            assert sample(metrics, "gpupool_relay_events_delivered_total", **labels) == 1
            assert not lane.dead_letters()
        finally:
            lane.stop()


def test_a_delivery_refused_for_its_signature_goes_through_once_the_secrets_agree_again() -> None:
    """A rotated secret (or clock skew) is a 403 at the receiver: retried, counted, then delivered."""
    metrics = RelayMetrics()
    with RelayReceiver(auth="hmac", hmac_secret=b"the-new-secret") as receiver:
        lane = _lane(receiver, metrics)
        try:
            lane.put(_node_event(0))
            wait_for(lambda: len(receiver.refused) >= 2, "a few refused attempts")
            assert not receiver.received and not lane.dead_letters()
            receiver.hmac_secret = SECRET  # the relay's Secret is updated to match
            wait_for(lambda: receiver.received, "the event once the secrets agree")
            refused = sample(
                metrics,
                "gpupool_relay_delivery_failures_total",
                type="node.joined",
                function="bind",
                reason="403",
            )
            assert refused >= 2
        finally:
            lane.stop()


@pytest.mark.parametrize("status", [400, 405, 413, 422])
def test_an_answer_retrying_cannot_fix_dead_letters_the_event_at_once(status: int) -> None:
    metrics = RelayMetrics()
    with RelayReceiver(auth="hmac", hmac_secret=SECRET, answer=lambda e: status) as receiver:
        lane = _lane(receiver, metrics)
        try:
            lane.put(_node_event(0))
            wait_for(lambda: lane.dead_letters(), "the dead letter")
            (letter,) = lane.dead_letters()
            assert (letter.id, letter.reason, letter.attempts, letter.last) == (
                "uid-0-1",
                "rejected",
                1,
                f"HTTP {status}",
            )
            assert receiver.answered == {status: 1}
        finally:
            lane.stop()


def test_attempts_per_event_are_capped_then_the_event_is_dead_lettered_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = RelayMetrics()
    settings = DeliverySettings(first_backoff=0.01, max_backoff=0.05, max_attempts=4)
    with RelayReceiver(auth="hmac", hmac_secret=SECRET, answer=lambda e: 500) as receiver:
        lane = _lane(receiver, metrics, settings)
        try:
            lane.put(_node_event(0))
            wait_for(lambda: lane.dead_letters(), "the event to be given up")
            assert lane.wait_idle(5) and lane.retrying() == 0
            assert receiver.answered == {500: 4}
            (letter,) = lane.dead_letters()
            assert (letter.reason, letter.attempts, letter.last) == ("attempts", 4, "500")
            labels = {"type": "node.joined", "function": "bind"}
            assert sample(metrics, "gpupool_relay_events_dropped_total", **labels, reason="attempts") == 1
            assert sample(metrics, "gpupool_relay_delivery_failures_total", **labels, reason="500") == 4
            assert "dead-lettered node.joined uid-0-1 after 4 attempt(s)" in caplog.text
            assert "x-gpupool-signature" not in caplog.text.lower() and "n-0" not in caplog.text
        finally:
            lane.stop()


def test_connection_errors_are_retried_and_capped_too() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/bind"  # bound, never listening: refused
        metrics = RelayMetrics()
        settings = DeliverySettings(first_backoff=0.01, max_backoff=0.05, max_attempts=3, timeout=2)
        lane = DeliveryLane("bind", url, make_signer("hmac", hmac_secret=SECRET), metrics, settings)
        lane.start()
        try:
            lane.put(_node_event(0))
            wait_for(lambda: lane.dead_letters(), "the event to be given up")
            (letter,) = lane.dead_letters()
            assert (letter.reason, letter.attempts, letter.last) == ("attempts", 3, "connection")
        finally:
            lane.stop()


def test_one_stuck_event_does_not_block_its_lane() -> None:
    """A poisoned event the function always fails (HTTP 500) keeps retrying on its own back-off while
    the events queued behind it are delivered."""

    def answer(event: dict[str, Any]) -> int:
        return 500 if event["data"]["node"] == "n-0" else 200

    settings = DeliverySettings(first_backoff=0.05, max_backoff=0.5, max_attempts=1_000)
    with RelayReceiver(auth="hmac", hmac_secret=SECRET, answer=answer) as receiver:
        lane = _lane(receiver, RelayMetrics(), settings)
        try:
            for i in range(10):
                lane.put(_node_event(i))
            wait_for(lambda: len(receiver.received) == 9, "the nine events behind the stuck one")
            assert sorted(e["data"]["node"] for e in receiver.events()) == [f"n-{i}" for i in range(1, 10)]
            assert receiver.answered[500] >= 1 and lane.retrying() == 1 and not lane.dead_letters()
        finally:
            lane.stop()


KEY = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")


def _post(receiver: RelayReceiver, headers: dict[str, str], body: bytes, path: str = "/launch") -> int:
    return httpx.post(receiver.url(path), content=body, headers=headers).status_code


def test_sigv4_as_botocore_signs_it_is_accepted_and_anything_else_is_refused() -> None:
    body = b'{"specversion":"1.0","id":"x","source":"/t","type":"ai.tensor-fusion.gpupool.pool.changed"}'
    with RelayReceiver(auth="sigv4", credentials=KEY, region="eu-west-1") as receiver:
        url = receiver.url("/launch")
        good = sigv4_signer("eu-west-1", credentials=KEY)(url, body, {"content-type": "application/json"})
        assert _post(receiver, good, body) == 200
        assert _post(receiver, good, body.replace(b'"x"', b'"y"')) == 403  # tampered body
        wrong_region = sigv4_signer("us-east-1", credentials=KEY)(
            url, body, {"content-type": "application/json"}
        )
        assert _post(receiver, wrong_region, body) == 403
        other_key = Credentials("AKIDEXAMPLE", "another-secret")
        assert _post(receiver, sigv4_signer("eu-west-1", credentials=other_key)(url, body, {}), body) == 403
        assert _post(receiver, {"content-type": "application/json"}, body) == 403  # unsigned
        assert len(receiver.received) == 1 and len(receiver.refused) == 4
        assert "credential scope" in receiver.refused[1] and "signature" in receiver.refused[0]


def test_hmac_refuses_a_wrong_secret_and_a_tampered_body() -> None:
    body = b'{"specversion":"1.0"}'
    with RelayReceiver(auth="hmac", hmac_secret=SECRET) as receiver:
        signed = make_signer("hmac", hmac_secret=SECRET)(receiver.url(), body, {})
        assert _post(receiver, signed, body) == 200
        assert _post(receiver, signed, body + b" ") == 403
        assert (
            _post(receiver, make_signer("hmac", hmac_secret=b"other")(receiver.url(), body, {}), body) == 403
        )


@pytest.mark.parametrize(
    ("mode", "options", "message"),
    [
        ("hmac", {}, "--hmac-secret-file"),
        ("fc", {}, "--fc-credentials-dir"),
        ("basic", {}, "unknown --forward-auth"),
        ("sigv4", {"region": ""}, "region"),
    ],
)
def test_a_signer_without_its_inputs_is_refused_with_one_clear_line(
    mode: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        make_signer(mode, **options)


def test_the_fc_signature_is_acs3_with_the_mounted_keys_reread_for_each_request(tmp_path: Path) -> None:
    body = b'{"specversion":"1.0"}'
    (tmp_path / "ak").write_text("LTAI-example\n")
    (tmp_path / "sk").write_text("fc-secret\n")
    with RelayReceiver(auth="fc", fc_keys=("LTAI-example", "fc-secret")) as receiver:
        signer = make_signer("fc", fc_credentials_dir=tmp_path)
        signed = signer(receiver.url("/bind"), body, {"content-type": "application/cloudevents+json"})
        assert _post(receiver, signed, body, "/bind") == 200
        assert _post(receiver, signed, body, "/launch") == 403  # signed for another path than it reached
        (tmp_path / "sk").write_text("rotated-secret")  # the Secret changed: the next request uses it
        assert (
            _post(receiver, signer(receiver.url("/bind"), body, {"content-type": "x"}), body, "/bind") == 403
        )
        assert len(receiver.received) == 1 and all("does not match" in p for p in receiver.refused)


def test_without_mounted_keys_rrsa_sts_credentials_sign_with_their_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import alibabacloud_credentials.client

    class FakeStsClient:  # what alibabacloud_credentials returns after AssumeRoleWithOIDC
        def get_credential(self) -> Any:
            return type("Credential", (), {"access_key_id": "STS.id", "access_key_secret": "sts-secret",
                                           "security_token": "sts-token"})()  # fmt: skip

    body = b'{"specversion":"1.0"}'
    with pytest.raises(ValueError, match="cannot read the Alibaba Cloud credential file"):
        make_signer("fc", fc_credentials_dir=tmp_path)  # neither files nor RRSA: refused at start
    for name in (
        "ALIBABA_CLOUD_ROLE_ARN",
        "ALIBABA_CLOUD_OIDC_PROVIDER_ARN",
        "ALIBABA_CLOUD_OIDC_TOKEN_FILE",
    ):
        monkeypatch.setenv(name, "set-by-the-rrsa-webhook")
    monkeypatch.setattr(alibabacloud_credentials.client, "Client", FakeStsClient)
    signer = make_signer("fc", fc_credentials_dir=tmp_path)
    with RelayReceiver(auth="fc", fc_keys=("STS.id", "sts-secret", "sts-token")) as receiver:
        signed = signer(receiver.url("/bind"), body, {"content-type": "application/cloudevents+json"})
        assert signed["x-acs-security-token"] == "sts-token"
        assert "x-acs-security-token" in signed["authorization"].split("SignedHeaders=")[1]
        assert _post(receiver, signed, body, "/bind") == 200
        forged = signed | {"x-acs-security-token": "another-token"}  # the token is signed too
        assert _post(receiver, forged, body, "/bind") == 403
        unsigned = {k: v for k, v in signed.items() if k != "x-acs-security-token"}
        assert _post(receiver, unsigned, body, "/bind") == 403


def test_unsigned_or_clear_text_deliveries_off_the_host_are_flagged(caplog: pytest.LogCaptureFixture) -> None:
    from gpupool_incluster.relay.forwarder import warn_unsigned

    urls = {"launch": "http://127.0.0.1:9000/", "bind": "https://b.example/", "compact": "http://c.example/"}
    assert warn_unsigned(urls, "sigv4") == ["compact"]  # clear text leaves the host
    assert warn_unsigned(urls, "none") == ["bind", "compact"]  # unsigned leaves the host
    assert warn_unsigned({"bind": "http://localhost:1/"}, "none") == []
    assert "events for compact go to http://c.example/" in caplog.text
