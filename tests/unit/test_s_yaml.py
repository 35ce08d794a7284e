"""s.yaml (Serverless Devs, FC 3.0): its structure checked against the code it deploys.

`s` cannot plan offline (its components come from a host we cannot reach), so this resolves the
file's own `${vars.…}` references and checks: three fc3 functions (and their HTTP-only relay-facing
twins, gpupool-<name>-relay, deploying the same built code) on python3.12 whose handler
`index.handler` exists in functions/<name>/index.py and whose code is built from it plus the
`alibaba` extra; every environment variable set is one the code reads, and the ones the code needs
are set; 1-minute timers whose names match the FC timer sample; EventBridge rules that match exactly
the ECS sample events each is meant for; POST-only HTTP triggers, on the twins alone, that FC itself
authenticates (`authType: function`, never anonymous) on functions that check the signed body
(`GPUPOOL_HTTP_AUTH=fc-signature`); no secret in a plaintext variable (the kubeconfig is a KMS
secret the role may read and decrypt, nothing else); async retries with a failure destination; and a
least-privilege RAM policy, evaluated as RAM evaluates it (`_allowed`: an Allow statement whose
action, resource pattern and every StringEquals condition match): RunInstances only with both the
managed-by and this cluster's tag on the request, no TagResources at all, DeleteInstances only on
instances carrying both tags, PassRole for the instance role alone — so the issue-22 walk-around
(tag another cluster's instance, then delete it) is refused at every step; the relay's policy
invokes the three twins and nothing else, and each takes HTTP-trigger requests only (no timer or
EventBridge trigger, GPUPOOL_HTTP_ONLY=true), so a direct InvokeFunction goes around nothing.
"""

from __future__ import annotations

import fnmatch
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
    } | {f"gpupool-{f}-relay" for f in FUNCTIONS}


def _relay_function(name: str) -> dict[str, Any]:
    resource = RESOURCES[f"gpupool-{name}-relay"]
    assert resource["component"] == "fc3"
    props: dict[str, Any] = resource["props"]
    return props


@pytest.mark.parametrize("name", FUNCTIONS)
def test_each_relay_facing_twin_runs_the_same_built_code_takes_http_only_and_is_deployed_after_it(
    name: str,
) -> None:
    twin, function = _relay_function(name), _function(name)
    assert twin["functionName"] == f"gpupool-{name}-relay"
    for same in ("runtime", "handler", "code", "role", "region", "memorySize", "timeout"):
        assert twin[same] == function[same], same
    assert "actions" not in RESOURCES[f"gpupool-{name}-relay"], "it reuses .fc-build/<name>"
    order = list(RESOURCES)
    assert order.index(f"gpupool-{name}") < order.index(f"gpupool-{name}-relay"), "built before"
    from gpupool.handlers.fc import HTTP_ONLY_VARIABLE

    environment = twin["environmentVariables"]
    assert environment == {**function["environmentVariables"], HTTP_ONLY_VARIABLE: "true"}
    assert HTTP_ONLY_VARIABLE not in function["environmentVariables"]
    assert [t["triggerType"] for t in twin["triggers"]] == ["http"]
    assert not [t for t in function["triggers"] if t["triggerType"] == "http"], "the relay has no way in"


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
    for required in ("GPUPOOL_CLUSTER_NAME", "ALIBABA_CLOUD_REGION_ID", "GPUPOOL_KUBECONFIG_SECRET"):
        assert environment.get(required), required
    assert environment["GPUPOOL_KUBE_ACCESS"] == "kubeconfig"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_no_secret_is_a_plaintext_variable(name: str) -> None:
    environment: dict[str, str] = _function(name)["environmentVariables"]
    # The variables that would hold a secret's value (the code reads them for local runs only).
    for plaintext in ("GPUPOOL_KUBECONFIG", "GPUPOOL_RELAY_HMAC_SECRET", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"):
        assert plaintext not in environment, plaintext
    assert not [v for v in environment.values() if "${env(" in str(v)], "deploy-time values land in plaintext"
    secret = environment["GPUPOOL_KUBECONFIG_SECRET"]
    statements = [s for p in RESOURCES["gpupool-role"]["props"]["policies"] for s in p["statement"]]
    kms = [s for s in statements if any(a.startswith("kms:") for a in s["Action"])]
    assert kms == [
        {
            "Effect": "Allow",
            "Action": ["kms:GetSecretValue"],
            "Resource": f"acs:kms:{S['vars']['region']}:${{config('AccountID')}}:secret/{secret}",
        },
        {  # GetSecretValue of a secret encrypted with a key you created needs kms:Decrypt on that key
            "Effect": "Allow",
            "Action": ["kms:Decrypt"],
            "Resource": f"acs:kms:{S['vars']['region']}:${{config('AccountID')}}:key/"
            "${env('GPUPOOL_KUBECONFIG_KEY_ID')}",
        },
    ]


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
def test_http_triggers_take_only_signed_posts_and_the_function_checks_the_signed_body(name: str) -> None:
    (http,) = [t for t in _relay_function(name)["triggers"] if t["triggerType"] == "http"]
    assert http["triggerConfig"]["methods"] == ["POST"]
    assert http["triggerConfig"]["authType"] == "function", "FC checks the relay's signature first"
    assert _relay_function(name)["environmentVariables"]["GPUPOOL_HTTP_AUTH"] == "fc-signature"
    from gpupool.handlers.relay_auth import HTTP_AUTH_VARIABLE

    assert HTTP_AUTH_VARIABLE == "GPUPOOL_HTTP_AUTH"
    assert not re.search(r"authType:\s*anonymous", (ROOT / "s.yaml").read_text())


@pytest.mark.parametrize("name", FUNCTIONS)
def test_failed_async_events_are_retried_then_sent_to_the_failure_queue(name: str) -> None:
    config = _function(name)["asyncInvokeConfig"]
    assert 1 <= config["maxAsyncRetryAttempts"] <= 8
    destination = config["destinationConfig"]["onFailure"]["destination"]
    assert destination.startswith("acs:mns:") and destination.endswith(
        f"/queues/{S['vars']['failureQueue']}/messages"
    )


# ---- RAM, as RAM evaluates a policy ------------------------------------------------------------
def _allowed(
    statements: list[dict[str, Any]],
    action: str,
    resource: str,
    *,
    request_tags: dict[str, str] | None = None,
    resource_tags: dict[str, str] | None = None,
) -> bool:
    """Whether some Allow statement grants `action` on `resource`: its Action lists the action, one
    of its Resource patterns matches (`*` any run of characters), and every StringEquals key holds
    one of its values — `acs:RequestTag/<k>` from the request's tags, `acs:ResourceTag/<k>` from
    the resource's (a missing tag matches no value). No Deny statements are used, so none is read."""
    context = {f"acs:RequestTag/{k}": v for k, v in (request_tags or {}).items()}
    context |= {f"acs:ResourceTag/{k}": v for k, v in (resource_tags or {}).items()}
    for statement in statements:
        assert statement["Effect"] == "Allow"
        patterns = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        if action not in statement["Action"] or not any(fnmatch.fnmatchcase(resource, p) for p in patterns):
            continue
        conditions = (statement.get("Condition") or {}).get("StringEquals") or {}
        if all(
            context.get(key) in (wanted if isinstance(wanted, list) else [wanted])
            for key, wanted in conditions.items()
        ):
            return True
    return False


ACCOUNT = "${config('AccountID')}"
REGION = S["vars"]["region"]
CLUSTER = S["vars"]["clusterName"]
OURS = {"managed-by": "tensor-fusion.ai", "tensor-fusion.ai/cluster": CLUSTER}
INSTANCE = f"acs:ecs:{REGION}:{ACCOUNT}:instance/i-0123"


def _role_statements() -> list[dict[str, Any]]:
    return [s for policy in RESOURCES["gpupool-role"]["props"]["policies"] for s in policy["statement"]]


def test_the_role_launches_only_tagged_as_this_clusters() -> None:
    statements = _role_statements()
    assert _allowed(statements, "ecs:RunInstances", INSTANCE, request_tags=OURS)
    assert not _allowed(
        statements, "ecs:RunInstances", INSTANCE, request_tags={"managed-by": "tensor-fusion.ai"}
    )
    other = {**OURS, "tensor-fusion.ai/cluster": "another-cluster"}
    assert not _allowed(statements, "ecs:RunInstances", INSTANCE, request_tags=other)
    # The tags the ECS adapter's RunInstances request carries for this cluster pass the condition.
    from gpupool.adapters.alibaba.request import ResolvedEcsNetwork, run_instances_params
    from tests.contract.ecs.conftest import make_claim, make_class, make_offering

    request = run_instances_params(
        make_claim(),
        make_class(),
        make_offering(),
        network=ResolvedEcsNetwork(image_id="m-1", vswitch_id="vsw-1", security_group_ids=("sg-1",)),
        cluster=CLUSTER,
        region=REGION,
        client_token="token-1",
    )
    sent = {tag["Key"]: tag["Value"] for tag in request["Tag"]}
    assert _allowed(statements, "ecs:RunInstances", INSTANCE, request_tags=sent)


def test_the_role_cannot_tag_another_clusters_instance_into_reach_and_delete_it() -> None:
    """Issue 22, Why 6: TagResources on `*` conditioned on the request's tag, and DeleteInstances
    on managed-by alone, let the role tag any instance and then delete it."""
    statements = _role_statements()
    theirs = {"managed-by": "tensor-fusion.ai", "tensor-fusion.ai/cluster": "another-cluster"}
    for tagging in ("ecs:TagResources", "ecs:AddTags", "ecs:UntagResources", "ecs:RemoveTags"):
        assert not _allowed(statements, tagging, INSTANCE, request_tags=OURS, resource_tags=theirs), tagging
    assert not _allowed(statements, "ecs:DeleteInstances", INSTANCE, resource_tags=theirs)
    assert not _allowed(
        statements, "ecs:DeleteInstances", INSTANCE, resource_tags={"managed-by": "tensor-fusion.ai"}
    )
    assert not _allowed(statements, "ecs:DeleteInstances", INSTANCE, resource_tags={})
    assert _allowed(statements, "ecs:DeleteInstances", INSTANCE, resource_tags=OURS)
    elsewhere = f"acs:ecs:cn-beijing:{ACCOUNT}:instance/i-0123"
    assert not _allowed(statements, "ecs:DeleteInstances", elsewhere, resource_tags=OURS)


def test_the_role_passes_only_the_instance_role() -> None:
    statements = _role_statements()
    role = S["vars"]["instanceRoleName"]
    assert role and "*" not in role
    assert _allowed(statements, "ram:PassRole", f"acs:ram:*:{ACCOUNT}:role/{role}")
    assert not _allowed(statements, "ram:PassRole", f"acs:ram:*:{ACCOUNT}:role/AliyunECSAdmin")
    assert not _allowed(statements, "ram:PassRole", f"acs:ram:*:{ACCOUNT}:role/{role}-2")


def test_the_relay_may_invoke_the_three_relay_facing_functions_and_nothing_else() -> None:
    statements = S["vars"]["relayInvokePolicy"]["Statement"]
    actions = {action for s in statements for action in s["Action"]}
    assert actions == {"fc:InvokeFunction"}
    for function in FUNCTIONS:
        assert _allowed(
            statements, "fc:InvokeFunction", f"acs:fc:{REGION}:{ACCOUNT}:functions/gpupool-{function}-relay"
        )
        assert not _allowed(
            statements, "fc:InvokeFunction", f"acs:fc:{REGION}:{ACCOUNT}:functions/gpupool-{function}"
        )
    assert not _allowed(statements, "fc:InvokeFunction", f"acs:fc:{REGION}:{ACCOUNT}:functions/other")
    assert not _allowed(
        statements, "fc:UpdateFunction", f"acs:fc:{REGION}:{ACCOUNT}:functions/gpupool-launch"
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
        "ecs:DeleteInstances",
        "ecs:DescribeInstances",
        "ecs:DescribeVSwitches",
        "ecs:DescribeSecurityGroups",
        "ecs:DescribeImages",
        "ecs:DescribeRegions",
        "ecs:DescribeAvailableResource",
        "ecs:DescribePrice",
        "ecs:DescribeSpotPriceHistory",
        "ram:PassRole",
        "kms:GetSecretValue",
        "kms:Decrypt",
        "mns:SendMessage",
    }
    assert not any("*" in action for action in actions)
    by_action = {action: s for s in statements for action in s["Action"]}
    assert by_action["ecs:RunInstances"]["Condition"]["StringEquals"] == {
        "acs:RequestTag/managed-by": "tensor-fusion.ai",
        "acs:RequestTag/tensor-fusion.ai/cluster": CLUSTER,
    }
    assert by_action["ecs:DeleteInstances"]["Condition"]["StringEquals"] == {
        "acs:ResourceTag/managed-by": "tensor-fusion.ai",
        "acs:ResourceTag/tensor-fusion.ai/cluster": CLUSTER,
    }
    assert by_action["mns:SendMessage"]["Resource"] == (
        f"acs:mns:{REGION}:{ACCOUNT}:/queues/{S['vars']['failureQueue']}/messages"
    )
    from gpupool.core.model.constants import TAG_CLUSTER, TAG_MANAGED_BY, TAG_MANAGED_BY_VALUE

    assert OURS == {TAG_MANAGED_BY: TAG_MANAGED_BY_VALUE, TAG_CLUSTER: CLUSTER}
    from gpupool.adapters.alibaba.api import ACTIONS

    called = {f"ecs:{action}" for action in ACTIONS if action != "DescribeUserData"}
    assert called <= actions, "every ECS action the adapter calls is allowed"


def test_the_relays_ram_identity_reaches_no_function_but_through_its_signed_http_trigger() -> None:
    """Every function the relay's policy lets it invoke takes HTTP-trigger requests only: a direct
    InvokeFunction could then carry nothing the trigger path would not check."""
    statements = S["vars"]["relayInvokePolicy"]["Statement"]
    for resource in S["resources"].values():
        props = resource.get("props") or {}
        name = props.get("functionName")
        if not name or not _allowed(
            statements, "fc:InvokeFunction", f"acs:fc:{REGION}:{ACCOUNT}:functions/{name}"
        ):
            continue
        kinds = {trigger["triggerType"] for trigger in props.get("triggers") or []}
        assert kinds == {"http"}, f"{name} also takes {sorted(kinds - {'http'})} events"
        # …and refuses, in its handler, any event a direct InvokeFunction could hand it.
        assert props["environmentVariables"]["GPUPOOL_HTTP_ONLY"] == "true", name


def test_the_role_may_make_the_live_price_reads_and_the_functions_make_them() -> None:
    from gpupool.adapters.alibaba.pricing import EcsPricing

    statements = [s for policy in RESOURCES["gpupool-role"]["props"]["policies"] for s in policy["statement"]]
    granted = {action for s in statements for action in s["Action"]}
    assert {f"ecs:{call}" for call in EcsPricing.api_names} <= granted
    assert all(call.startswith("Describe") for call in EcsPricing.api_names)  # read-only
    for function in FUNCTIONS:
        assert _function(function)["environmentVariables"]["GPUPOOL_PRICES"] == "live"
