"""The Function Compute handlers (functions/*/index.py), called as FC 3.0 calls them: event as bytes.

Covers: each events/alibaba sample reaches the right function's service as the right cause, and
a sample for another function is ignored without building deps; HTTP-trigger answers 200 / 400 /
503, retryable outcomes raise (FC's async retry and failure destination take over); the FC
context's STS credentials reach the deps; who the HTTP entry points trust, on both (FC HTTP
trigger and Lambda Function URL): nothing configured refuses every call (a forged manual
compaction included); in ``hmac`` mode unsigned, wrongly signed, stale, prefix-of-the-digest and
body-swapped requests get 401 and neither deps nor the service are touched, a signed one passes;
``fc-signature`` checks the signed x-acs-content-sha256 against the body, and a delivery the
relay signed with ACS3-HMAC-SHA256 is handled once, its replay within the signature's 15-minute
window acknowledged as a duplicate; ``aws-iam`` takes only the
relay's principal; a platform mode of the other cloud, or an unknown one, refuses every call; a
secret store that cannot be read is a 503; a replayed delivery is acknowledged and not acted on,
one another invocation holds is a 503, one that failed retryably is acted on when retried, and
an unreachable ledger or deps without one refuse; an HTTP-only function (GPUPOOL_HTTP_ONLY=true,
s.yaml's gpupool-<name>-relay) refuses a timer, EventBridge or unreadable event handed to it
directly and still handles the relay's signed requests, and a flag that is neither true nor false
refuses everything; module import pulls in no SDK; the real
services behind the FC handler on the service fakes; and no bytes at all make a handler raise
(hypothesis).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpupool.core.intake.acs3 import CONTENT_SHA256_HEADER, content_sha256
from gpupool.core.intake.causes import (
    ClaimDeleted,
    Compact,
    InstanceInterruption,
    InstanceStateChanged,
    NodeChanged,
    Reconcile,
    Sweep,
)
from gpupool.core.intake.signature import SIGNATURE_HEADER, sign_body
from gpupool.handlers import common, fc
from gpupool.handlers.relay_auth import (
    HMAC_SECRET_ID_VARIABLE,
    HMAC_SECRET_VARIABLE,
    HTTP_AUTH_VARIABLE,
    RELAY_PRINCIPAL_VARIABLE,
)
from gpupool.service.errors import Throttled
from gpupool.service.outcome import Outcome
from tests.service.test_handlers import APPS as LAMBDA_APPS
from tests.service.test_handlers import RELAY_AUTH as LAMBDA_AUTH
from tests.service.test_handlers import RELAY_ROLE, DepsFactory, StubService
from tests.service.test_handlers import event as aws_event

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events" / "alibaba"
FUNCTIONS = ("launch", "bind", "compact")
SECRET = "relay-shared-secret"
# As s.yaml deploys the functions: authType function, the function checks the signed x-acs-content-sha256.
FC_AUTH = {HTTP_AUTH_VARIABLE: "fc-signature"}
HMAC_AUTH = {HTTP_AUTH_VARIABLE: "hmac", HMAC_SECRET_VARIABLE: SECRET}
# As s.yaml deploys the relay-facing functions, gpupool-<name>-relay: HTTP-trigger requests only.
HTTP_ONLY = {**FC_AUTH, fc.HTTP_ONLY_VARIABLE: "true"}


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


APPS = {
    name: _load(ROOT / "functions" / name / "index.py", f"gpupool_test_{name}_index") for name in FUNCTIONS
}


def raw(name: str) -> bytes:
    return (EVENTS / f"{name}.json").read_bytes()


def fc_handler(
    function: str,
    service: StubService,
    factory: DepsFactory | None = None,
    *,
    environ: dict[str, str] | None = None,
    dry_run: bool = False,
) -> Any:
    return APPS[function].make_handler(
        factory or DepsFactory(),
        service=lambda: service,
        environ=FC_AUTH if environ is None else environ,
        dry_run=dry_run,
    )


ROUTED = [
    ("fc-timer", "launch", Reconcile),
    ("fc-timer", "bind", Sweep),
    ("fc-timer", "compact", Compact),
    ("ecs-instance-state-change", "bind", InstanceStateChanged),
    ("ecs-instance-state-change-deleted", "bind", InstanceStateChanged),
    ("ecs-preemptible-interruption", "launch", InstanceInterruption),
    ("fc-http-node-ready", "bind", NodeChanged),
    ("fc-http-claim-deleted", "bind", ClaimDeleted),
    ("fc-http-pod-unschedulable", "launch", Reconcile),
    ("fc-http-pool-manual-compaction", "compact", Compact),
]


def test_every_sample_is_routed_by_a_test() -> None:
    assert {path.stem for path in EVENTS.glob("*.json")} == {sample for sample, _, _ in ROUTED}


@pytest.mark.parametrize(("sample", "function", "kind"), ROUTED, ids=[f"{s}->{f}" for s, f, _ in ROUTED])
def test_sample_bytes_reach_their_service_as_their_cause(sample: str, function: str, kind: type) -> None:
    service, factory = StubService(), DepsFactory()
    result = fc_handler(function, service, factory)(raw(sample), SimpleNamespace(request_id="r-1"))
    assert len(service.calls) == 1
    cause, deps, _ = service.calls[0]
    assert isinstance(cause, kind) and deps is factory.deps
    if sample.startswith("fc-http-"):
        assert result["statusCode"] == 200
        assert json.loads(result["body"])["status"] == "handled"
    else:
        assert result["status"] == "handled"


@pytest.mark.parametrize("function", FUNCTIONS)
def test_a_sample_for_another_function_changes_nothing(function: str) -> None:
    for sample, owner, _ in ROUTED:
        if owner == function or sample == "fc-timer":
            continue
        service, factory = StubService(), DepsFactory()
        result = fc_handler(function, service, factory)(raw(sample), None)
        assert service.calls == [] and factory.built == 0, sample
        assert (
            result.get("statusCode") == 400
            if sample.startswith("fc-http-")
            else result["status"] == "ignored"
        )


def test_retryable_outcome_raises_for_fc_async_retry_and_is_a_503_over_http() -> None:
    outcome = Outcome(errors=["launch claim pool-a-0001: throttled"], retryable=True)
    with pytest.raises(common.RetryableFailure, match="throttled"):
        fc_handler("launch", StubService(outcome))(raw("fc-timer"), None)
    response = fc_handler("launch", StubService(outcome))(raw("fc-http-pod-unschedulable"), None)
    assert response["statusCode"] == 503 and response["headers"]["retry-after"] == "5"


def test_a_throttled_service_raises_and_a_permanent_one_is_acknowledged() -> None:
    with pytest.raises(Throttled):
        fc_handler("launch", StubService(error=Throttled("Throttling.User")))(
            raw("ecs-preemptible-interruption"), None
        )
    from gpupool.service.errors import PermanentError

    result = fc_handler("bind", StubService(error=PermanentError("Forbidden.RAM")))(raw("fc-timer"), None)
    assert result["status"] == "failed" and "Forbidden.RAM" in result["errors"][0]


def test_the_fc_context_credentials_reach_the_ecs_client() -> None:
    seen: list[Any] = []

    def factory() -> Any:
        seen.append(fc._context_credentials())
        return object()

    handler = APPS["bind"].make_handler(factory, service=lambda: StubService())
    given_credentials = SimpleNamespace(
        access_key_id="STS.id", access_key_secret="s3cret", security_token="tok"
    )
    handler(raw("fc-timer"), SimpleNamespace(request_id="r", credentials=given_credentials))
    assert seen and seen[0].access_key_id == "STS.id" and seen[0].security_token == "tok"
    assert "s3cret" not in repr(seen[0])


# ---- who the HTTP entry points trust -------------------------------------------------------------
def _signed(request: dict[str, Any], *, secret: str = SECRET, at: float | None = None) -> dict[str, Any]:
    body = request["body"].encode()
    headers = sign_body(secret.encode(), body, timestamp=int(at if at is not None else time.time()))
    return {**request, "headers": {**request["headers"], **headers}}


def _fc_request(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(raw(name))
    return loaded


def _lambda_handler(service: StubService, factory: DepsFactory, environ: dict[str, str]) -> Any:
    return LAMBDA_APPS["bind"].make_handler(factory, service=lambda: service, environ=environ)


ENTRY_POINTS = [
    (
        "fc",
        lambda service, factory, environ: fc_handler("bind", service, factory, environ=environ),
        lambda: _fc_request("fc-http-node-ready"),
    ),
    ("lambda", _lambda_handler, lambda: aws_event("function-url-node-ready")),
]
ENTRY_IDS = [e[0] for e in ENTRY_POINTS]


def _digest_prefix(request: dict[str, Any], keep: int) -> dict[str, Any]:
    signed = _signed(request)
    return {
        **signed,
        "headers": {**signed["headers"], SIGNATURE_HEADER: signed["headers"][SIGNATURE_HEADER][:keep]},
    }


REFUSED = {
    "unsigned": lambda request: request,
    "wrong secret": lambda request: _signed(request, secret="another-secret"),
    "stale": lambda request: _signed(request, at=time.time() - 600),
    "body changed after signing": lambda request: {**_signed(request), "body": request["body"] + " "},
    "v1= alone": lambda request: _digest_prefix(request, len("v1=")),
    "a prefix of the digest": lambda request: _digest_prefix(request, len("v1=") + 40),
}


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=ENTRY_IDS)
@pytest.mark.parametrize("case", list(REFUSED))
def test_a_badly_signed_relay_call_is_a_401_and_changes_nothing(entry: Any, case: str) -> None:
    _, make, request = entry
    service, factory = StubService(), DepsFactory()
    response = make(service, factory, HMAC_AUTH)(REFUSED[case](request()), None)
    assert response["statusCode"] == 401, case
    assert json.loads(response["body"])["error"]
    assert SECRET not in response["body"]
    assert service.calls == [] and factory.built == 0


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=ENTRY_IDS)
def test_a_signed_relay_call_is_handled(entry: Any) -> None:
    _, make, request = entry
    service = StubService()
    assert make(service, DepsFactory(), HMAC_AUTH)(_signed(request()), None)["statusCode"] == 200
    assert len(service.calls) == 1


def test_a_signed_base64_body_is_checked_on_its_decoded_bytes() -> None:
    signed = _signed(_fc_request("fc-http-node-ready"))
    signed["body"] = base64.b64encode(signed["body"].encode()).decode()
    signed["isBase64Encoded"] = True
    service = StubService()
    handler = fc_handler("bind", service, environ=HMAC_AUTH)
    assert handler(json.dumps(signed).encode(), None)["statusCode"] == 200


def test_events_that_are_not_http_are_never_asked_for_a_signature_and_http_without_a_secret_is_refused() -> (
    None
):
    service = StubService()
    assert (
        fc_handler("launch", service, environ=HMAC_AUTH)(raw("ecs-preemptible-interruption"), None)["status"]
        == "handled"
    )
    no_secret = {HTTP_AUTH_VARIABLE: "hmac"}
    response = fc_handler("bind", service, environ=no_secret)(raw("fc-http-node-ready"), None)
    assert response["statusCode"] == 401 and "no relay HMAC secret" in json.loads(response["body"])["error"]
    assert len(service.calls) == 1  # the EventBridge event only


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=ENTRY_IDS)
def test_with_no_relay_authentication_configured_every_http_call_is_refused(entry: Any) -> None:
    _, make, request = entry
    service, factory = StubService(), DepsFactory()
    response = make(service, factory, {})(request(), None)
    assert response["statusCode"] == 401, "fail closed: nothing configured trusts nobody"
    assert service.calls == [] and factory.built == 0


def test_a_forged_manual_compaction_on_an_unconfigured_trigger_is_refused() -> None:
    """Issue 22, Why 2: with the secret unset the check was skipped and this was handled."""
    forged = _fc_request("fc-http-pool-manual-compaction")
    forged["headers"] = {"Content-Type": "application/cloudevents+json"}  # no signature of any kind
    for environ in ({}, {HMAC_SECRET_VARIABLE: ""}, {HTTP_AUTH_VARIABLE: "hmac", HMAC_SECRET_VARIABLE: ""}):
        service, factory = StubService(), DepsFactory()
        response = fc_handler("compact", service, factory, environ=environ)(json.dumps(forged).encode(), None)
        assert response["statusCode"] == 401 and service.calls == [] and factory.built == 0, environ


NOT_HTTP = [(sample, function) for sample, function, _ in ROUTED if not sample.startswith("fc-http-")]


@pytest.mark.parametrize(("sample", "function"), NOT_HTTP, ids=[f"{s}->{f}" for s, f in NOT_HTTP])
def test_an_http_only_function_refuses_a_direct_timer_or_eventbridge_event(
    sample: str, function: str
) -> None:
    """Issue 33, Why 6: the relay's RAM identity may invoke gpupool-<name>-relay (its signed HTTP
    trigger needs fc:InvokeFunction, and RAM cannot tell a trigger call from a direct one); a
    direct call carrying a timer or EventBridge event is refused before anything is built."""
    service, factory = StubService(), DepsFactory()
    handler = fc_handler(function, service, factory, environ=HTTP_ONLY)
    with pytest.raises(fc.NotAnHttpTriggerRequest, match="takes HTTP-trigger requests only"):
        handler(raw(sample), None)
    assert service.calls == [] and factory.built == 0
    # The function without the flag (timer and EventBridge triggers, no HTTP one) takes it.
    assert fc_handler(function, StubService())(raw(sample), None)["status"] == "handled"


def test_an_http_only_function_refuses_bytes_that_are_no_request_and_handles_the_relays() -> None:
    service, factory = StubService(), DepsFactory()
    for payload in (b"", b"{}", b"not json", json.dumps({"triggerName": "x", "payload": ""}).encode()):
        with pytest.raises(fc.NotAnHttpTriggerRequest):
            fc_handler("compact", service, factory, environ=HTTP_ONLY)(payload, None)
    assert service.calls == [] and factory.built == 0
    for sample, function, _ in ROUTED:
        if sample.startswith("fc-http-"):
            response = fc_handler(function, service, factory, environ=HTTP_ONLY)(raw(sample), None)
            assert response["statusCode"] == 200, sample
    assert len(service.calls) == 4


@pytest.mark.parametrize("value", ["yes", "1", "True ", "ture", "on"])
def test_an_http_only_flag_neither_true_nor_false_refuses_every_event(value: str) -> None:
    if value.strip().lower() == "true":  # spacing and case are forgiven; the word is not
        assert fc.http_only({fc.HTTP_ONLY_VARIABLE: value}) is True
        return
    service, factory = StubService(), DepsFactory()
    for sample in ("fc-timer", "fc-http-pool-manual-compaction"):
        handler = fc_handler("compact", service, factory, environ={**FC_AUTH, fc.HTTP_ONLY_VARIABLE: value})
        with pytest.raises(fc.HttpOnlyMisconfigured, match="neither true nor false"):
            handler(raw(sample), None)
    assert service.calls == [] and factory.built == 0
    assert fc.http_only({}) is False and fc.http_only({fc.HTTP_ONLY_VARIABLE: "false"}) is False


def _with_sha256(request: dict[str, Any], value: str | None) -> dict[str, Any]:
    headers = {k: v for k, v in request["headers"].items() if k.lower() != CONTENT_SHA256_HEADER}
    if value is not None:
        headers["x-ACS-content-SHA256"] = value
    return {**request, "headers": headers}


def test_fc_signature_mode_acts_only_on_the_body_the_signed_content_sha256_names() -> None:
    request = _fc_request("fc-http-node-ready")
    assert request["headers"]["X-Acs-Content-Sha256"] == content_sha256(request["body"].encode())
    swapped = request["body"].replace("pool-a-claim-x7k2p", "pool-b-claim-other")
    digest = content_sha256(request["body"].encode())
    md5 = base64.b64encode(hashlib.md5(request["body"].encode(), usedforsecurity=False).digest()).decode()
    fc2_style = {**request, "headers": {**request["headers"], "Content-Md5": md5}}
    cases = {
        "no x-acs-content-sha256": (_with_sha256(request, None), 401),
        "another body under the signed x-acs-content-sha256": ({**request, "body": swapped}, 401),
        "an x-acs-content-sha256 that is not the body's": (_with_sha256(request, content_sha256(b"{}")), 401),
        "the digest in capitals": (_with_sha256(request, digest.upper()), 401),
        "a prefix of the digest": (_with_sha256(request, digest[:40]), 401),
        "only the Content-MD5 the FC 2.0 signature covered": (_with_sha256(fc2_style, None), 401),
        "the signed body": (request, 200),
        "its header name in any case": (_with_sha256(request, digest), 200),
    }
    for case, (sent, status) in cases.items():
        service, factory = StubService(), DepsFactory()
        response = fc_handler("bind", service, factory)(json.dumps(sent).encode(), None)
        assert response["statusCode"] == status, case
        assert len(service.calls) == (status == 200) and factory.built == (status == 200), case


def _as_the_relay_signs(request: dict[str, Any], *, at: float) -> dict[str, Any]:
    """The FC event for a delivery the relay's `--forward-auth fc` signer signed at `at`."""
    from gpupool_incluster.relay.signing import fc_signer

    signer = fc_signer(lambda: ("LTAI-relay", "relay-secret", ""), clock=lambda: at)
    url = "https://gpupool-bind.cn-hangzhou.fcapp.run/"
    body = request["body"].encode()
    headers = signer(url, body, {"content-type": "application/cloudevents+json; charset=utf-8"})
    return {**request, "headers": {"User-Agent": "gpupool-relay/0.1", **headers}}


def test_an_acs3_signed_delivery_is_handled_once_and_its_replay_in_the_window_is_not_acted_on() -> None:
    """The signature stays valid for 15 minutes (x-acs-date); the ledger keeps the record for 30."""
    request = {**_fc_request("fc-http-node-ready")}
    request["headers"] = {k: v for k, v in request["headers"].items() if not k.lower().startswith("x-acs-")}
    captured = _as_the_relay_signs(request, at=time.time())
    assert captured["headers"]["authorization"].startswith("ACS3-HMAC-SHA256 Credential=LTAI-relay,")
    service, factory = StubService(), DepsFactory()
    handler = fc_handler("bind", service, factory)
    first = handler(json.dumps(captured).encode(), None)
    assert first["statusCode"] == 200 and json.loads(first["body"])["status"] == "handled"
    replayed = handler(json.dumps(captured).encode(), None)  # the captured request, sent again
    assert json.loads(replayed["body"])["status"] == "duplicate" and len(service.calls) == 1
    resigned = _as_the_relay_signs(request, at=time.time() + 840)  # the relay's retry, 14 min later
    assert json.loads(handler(json.dumps(resigned).encode(), None)["body"])["status"] == "duplicate"
    assert len(service.calls) == 1


def test_aws_iam_mode_takes_only_the_relay_principal() -> None:
    request = aws_event("function-url-node-ready")
    context = request["requestContext"]
    iam = context["authorizer"]["iam"]

    def calling_as(user_arn: str) -> dict[str, Any]:
        return {**request, "requestContext": {**context, "authorizer": {"iam": {**iam, "userArn": user_arn}}}}

    no_authorizer = {**request, "requestContext": {k: v for k, v in context.items() if k != "authorizer"}}
    path_role = {**LAMBDA_AUTH, RELAY_PRINCIPAL_VARIABLE: "arn:aws:iam::123456789012:role/ops/gpupool-relay"}
    cases = {
        "the relay's session": (request, LAMBDA_AUTH, 200),
        "another role": (calling_as("arn:aws:sts::123456789012:assumed-role/admin/s"), LAMBDA_AUTH, 401),
        "the role's name in another account": (
            calling_as("arn:aws:sts::210987654321:assumed-role/gpupool-relay/s"),
            LAMBDA_AUTH,
            401,
        ),
        "no IAM caller (AuthType NONE)": (no_authorizer, LAMBDA_AUTH, 401),
        "no principal configured": (request, {HTTP_AUTH_VARIABLE: "aws-iam"}, 401),
        "the principal as a path-qualified role": (request, path_role, 200),
    }
    for case, (sent, environ, status) in cases.items():
        service, factory = StubService(), DepsFactory()
        response = _lambda_handler(service, factory, environ)(sent, None)
        assert response["statusCode"] == status, case
        assert len(service.calls) == (status == 200), case
    assert iam["userArn"].startswith("arn:aws:sts::123456789012:assumed-role/gpupool-relay/")
    assert LAMBDA_AUTH[RELAY_PRINCIPAL_VARIABLE] == RELAY_ROLE


def test_a_mode_the_platform_does_not_implement_refuses_every_call() -> None:
    for environ in (
        {HTTP_AUTH_VARIABLE: "aws-iam", RELAY_PRINCIPAL_VARIABLE: RELAY_ROLE},
        {HTTP_AUTH_VARIABLE: "none"},
    ):
        service = StubService()
        response = fc_handler("bind", service, environ=environ)(raw("fc-http-node-ready"), None)
        assert response["statusCode"] == 401 and service.calls == [], environ
    for environ in ({HTTP_AUTH_VARIABLE: "fc-signature"}, {HTTP_AUTH_VARIABLE: "anonymous"}):
        service = StubService()
        response = _lambda_handler(service, DepsFactory(), environ)(
            aws_event("function-url-node-ready"), None
        )
        assert response["statusCode"] == 401 and service.calls == [], environ


def test_a_secret_store_that_cannot_be_read_is_a_503_and_changes_nothing() -> None:
    environ = {
        HTTP_AUTH_VARIABLE: "hmac",
        HMAC_SECRET_ID_VARIABLE: "gpupool/relay-hmac",
        "ALIBABA_CLOUD_REGION_ID": "cn-hangzhou",
        "ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAI-test",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "test-secret",
        "GPUPOOL_KMS_ENDPOINT": "http://127.0.0.1:9",  # nothing listens: KMS is unreachable
    }
    service, factory = StubService(), DepsFactory()
    signed = json.dumps(_signed(_fc_request("fc-http-node-ready"))).encode()
    response = fc_handler("bind", service, factory, environ=environ)(signed, None)
    assert response["statusCode"] == 503 and response["headers"]["retry-after"]
    assert "gpupool/relay-hmac" not in response["body"] and SECRET not in response["body"]
    assert service.calls == [] and factory.built == 0


# ---- once only: replays, retries, concurrent deliveries --------------------------------------------
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=ENTRY_IDS)
def test_a_replayed_delivery_is_acknowledged_and_not_acted_on(entry: Any) -> None:
    _, make, request = entry
    service, factory = StubService(), DepsFactory()
    handler = make(service, factory, HMAC_AUTH)
    captured = _signed(request())
    first, replay = handler(captured, None), handler(captured, None)
    assert first["statusCode"] == 200 and json.loads(first["body"])["status"] == "handled"
    assert replay["statusCode"] == 200 and json.loads(replay["body"])["status"] == "duplicate"
    assert len(service.calls) == 1
    resent = _signed(request(), at=time.time() + 1)  # the relay's retry: signed again, same event id
    assert json.loads(handler(resent, None)["body"])["status"] == "duplicate" and len(service.calls) == 1


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=ENTRY_IDS)
def test_a_signed_binary_mode_body_under_three_ce_ids_is_never_acted_on(entry: Any) -> None:
    """Issue 33, attempt 5: the signature covers the body, not the ce-* headers; the ledger keyed on
    ce-id acted on one signed body three times. Binary mode is refused before the ledger."""
    _, make, request = entry
    service, factory = StubService(), DepsFactory()
    handler = make(service, factory, HMAC_AUTH)
    structured = request()
    event = json.loads(structured["body"])
    binary = {**structured, "body": json.dumps(event["data"])}
    captured = _signed(binary)
    for event_id in ("a", "b", "c"):
        ce = {f"ce-{k}": str(v) for k, v in event.items() if k not in ("data", "datacontenttype", "id")}
        response = handler({**captured, "headers": {**captured["headers"], **ce, "ce-id": event_id}}, None)
        assert response["statusCode"] == 400 and "binary-mode" in response["body"]
    assert service.calls == []


def test_the_record_outlives_the_process_a_new_handler_on_the_same_ledger_sees_the_replay() -> None:
    factory = DepsFactory()
    first, second = StubService(), StubService()
    request = raw("fc-http-pool-manual-compaction")
    assert fc_handler("compact", first, factory)(request, None)["statusCode"] == 200
    later = DepsFactory()
    later.deps = factory.deps  # a cold start: a new handler, the same records in the cluster
    response = fc_handler("compact", second, later)(request, None)
    assert json.loads(response["body"])["status"] == "duplicate" and second.calls == []


def test_a_delivery_that_failed_retryably_is_acted_on_when_retried() -> None:
    service = StubService(Outcome(errors=["conflict"], retryable=True))
    handler = fc_handler("bind", service)
    assert handler(raw("fc-http-node-ready"), None)["statusCode"] == 503
    service.outcome = Outcome()
    assert handler(raw("fc-http-node-ready"), None)["statusCode"] == 200
    assert len(service.calls) == 2
    assert json.loads(handler(raw("fc-http-node-ready"), None)["body"])["status"] == "duplicate"


def test_a_delivery_another_invocation_is_handling_is_a_503_and_not_acted_on() -> None:
    from gpupool.service.deliveries import PROCESSING_HOLD, delivery_key

    factory = DepsFactory()
    event_id = json.loads(_fc_request("fc-http-node-ready")["body"])["id"]
    state = factory.deps.deliveries.claim(
        delivery_key("bind", event_id),
        holder="another",
        now=factory.deps.clock.now(),
        hold_for=PROCESSING_HOLD,
    )
    assert state == "first"
    service = StubService()
    response = fc_handler("bind", service, factory)(raw("fc-http-node-ready"), None)
    assert response["statusCode"] == 503 and service.calls == []
    factory.deps.clock.advance(PROCESSING_HOLD)  # that invocation died: its hold expires
    assert fc_handler("bind", service, factory)(raw("fc-http-node-ready"), None)["statusCode"] == 200
    assert len(service.calls) == 1


def test_an_unreachable_ledger_or_none_at_all_is_a_refusal_that_acts_on_nothing() -> None:
    factory, service = DepsFactory(), StubService()
    factory.deps.deliveries.fail_next(Throttled("the API server is busy"))
    response = fc_handler("bind", service, factory)(raw("fc-http-node-ready"), None)
    assert response["statusCode"] == 503 and service.calls == []
    factory.deps.deliveries = None  # type: ignore[assignment]
    response = fc_handler("bind", service, factory)(raw("fc-http-node-ready"), None)
    assert response["statusCode"] == 503 and "ledger" in response["body"] and service.calls == []


def test_a_dry_run_records_no_delivery() -> None:
    factory, service = DepsFactory(), StubService()
    for _ in range(2):
        response = fc_handler("bind", service, factory, dry_run=True)(raw("fc-http-node-ready"), None)
        assert response["statusCode"] == 200
    assert len(service.calls) == 2 and factory.deps.deliveries.records == {}


def test_expired_records_are_pruned_by_a_later_delivery() -> None:
    from gpupool.service.deliveries import REPLAY_WINDOW

    factory, service = DepsFactory(), StubService()
    fc_handler("bind", service, factory)(raw("fc-http-node-ready"), None)
    assert len(factory.deps.deliveries.records) == 1
    factory.deps.clock.advance(REPLAY_WINDOW)
    fc_handler("bind", service, factory)(
        raw("fc-http-claim-deleted"), None
    )  # a new handler prunes first time
    assert len(factory.deps.deliveries.records) == 1  # the old one gone, the new one kept


# ---- import cost and robustness ---------------------------------------------------------------
@pytest.mark.parametrize("function", FUNCTIONS)
def test_module_import_pulls_in_no_sdk(function: str) -> None:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import index; "
        "heavy = sorted(m for m in ('alibabacloud_ecs20140526', 'alibabacloud_tea_openapi', 'boto3', "
        "'kubernetes', 'gpupool.adapters', 'gpupool.service') if m in sys.modules); print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "functions" / function)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == ""


@settings(max_examples=150, deadline=None)
@given(
    payload=st.binary(max_size=200) | st.text(max_size=100).map(str.encode),
    function=st.sampled_from(FUNCTIONS),
)
def test_no_bytes_make_a_handler_raise(payload: bytes, function: str) -> None:
    service, factory = StubService(), DepsFactory()
    result = fc_handler(function, service, factory)(payload, None)
    assert result.get("status") in ("handled", "ignored") or result.get("statusCode") in (200, 400, 401)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)
_SAMPLES = sorted(path.stem for path in EVENTS.glob("*.json"))


@st.composite
def _mutated_sample(draw: st.DrawFn) -> dict[str, Any]:
    """A sample with one field (top level, or inside `data`) replaced by a value of any JSON type."""
    event: dict[str, Any] = json.loads(raw(draw(st.sampled_from(_SAMPLES))))
    target = event["data"] if isinstance(event.get("data"), dict) and draw(st.booleans()) else event
    key = draw(st.sampled_from(sorted(target)))
    target[key] = draw(_json)
    if isinstance(event.get("headers"), dict) and isinstance(event.get("body"), str):
        event["headers"]["X-Acs-Content-Sha256"] = content_sha256(event["body"].encode())  # signed as sent
    return event


@settings(max_examples=200, deadline=None)
@given(event=_mutated_sample(), function=st.sampled_from(FUNCTIONS))
def test_wrong_types_in_any_field_never_raise_and_reach_the_service_only_as_a_valid_cause(
    event: dict[str, Any], function: str
) -> None:
    service = StubService()
    result = fc_handler(function, service)(json.dumps(event).encode(), None)
    if "statusCode" in result:
        # 401 only when the mutation left no body or headers the signed x-acs-content-sha256 could name.
        # (a body marked isBase64Encoded is decoded first, so its digest is not the text's)
        signed = (
            isinstance(event.get("headers"), dict)
            and isinstance(event.get("body"), str)
            and event.get("isBase64Encoded") is not True
        )
        assert result["statusCode"] in ((200, 400) if signed else (200, 400, 401))
        handled = result["statusCode"] == 200
    else:
        assert result["status"] in ("handled", "ignored")
        handled = result["status"] == "handled"
    assert len(service.calls) == (1 if handled else 0)


# ---- the real services behind the FC handler, on the service fakes ------------------------------
def test_one_fc_timer_delivered_ten_times_launches_only_what_the_gap_needs() -> None:
    from tests.service.fakes import World, make_pool

    world = World(make_pool(min_tflops="130", min_vram="32Gi"))
    handler = APPS["launch"].make_handler(lambda: world.deps)
    results = [handler(raw("fc-timer"), None) for _ in range(10)]
    assert all(r["status"] == "handled" and not r["errors"] for r in results)
    claims, instances = world.claims(), world.compute.list_managed()
    assert len(claims) == len({c.name for c in claims}) == len(instances) > 0
    assert sum(len(r["applied"]) for r in results[1:]) == 0


def test_eight_concurrent_fc_invocations_never_pass_the_gap_or_max() -> None:
    import dataclasses
    from concurrent.futures import ThreadPoolExecutor

    from tests.service.fakes import World, make_pool

    world = World(make_pool(min_tflops="130", min_vram="32Gi", max_tflops="200", max_vram="48Gi"))

    def invoke(index: int) -> dict[str, Any]:
        deps = dataclasses.replace(world.deps, holder=f"fc-{index}")
        result: dict[str, Any] = APPS["launch"].make_handler(lambda: deps)(raw("fc-timer"), None)
        return result

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(invoke, range(8)))
    assert all(not r["errors"] for r in results)
    claims = world.claims()
    tflops = sum(int(str(c.spec.tflops_offered)) for c in claims)
    assert len(world.compute.list_managed()) == len(claims) and 130 <= tflops <= 200


def test_a_preemptible_interruption_reaches_launch_marks_the_claim_and_replaces_it() -> None:
    from tests.service.fakes import World, make_pool

    world = World(make_pool())
    APPS["launch"].make_handler(lambda: world.deps)(raw("fc-timer"), None)
    instance = world.compute.list_managed()[0]
    event = json.loads(raw("ecs-preemptible-interruption"))
    event["data"]["instanceId"] = instance.instance_id
    before = len(world.compute.list_managed())
    result = APPS["launch"].make_handler(lambda: world.deps)(json.dumps(event).encode(), None)
    assert result["status"] == "handled" and not result["errors"]
    assert any(row.get("instance_id") == instance.instance_id for row in result["applied"])
    assert len(world.compute.list_managed()) > before, "the replacement, in the same invocation"
