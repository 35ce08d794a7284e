"""The Function Compute handlers (functions/*/index.py), called as FC 3.0 calls them: event as bytes.

Covers: each events/alibaba sample reaches the right function's service as the right cause, and
a sample for another function is ignored without building deps; HTTP-trigger answers 200 / 400 /
503, retryable outcomes raise (FC's async retry and failure destination take over); the FC
context's STS credentials reach the deps; the HMAC check on both HTTP entry points (FC HTTP
trigger and Lambda Function URL): with GPUPOOL_RELAY_HMAC_SECRET set, unsigned, wrongly signed
and stale requests get 401 and neither deps nor the service are touched, a signed one passes;
module import pulls in no SDK; the real services behind the FC handler on the service fakes;
and no bytes at all make a handler raise (hypothesis).
"""

from __future__ import annotations

import base64
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

from gpupool.core.intake.causes import (
    ClaimDeleted,
    Compact,
    InstanceInterruption,
    InstanceStateChanged,
    NodeChanged,
    Reconcile,
    Sweep,
)
from gpupool.core.intake.signature import sign_body
from gpupool.handlers import common, fc
from gpupool.service.errors import Throttled
from gpupool.service.outcome import Outcome
from tests.service.test_handlers import APPS as LAMBDA_APPS
from tests.service.test_handlers import DepsFactory, StubService
from tests.service.test_handlers import event as aws_event

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events" / "alibaba"
FUNCTIONS = ("launch", "bind", "compact")
SECRET = "relay-shared-secret"


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


def fc_handler(function: str, service: StubService, factory: DepsFactory | None = None) -> Any:
    return APPS[function].make_handler(factory or DepsFactory(), service=lambda: service)


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


# ---- HMAC on both HTTP entry points -----------------------------------------------------------
def _signed(request: dict[str, Any], *, secret: str = SECRET, at: float | None = None) -> dict[str, Any]:
    body = request["body"].encode()
    headers = sign_body(secret.encode(), body, timestamp=int(at if at is not None else time.time()))
    return {**request, "headers": {**request["headers"], **headers}}


def _fc_request(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(raw(name))
    return loaded


ENTRY_POINTS = [
    (
        "fc",
        lambda service, factory: fc_handler("bind", service, factory),
        lambda: _fc_request("fc-http-node-ready"),
    ),
    (
        "lambda",
        lambda service, factory: LAMBDA_APPS["bind"].make_handler(factory, service=lambda: service),
        lambda: aws_event("function-url-node-ready"),
    ),
]
REFUSED = {
    "unsigned": lambda request: request,
    "wrong secret": lambda request: _signed(request, secret="another-secret"),
    "stale": lambda request: _signed(request, at=time.time() - 600),
    "body changed after signing": lambda request: {**_signed(request), "body": request["body"] + " "},
}


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
@pytest.mark.parametrize("case", list(REFUSED))
def test_a_badly_signed_relay_call_is_a_401_and_changes_nothing(
    entry: Any, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(common.HMAC_SECRET_VARIABLE, SECRET)
    _, make, request = entry
    service, factory = StubService(), DepsFactory()
    response = make(service, factory)(REFUSED[case](request()), None)
    assert response["statusCode"] == 401, case
    assert json.loads(response["body"])["error"]
    assert SECRET not in response["body"]
    assert service.calls == [] and factory.built == 0


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_a_signed_relay_call_is_handled(entry: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(common.HMAC_SECRET_VARIABLE, SECRET)
    _, make, request = entry
    service = StubService()
    assert make(service, DepsFactory())(_signed(request()), None)["statusCode"] == 200
    assert len(service.calls) == 1


def test_a_signed_base64_body_is_checked_on_its_decoded_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(common.HMAC_SECRET_VARIABLE, SECRET)
    signed = _signed(_fc_request("fc-http-node-ready"))
    signed["body"] = base64.b64encode(signed["body"].encode()).decode()
    signed["isBase64Encoded"] = True
    service = StubService()
    assert fc_handler("bind", service)(json.dumps(signed).encode(), None)["statusCode"] == 200


def test_without_a_secret_events_that_are_not_http_are_never_asked_for_a_signature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(common.HMAC_SECRET_VARIABLE, SECRET)
    service = StubService()
    assert fc_handler("launch", service)(raw("ecs-preemptible-interruption"), None)["status"] == "handled"
    monkeypatch.delenv(common.HMAC_SECRET_VARIABLE)
    assert fc_handler("bind", service)(raw("fc-http-node-ready"), None)["statusCode"] == 200


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
    assert result.get("status") in ("handled", "ignored") or result.get("statusCode") in (200, 400)


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
    return event


@settings(max_examples=200, deadline=None)
@given(event=_mutated_sample(), function=st.sampled_from(FUNCTIONS))
def test_wrong_types_in_any_field_never_raise_and_reach_the_service_only_as_a_valid_cause(
    event: dict[str, Any], function: str
) -> None:
    service = StubService()
    result = fc_handler(function, service)(json.dumps(event).encode(), None)
    if "statusCode" in result:
        assert result["statusCode"] in (200, 400)
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
