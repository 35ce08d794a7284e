"""The Lambda handlers, called directly with the sample events and injected deps and service.

Covers: each sample reaches the right function's service entry point as the right cause (and
nothing else does); deps are built once, lazily, never for an ignored event; outcomes map to
raise (retryable) / acknowledge (permanent) / HTTP 200 / 400 / 503 on the Function URL; logs
carry the fixed keys; module import pulls in neither boto3 nor kubernetes; each app binds the
shared body (gpupool.handlers.aws_lambda) to its own function; the real service entry points
run behind the handler on fakes; and no arbitrary JSON payload makes a handler raise
(hypothesis). The Function URL samples are trusted as template.yaml deploys them: the
handlers' environment says ``aws-iam`` with the samples' relay role (``RELAY_AUTH``, passed to
``make_handler``); test_fc_handlers.py covers every refusal.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
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
from gpupool.core.planning.plan import Plan
from gpupool.handlers import aws_lambda, common
from gpupool.handlers.relay_auth import HTTP_AUTH_VARIABLE, RELAY_PRINCIPAL_VARIABLE
from gpupool.service.errors import PermanentError, Throttled
from gpupool.service.outcome import Outcome
from gpupool.testing.memory_ports import MemoryClock, MemoryDeliveryLedger

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events" / "aws"
FUNCTIONS = ("launch", "bind", "compact")
# The relay's role, whose session signed the samples (requestContext.authorizer.iam.userArn).
RELAY_ROLE = "arn:aws:iam::123456789012:role/gpupool-relay"
RELAY_AUTH = {HTTP_AUTH_VARIABLE: "aws-iam", RELAY_PRINCIPAL_VARIABLE: RELAY_ROLE}


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


APPS = {name: _load(ROOT / "functions" / name / "app.py", f"gpupool_test_{name}_app") for name in FUNCTIONS}


def event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return loaded


class StubService:
    """Records each call; returns `outcome` or raises `error`."""

    def __init__(self, outcome: Outcome | None = None, error: Exception | None = None) -> None:
        self.calls: list[tuple[Any, Any, bool]] = []
        self.outcome = outcome or Outcome(plan=Plan(reasons=("nothing to do",)))
        self.error = error

    def __call__(self, cause: Any, deps: Any, /, *, dry_run: bool = False) -> Outcome:
        self.calls.append((cause, deps, dry_run))
        if self.error is not None:
            raise self.error
        return self.outcome


class StubDeps:
    """What the handler body itself reads of deps: the delivery ledger, the clock, the holder."""

    def __init__(self) -> None:
        self.deliveries = MemoryDeliveryLedger()
        self.clock = MemoryClock()
        self.holder = "test"


class DepsFactory:
    def __init__(self) -> None:
        self.built = 0
        self.deps = StubDeps()

    def __call__(self) -> Any:
        self.built += 1
        return self.deps


def handler_for(
    function: str, service: StubService, factory: DepsFactory | None = None, *, dry_run: bool = False
) -> Callable[[Any, Any], dict[str, Any]]:
    handler: Callable[[Any, Any], dict[str, Any]] = APPS[function].make_handler(
        factory or DepsFactory(), service=lambda: service, dry_run=dry_run, environ=RELAY_AUTH
    )
    return handler


# (sample, the function it is meant for, the cause kind that function's service receives)
ROUTED = [
    ("scheduled-event", "launch", Reconcile),
    ("scheduler-without-input", "launch", Reconcile),
    ("scheduler-without-input", "bind", Sweep),
    ("scheduler-without-input", "compact", Compact),
    ("scheduler-with-input", "launch", Reconcile),
    ("ec2-state-change-running", "bind", InstanceStateChanged),
    ("ec2-state-change-terminated", "bind", InstanceStateChanged),
    ("ec2-state-change-stopping", "bind", InstanceStateChanged),
    ("ec2-spot-interruption-warning", "launch", InstanceInterruption),
    ("ec2-rebalance-recommendation", "launch", InstanceInterruption),
    ("function-url-pod-unschedulable", "launch", Reconcile),
    ("function-url-pool-changed", "launch", Reconcile),
    ("function-url-cluster-changed", "launch", Reconcile),
    ("function-url-node-joined", "bind", NodeChanged),
    ("function-url-node-ready", "bind", NodeChanged),
    ("function-url-node-deleted", "bind", NodeChanged),
    ("function-url-claim-deleted", "bind", ClaimDeleted),
    ("function-url-pool-manual-compaction", "compact", Compact),
]


@pytest.mark.parametrize(("sample", "function", "kind"), ROUTED, ids=[f"{s}->{f}" for s, f, _ in ROUTED])
def test_sample_reaches_its_service_as_its_cause(sample: str, function: str, kind: type) -> None:
    service, factory = StubService(), DepsFactory()
    result = handler_for(function, service, factory)(event(sample), None)
    assert len(service.calls) == 1
    cause, deps, dry_run = service.calls[0]
    assert isinstance(cause, kind)
    assert deps is factory.deps
    assert dry_run is False
    if sample.startswith("function-url-"):
        assert result["statusCode"] == 200
        assert json.loads(result["body"])["status"] == "handled"
    else:
        assert result["status"] == "handled"
        assert result["plan"] == {"actions": [], "reasons": ["nothing to do"]}


@pytest.mark.parametrize("function", FUNCTIONS)
def test_a_sample_for_another_function_is_ignored_without_building_deps(function: str) -> None:
    for sample, owner, _ in ROUTED:
        if owner == function or sample.startswith("schedule"):
            continue
        service, factory = StubService(), DepsFactory()
        result = handler_for(function, service, factory)(event(sample), None)
        assert service.calls == [], sample
        assert factory.built == 0, sample
        if sample.startswith("function-url-"):
            assert result["statusCode"] == 400, sample
            assert "handled by the" in json.loads(result["body"])["error"]
        else:
            assert result["status"] == "ignored", sample


def test_deps_are_built_once_per_cold_start() -> None:
    service, factory = StubService(), DepsFactory()
    handler = handler_for("bind", service, factory)
    for sample in ("ec2-state-change-running", "function-url-node-ready", "scheduler-without-input"):
        handler(event(sample), None)
    assert factory.built == 1
    assert len(service.calls) == 3


def test_a_failed_deps_build_is_retried_on_the_next_event() -> None:
    attempts: list[int] = []

    def flaky() -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("API server unreachable")
        return "deps"

    service = StubService()
    handler = APPS["launch"].make_handler(flaky, service=lambda: service)
    with pytest.raises(ConnectionError):
        handler(event("scheduled-event"), None)
    handler(event("scheduled-event"), None)
    assert len(attempts) == 2
    assert service.calls[0][1] == "deps"


def test_dry_run_reaches_the_service() -> None:
    service = StubService()
    handler_for("compact", service, dry_run=True)(event("scheduler-without-input"), None)
    assert service.calls[0][2] is True


BAD_BODIES = [
    ("not JSON", "<xml/>"),
    (
        "unknown type",
        json.dumps({"specversion": "1.0", "id": "1", "source": "/r", "type": "x.y", "data": {}}),
    ),
    ("missing data field", json.dumps({**json.loads(event("function-url-node-ready")["body"]), "data": {}})),
    ("empty", ""),
]


@pytest.mark.parametrize(("label", "body"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_bad_webhook_body_is_a_400_with_a_reason_and_changes_nothing(label: str, body: str) -> None:
    service, factory = StubService(), DepsFactory()
    request = {**event("function-url-node-ready"), "body": body}
    response = handler_for("bind", service, factory)(request, None)
    assert response["statusCode"] == 400, label
    assert json.loads(response["body"])["error"]
    assert service.calls == []
    assert factory.built == 0


def test_a_function_url_request_is_an_http_call_however_it_arrives() -> None:
    """Intake alone tells an HTTP request from an EventBridge event (on the parsed event), so the
    handler answers over HTTP exactly when intake read the relay's request."""
    for request in (event("function-url-node-ready"), json.dumps(event("function-url-node-ready"))):
        service = StubService()
        assert handler_for("bind", service)(request, None)["statusCode"] == 200
        assert isinstance(service.calls[0][0], NodeChanged)
    assert "statusCode" not in handler_for("bind", StubService())(
        json.dumps(event("ec2-state-change-running")), None
    )


def test_base64_webhook_body_is_accepted() -> None:
    service = StubService()
    request = event("function-url-claim-deleted")
    request["body"] = base64.b64encode(request["body"].encode()).decode()
    request["isBase64Encoded"] = True
    assert handler_for("bind", service)(request, None)["statusCode"] == 200
    assert isinstance(service.calls[0][0], ClaimDeleted)


def test_malformed_eventbridge_event_is_acknowledged_with_a_reason() -> None:
    service = StubService()
    broken = event("ec2-state-change-running")
    broken["detail"] = {"state": "running"}
    result = handler_for("bind", service)(broken, None)
    assert result["status"] == "ignored"
    assert "instance-id" in result["reason"]
    assert service.calls == []


def test_retryable_outcome_raises_so_lambda_retries() -> None:
    outcome = Outcome(errors=["launch claim pool-a-0001: throttled"], retryable=True)
    handler = handler_for("launch", StubService(outcome))
    with pytest.raises(common.RetryableFailure, match="throttled"):
        handler(event("scheduled-event"), None)


def test_retryable_outcome_on_the_url_is_a_503() -> None:
    outcome = Outcome(errors=["conflict"], retryable=True)
    response = handler_for("launch", StubService(outcome))(event("function-url-pool-changed"), None)
    assert response["statusCode"] == 503
    assert response["headers"]["retry-after"]


def test_retryable_domain_error_raises() -> None:
    handler = handler_for("launch", StubService(error=Throttled("rate exceeded")))
    with pytest.raises(Throttled):
        handler(event("ec2-spot-interruption-warning"), None)


def test_unexpected_error_raises() -> None:
    handler = handler_for("launch", StubService(error=KeyError("bug")))
    with pytest.raises(KeyError):
        handler(event("ec2-spot-interruption-warning"), None)


def test_permanent_domain_error_is_acknowledged() -> None:
    handler = handler_for("launch", StubService(error=PermanentError("UnauthorizedOperation")))
    result = handler(event("scheduled-event"), None)
    assert result["status"] == "failed"
    assert result["errors"] == ["UnauthorizedOperation"]
    response = handler(event("function-url-pool-changed"), None)
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["status"] == "failed"


def test_permanent_errors_in_the_outcome_are_acknowledged() -> None:
    outcome = Outcome(errors=["claim pool-a-0001: InvalidParameterValue"], retryable=False)
    result = handler_for("launch", StubService(outcome))(event("scheduled-event"), None)
    assert result["status"] == "handled"
    assert result["errors"] == ["claim pool-a-0001: InvalidParameterValue"]


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    """What the handlers' Powertools logger writes (its handler pointed at a buffer for the test)."""
    stream = io.StringIO()
    handler = common.logger.registered_handler
    previous = handler.setStream(stream)
    yield stream
    handler.setStream(previous)


def _log_lines(text: str) -> list[dict[str, Any]]:
    lines = []
    for line in text.splitlines():
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict) and "level" in parsed:
            lines.append(parsed)
    return lines


def test_logs_are_structured_with_the_fixed_keys(logs: io.StringIO) -> None:
    handler_for("launch", StubService())(event("ec2-spot-interruption-warning"), None)
    handled = [line for line in _log_lines(logs.getvalue()) if line["message"] == "handled"]
    assert len(handled) == 1
    assert handled[0]["instance_id"] == "i-0abc123def4567890"
    assert handled[0]["event_id"] == "1e5527d7-bb36-4607-3370-4164db56a40e"
    assert handled[0]["function"] == "launch"


def test_ignored_event_logs_its_reason(logs: io.StringIO) -> None:
    handler_for("launch", StubService())({"hello": "world"}, None)
    ignored = [line for line in _log_lines(logs.getvalue()) if line["message"] == "event ignored"]
    assert len(ignored) == 1
    assert "id" in ignored[0]["reason"]


def test_keys_of_one_event_do_not_leak_into_the_next(logs: io.StringIO) -> None:
    handler = handler_for("bind", StubService())
    handler(event("ec2-state-change-stopping"), None)
    handler(event("function-url-claim-deleted"), None)
    last = [line for line in _log_lines(logs.getvalue()) if line["message"] == "handled"][-1]
    assert last["claim"] == "pool-a-claim-x7k2p"
    assert "instance_id" not in last


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_app_binds_the_shared_body_to_its_own_function(function: str) -> None:
    assert function == APPS[function].FUNCTION
    assert APPS[function].make_handler.args == (function,)
    assert callable(APPS[function].handler)


def test_the_shared_body_refuses_an_unknown_function() -> None:
    with pytest.raises(ValueError, match="unknown function 'resize'"):
        aws_lambda.make_handler("resize")  # type: ignore[arg-type]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_module_import_pulls_in_no_sdk(function: str) -> None:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import app; "
        "heavy = sorted(m for m in ('boto3', 'kubernetes', 'gpupool.adapters', 'gpupool.service') "
        "if m in sys.modules); print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "functions" / function)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == ""


def test_the_default_service_is_the_real_entry_point() -> None:
    assert set(common.SERVICE_ENTRIES) == set(FUNCTIONS)
    for function in FUNCTIONS:
        entry = common.SERVICE_ENTRIES[function]()
        assert entry.__name__ == f"handle_{function}"
        assert entry.__module__ == f"gpupool.service.{function}"


def test_the_services_stdlib_logs_come_out_as_json_with_the_event_keys(logs: io.StringIO) -> None:
    import logging

    class LoggingService(StubService):
        def __call__(self, cause: Any, deps: Any, /, *, dry_run: bool = False) -> Outcome:
            logging.getLogger("gpupool.service").info("plan")
            return super().__call__(cause, deps, dry_run=dry_run)

    handler_for("bind", LoggingService())(event("function-url-node-joined"), None)
    plan = [line for line in _log_lines(logs.getvalue()) if line["message"] == "plan"]
    assert len(plan) == 1
    assert plan[0]["node"] == "ip-10-0-1-23.ec2.internal"
    assert plan[0]["event_id"] == "relay-0004-node-joined"


# ---- the real service entry points behind the handlers, on the in-memory fakes -----------------
def _real(function: str, world: Any) -> Callable[[Any, Any], dict[str, Any]]:
    from dataclasses import replace

    deps = replace(world.deps, deliveries=MemoryDeliveryLedger())
    handler: Callable[[Any, Any], dict[str, Any]] = APPS[function].make_handler(
        lambda: deps, environ=RELAY_AUTH
    )
    return handler


def _relay(sample: str, **data: str) -> dict[str, Any]:
    request = event(sample)
    body = json.loads(request["body"])
    body["data"].update(data)
    request["body"] = json.dumps(body)
    return request


def test_one_schedule_delivered_ten_times_launches_only_what_the_gap_needs() -> None:
    from tests.service.fakes import World, make_pool

    world = World(make_pool(min_tflops="130", min_vram="32Gi"))
    handler = _real("launch", world)
    results = [handler(event("scheduled-event"), None) for _ in range(10)]
    assert all(result["status"] == "handled" and not result["errors"] for result in results)
    claims = world.claims()
    instances = world.compute.list_managed()
    assert len(claims) == len({claim.name for claim in claims}) == len(instances) > 0
    assert sum(len(result["applied"]) for result in results[1:]) == 0


def test_a_throttled_launch_raises_for_a_lambda_retry_and_the_retry_finishes_the_job() -> None:
    from tests.service.fakes import World, make_pool

    world = World(make_pool())
    world.compute.fail_next("launch", Throttled("RequestLimitExceeded"))
    handler = _real("launch", world)
    with pytest.raises(common.RetryableFailure):
        handler(event("scheduled-event"), None)
    handler(event("scheduled-event"), None)
    assert len(world.compute.list_managed()) == len(world.claims(live_only=True)) > 0


def test_claim_deleted_webhook_terminates_its_instance() -> None:
    from tests.service.fakes import World, make_pool

    world = World(make_pool())
    _real("launch", world)(event("scheduled-event"), None)
    claim = world.claims()[0]
    world.cluster.delete_claim(claim.name)
    response = _real("bind", world)(_relay("function-url-claim-deleted", claim=claim.name), None)
    assert response["statusCode"] == 200
    assert claim.name not in {c.name for c in world.claims()}
    assert claim.status is not None
    assert claim.status.instance_id not in {i.instance_id for i in world.compute.list_managed()}


def test_spot_warning_marks_the_claim_of_the_instance() -> None:
    from tests.service.fakes import World, make_pool

    world = World(make_pool())
    _real("launch", world)(event("scheduled-event"), None)
    instance = world.compute.list_managed()[0]
    warning = event("ec2-spot-interruption-warning")
    warning["detail"]["instance-id"] = instance.instance_id
    result = _real("launch", world)(warning, None)
    assert result["status"] == "handled"
    marked = [row for row in result["applied"] if row.get("instance_id") == instance.instance_id]
    assert any(row["result"] == "applied" for row in marked)


def test_bad_webhook_changes_nothing_in_the_cluster_or_the_cloud() -> None:
    from tests.service.fakes import World, make_pool

    world = World(make_pool())
    calls = (len(world.cluster.calls), len(world.compute.calls))
    for function in FUNCTIONS:
        response = _real(function, world)({**event("function-url-node-ready"), "body": "{]"}, None)
        assert response["statusCode"] == 400
    assert (len(world.cluster.calls), len(world.compute.calls)) == calls


def test_compact_tick_runs_the_real_service() -> None:
    from tests.service.fakes import World, make_pool

    world = World(make_pool())
    result = _real("compact", world)(event("scheduler-without-input"), None)
    assert result["status"] == "handled"
    assert result["cause"]["kind"] == "compact"
    assert not result["errors"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=12,
)
_url_requests = _json.map(lambda body: {**event("function-url-node-ready"), "body": json.dumps(body)})


@settings(max_examples=150, deadline=None)
@given(payload=_json | _url_requests, function=st.sampled_from(FUNCTIONS))
def test_no_payload_makes_a_handler_raise(payload: Any, function: str) -> None:
    result = handler_for(function, StubService())(payload, None)
    if (isinstance(payload, dict) and "requestContext" in payload) or "statusCode" in result:
        assert result["statusCode"] in (200, 400)
    else:
        assert result["status"] in ("handled", "ignored")
