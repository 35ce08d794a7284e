"""s.yaml (Serverless Devs, FC 3.0): its structure checked against the code it deploys.

`s` cannot plan offline (its components come from a host we cannot reach), so this resolves the
file's own `${vars.…}` references and checks: three fc3 functions on python3.12 whose handler
`index.handler` exists in functions/<name>/index.py and whose code is built from it plus the
`alibaba` extra; every environment variable set is one the code reads, and the ones the code
needs are set; 1-minute timers whose names match the FC timer sample; EventBridge rules that
match exactly the ECS sample events each is meant for; POST-only HTTP triggers on functions
that check the relay's HMAC; async retries with a failure destination; and a least-privilege
RAM policy (no wildcard action, RunInstances and DeleteInstances bound to the managed-by tag).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ("launch", "bind", "compact")
EVENTS = ROOT / "events" / "alibaba"
_REFERENCE = re.compile(r"\$\{vars\.([A-Za-z0-9_.]+)\}")


def _lookup(variables: dict[str, Any], path: str) -> Any:
    value: Any = variables
    for part in path.split("."):
        value = value[part]
    return value


def _resolve(node: Any, variables: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        return {key: _resolve(value, variables) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolve(value, variables) for value in node]
    if isinstance(node, str):
        whole = _REFERENCE.fullmatch(node)
        if whole:
            return _resolve(_lookup(variables, whole.group(1)), variables)
        return _REFERENCE.sub(lambda match: str(_lookup(variables, match.group(1))), node)
    return node


RAW = yaml.safe_load((ROOT / "s.yaml").read_text())
S = _resolve(RAW, RAW["vars"])
RESOURCES: dict[str, Any] = S["resources"]


def _function(name: str) -> dict[str, Any]:
    resource = RESOURCES[f"gpupool-{name}"]
    assert resource["component"] == "fc3"
    props: dict[str, Any] = resource["props"]
    return props


def _triggers(name: str, kind: str) -> list[dict[str, Any]]:
    return [t for t in _function(name)["triggers"] if t["triggerType"] == kind]


def _source_text() -> str:
    package = ROOT / "layers" / "gpupool" / "gpupool"
    return "\n".join(path.read_text() for path in package.rglob("*.py"))


def test_it_is_a_serverless_devs_3_project_of_three_functions() -> None:
    assert RAW["edition"] == "3.0.0"
    assert {name for name, r in RESOURCES.items() if r["component"] == "fc3"} == {
        f"gpupool-{f}" for f in FUNCTIONS
    }


@pytest.mark.parametrize("name", FUNCTIONS)
def test_each_function_runs_its_index_handler_on_python_3_12(name: str) -> None:
    props = _function(name)
    assert props["runtime"] == "python3.12" and props["handler"] == "index.handler"
    assert props["functionName"] == f"gpupool-{name}"
    index = ROOT / "functions" / name / "index.py"
    assert re.search(r"^handler = make_handler\(\)$", index.read_text(), re.MULTILINE)
    assert props["code"] == f"./.fc-build/{name}"
    build = " ".join(step["run"] for step in RESOURCES[f"gpupool-{name}"]["actions"]["pre-deploy"])
    assert f"cp functions/{name}/index.py .fc-build/{name}/index.py" in build
    assert "'.[alibaba]'" in build and "--python-version 3.12" in build
    assert 128 <= int(props["memorySize"]) <= 3072 and 30 <= int(props["timeout"]) <= 900


@pytest.mark.parametrize("name", FUNCTIONS)
def test_environment_names_are_read_by_the_code_and_the_required_ones_are_set(name: str) -> None:
    environment: dict[str, str] = _function(name)["environmentVariables"]
    source = _source_text()
    for variable in environment:
        assert f'"{variable}"' in source, f"{variable} is set in s.yaml but no code reads it"
    for required in ("GPUPOOL_CLUSTER_NAME", "ALIBABA_CLOUD_REGION_ID", "GPUPOOL_KUBECONFIG"):
        assert environment.get(required), required
    assert environment["GPUPOOL_KUBE_ACCESS"] == "kubeconfig"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_a_one_minute_timer_named_as_the_sample_expects(name: str) -> None:
    (timer,) = _triggers(name, "timer")
    assert (
        timer["triggerConfig"]["cronExpression"] == "@every 1m" and timer["triggerConfig"]["enable"] is True
    )
    sample = json.loads((EVENTS / "fc-timer.json").read_text())
    assert _triggers("launch", "timer")[0]["triggerName"] == sample["triggerName"]


def _matches(pattern: dict[str, list[str]], event: dict[str, Any]) -> bool:
    return all(event.get(key) in values for key, values in pattern.items())


def test_eventbridge_rules_match_exactly_their_ecs_samples() -> None:
    """State changes go to bind; preemptions to launch, which replaces the instance at once."""
    samples = {path.stem: json.loads(path.read_text()) for path in EVENTS.glob("ecs-*.json")}
    expected = {
        "bind": {
            "gpupool-bind-ecs-state-change": {
                "ecs-instance-state-change",
                "ecs-instance-state-change-deleted",
            }
        },
        "launch": {"gpupool-launch-ecs-preemption": {"ecs-preemptible-interruption"}},
        "compact": {},
    }
    for function, wanted in expected.items():
        rules = {t["triggerName"]: t["triggerConfig"] for t in _triggers(function, "eventbridge")}
        assert set(rules) == set(wanted), function
        for name, config in rules.items():
            pattern = json.loads(config["eventRuleFilterPattern"])
            assert {s for s, event in samples.items() if _matches(pattern, event)} == wanted[name], name
            assert config["asyncInvocationType"] is True and config["triggerEnable"] is True
            assert config["eventSinkConfig"]["deliveryOption"]["eventSchema"] == "CloudEvents"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_http_triggers_take_post_only_and_the_function_checks_hmac(name: str) -> None:
    (http,) = _triggers(name, "http")
    assert http["triggerConfig"]["methods"] == ["POST"]
    assert _function(name)["environmentVariables"]["GPUPOOL_RELAY_HMAC_SECRET"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_failed_async_events_are_retried_then_sent_to_the_failure_queue(name: str) -> None:
    config = _function(name)["asyncInvokeConfig"]
    assert 1 <= config["maxAsyncRetryAttempts"] <= 8
    destination = config["destinationConfig"]["onFailure"]["destination"]
    assert destination.startswith("acs:mns:") and destination.endswith(
        f"/queues/{S['vars']['failureQueue']}/messages"
    )


def test_the_ram_policy_is_least_privilege() -> None:
    role = RESOURCES["gpupool-role"]["props"]
    assert role["service"] == "fc.aliyuncs.com"
    for function in FUNCTIONS:
        assert _function(function)["role"].endswith(f":role/{role['name']}")
    statements = [s for policy in role["policies"] for s in policy["statement"]]
    actions = {action for s in statements for action in s["Action"]}
    assert actions == {
        "ecs:RunInstances",
        "ecs:TagResources",
        "ecs:DeleteInstances",
        "ecs:DescribeInstances",
        "ecs:DescribeVSwitches",
        "ecs:DescribeSecurityGroups",
        "ecs:DescribeImages",
        "ecs:DescribeRegions",
        "mns:SendMessage",
    }
    assert not any("*" in action for action in actions)
    by_action = {action: s for s in statements for action in s["Action"]}
    assert by_action["ecs:RunInstances"]["Condition"]["StringEquals"] == {
        "acs:RequestTag/managed-by": "tensor-fusion.ai"
    }
    assert by_action["ecs:DeleteInstances"]["Condition"]["StringEquals"] == {
        "acs:ResourceTag/managed-by": "tensor-fusion.ai"
    }
    from gpupool.adapters.ecs_api import ACTIONS

    called = {f"ecs:{action}" for action in ACTIONS if action != "DescribeUserData"}
    assert called <= actions, "every ECS action the adapter calls is allowed"
