"""template.yaml: cfn-lint clean, least-privilege IAM, exact EventBridge patterns that match the samples.

The EventBridge matcher below implements the part of EventBridge's pattern language the
template uses (exact values, "prefix", "anything-but", "exists", nested objects), enough to
check that every rule matches its sample events and nothing else.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode  # type: ignore[import-untyped]

from gpupool.core.intake.aws import DETAIL_TYPES

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = ROOT / "template.yaml"
FUNCTIONS = {"LaunchFunction": "launch", "BindFunction": "bind", "CompactFunction": "compact"}
TAGGED = {"aws:ResourceTag/managed-by": "tensor-fusion.ai"}


def _load() -> dict[str, Any]:
    template, matches = decode(str(TEMPLATE_PATH))
    assert not matches, matches
    assert isinstance(template, dict)
    return template


TEMPLATE = _load()
RESOURCES: dict[str, Any] = TEMPLATE["Resources"]


# ---- a tiny EventBridge pattern matcher ------------------------------------------------------
def _value_matches(rule: object, value: object, present: bool) -> bool:
    if isinstance(rule, dict):
        if "exists" in rule:
            return bool(rule["exists"]) == present
        if "prefix" in rule:
            return present and isinstance(value, str) and value.startswith(rule["prefix"])
        if "anything-but" in rule:
            excluded = rule["anything-but"]
            excluded = excluded if isinstance(excluded, list) else [excluded]
            return present and value not in excluded
        raise AssertionError(f"pattern operator not supported by this matcher: {rule}")
    return present and value == rule


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """Whether an EventBridge ``pattern`` matches ``event`` (arrays of values are OR'ed)."""
    for key, rule in pattern.items():
        present = key in event
        value = event.get(key)
        if isinstance(rule, dict) and not any(op in rule for op in ("exists", "prefix", "anything-but")):
            if not (present and isinstance(value, dict) and matches(rule, value)):
                return False
            continue
        assert isinstance(rule, list), f"{key}: EventBridge wants an array of values"
        values = value if isinstance(value, list) else [value]
        if not any(_value_matches(item, candidate, present) for item in rule for candidate in values):
            return False
    return True


def test_matcher_itself() -> None:
    event = {"source": "aws.ec2", "detail": {"state": "running"}}
    assert matches({"source": ["aws.ec2"]}, event)
    assert not matches({"source": ["aws.s3"]}, event)
    assert matches({"detail": {"state": ["stopped", "running"]}}, event)
    assert not matches({"detail": {"state": [{"anything-but": "running"}]}}, event)
    assert matches({"detail": {"zone": [{"exists": False}]}}, event)
    assert matches({"source": [{"prefix": "aws."}]}, event)


# ---- helpers over the template ---------------------------------------------------------------
def _function(name: str) -> dict[str, Any]:
    properties: dict[str, Any] = RESOURCES[name]["Properties"]
    return properties


def _events(kind: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for resource in FUNCTIONS:
        for event_name, spec in _function(resource).get("Events", {}).items():
            if spec["Type"] == kind:
                yield resource, event_name, spec["Properties"]


def _policy_names(function: str) -> list[str]:
    names: list[str] = []
    for entry in _function(function)["Policies"]:
        refs = entry["Fn::If"][1:] if "Fn::If" in entry else [entry]
        names += [ref["Ref"] for ref in refs if ref["Ref"] != "AWS::NoValue"]
    return names


def _statements(policy: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = RESOURCES[policy]["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _all_statements() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, resource in RESOURCES.items():
        document = resource.get("Properties", {}).get("PolicyDocument")
        if document:
            for statement in document["Statement"]:
                yield name, statement


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return actions if isinstance(actions, list) else [actions]


def _resources(statement: dict[str, Any]) -> list[Any]:
    resources = statement["Resource"]
    return resources if isinstance(resources, list) else [resources]


def _function_actions(function: str) -> set[str]:
    return {
        action
        for policy in _policy_names(function)
        for statement in _statements(policy)
        for action in _actions(statement)
    }


# ---- lint ------------------------------------------------------------------------------------
def test_cfn_lint_is_clean() -> None:
    tool = Path(sys.executable).parent / "cfn-lint"
    command = str(tool) if tool.exists() else shutil.which("cfn-lint")
    assert command, "cfn-lint is not installed; install the project's dev extra"
    result = subprocess.run(
        [command, str(TEMPLATE_PATH)], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ---- IAM -------------------------------------------------------------------------------------
def test_no_wildcard_actions_anywhere() -> None:
    for policy, statement in _all_statements():
        for action in _actions(statement):
            assert "*" not in action, f"{policy}: {action}"
    for resource in FUNCTIONS:
        for entry in _function(resource)["Policies"]:
            assert set(entry) <= {"Ref", "Fn::If"}, f"{resource}: inline or SAM policy template {entry}"


# Read-only calls that take no resource-level permission, beyond EC2's Describe* (the Pricing API).
READ_ONLY_ANY_RESOURCE = {"pricing:GetProducts"}


def test_only_describe_calls_get_every_resource() -> None:
    for policy, statement in _all_statements():
        if "*" in _resources(statement):
            assert all(
                action.split(":")[1].startswith("Describe") or action in READ_ONLY_ANY_RESOURCE
                for action in _actions(statement)
            ), policy


def test_launch_may_make_the_live_price_reads_and_they_are_read_only() -> None:
    from gpupool.adapters.aws.pricing import EC2_CALLS, AwsPricing

    needed = {f"ec2:{call}" for call in EC2_CALLS} | {"pricing:GetProducts"}
    assert {call.split(":")[1] for call in needed} == set(AwsPricing.api_names)
    assert needed <= _function_actions("LaunchFunction")
    granted = {a for _, s in _all_statements() for a in _actions(s) if a.startswith("pricing:")}
    assert granted == {"pricing:GetProducts"}
    variables = _function("LaunchFunction").get("Environment", {}).get("Variables", {})
    variables = variables or TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["GPUPOOL_PRICES"] == "live"


def test_terminate_only_instances_tagged_managed_by_tensor_fusion() -> None:
    found = 0
    for policy, statement in _all_statements():
        if "ec2:TerminateInstances" not in _actions(statement):
            continue
        found += 1
        assert statement["Effect"] == "Allow"
        assert _actions(statement) == ["ec2:TerminateInstances"], policy
        assert statement["Condition"]["StringEquals"].items() >= TAGGED.items(), policy
        assert "aws:ResourceTag/tensor-fusion.ai/cluster" in statement["Condition"]["StringEquals"]
        for resource in _resources(statement):
            assert resource["Fn::Sub"].endswith(":instance/*"), policy
    assert found == 1


def test_run_instances_creates_only_tagged_instances_and_volumes() -> None:
    for policy, statement in _all_statements():
        if "ec2:RunInstances" not in _actions(statement):
            continue
        created = [r for r in _resources(statement) if r["Fn::Sub"].endswith((":instance/*", ":volume/*"))]
        if created:
            condition = statement["Condition"]["StringEquals"]
            assert condition["aws:RequestTag/managed-by"] == "tensor-fusion.ai", policy


def test_a_reserved_launch_may_use_the_accounts_capacity_reservations_untagged_only_as_an_input() -> None:
    """capacity-reservations-only launches into a reservation, which RunInstances authorizes as
    one of its inputs; the reservation is not created or tagged, so it needs no tag condition."""
    (inputs,) = [s for _, s in _all_statements() if s.get("Sid") == "RunInstancesWithTheseInputs"]
    subs = [r["Fn::Sub"] for r in _resources(inputs)]
    assert "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:capacity-reservation/*" in subs
    assert _actions(inputs) == ["ec2:RunInstances"] and "Condition" not in inputs


def test_create_tags_only_while_launching() -> None:
    for policy, statement in _all_statements():
        if "ec2:CreateTags" in _actions(statement):
            assert statement["Condition"]["StringEquals"]["ec2:CreateAction"] == "RunInstances", policy


def test_pass_role_only_for_the_instance_role() -> None:
    statements = [s for _, s in _all_statements() if "iam:PassRole" in _actions(s)]
    assert len(statements) == 1
    assert _resources(statements[0]) == [{"Ref": "InstanceRoleArn"}]
    assert statements[0]["Condition"]["StringEquals"]["iam:PassedToService"] == "ec2.amazonaws.com"


def test_eks_describe_cluster_is_scoped_to_the_cluster() -> None:
    statements = [s for _, s in _all_statements() if "eks:DescribeCluster" in _actions(s)]
    assert len(statements) == 1
    assert _resources(statements[0])[0]["Fn::Sub"].endswith(":cluster/${EksClusterName}")


def test_each_function_gets_only_the_capabilities_it_uses() -> None:
    assert "ec2:RunInstances" in _function_actions("LaunchFunction")
    assert "ec2:TerminateInstances" not in _function_actions("LaunchFunction")
    for resource in ("BindFunction", "CompactFunction"):
        assert "ec2:TerminateInstances" in _function_actions(resource)
        assert "ec2:RunInstances" not in _function_actions(resource)
        assert "iam:PassRole" not in _function_actions(resource)
    for resource in FUNCTIONS:
        assert {"ec2:DescribeInstances", "eks:DescribeCluster"} <= _function_actions(resource)


# ---- functions, layer, triggers --------------------------------------------------------------
def test_functions_run_the_handlers_with_the_layer() -> None:
    globals_ = TEMPLATE["Globals"]["Function"]
    assert globals_["Runtime"] == "python3.12"
    assert globals_["Handler"] == "app.handler"
    assert globals_["Layers"] == [{"Ref": "GpupoolLayer"}]
    for resource, name in FUNCTIONS.items():
        code = ROOT / _function(resource)["CodeUri"]
        assert code == ROOT / "functions" / name
        assert (code / "app.py").exists()
        assert not (code / "__init__.py").exists()
    layer = RESOURCES["GpupoolLayer"]
    assert layer["Metadata"]["BuildMethod"] == "makefile"  # layers/gpupool/Makefile: see test_layer.py
    content = ROOT / layer["Properties"]["ContentUri"]
    assert (content / "requirements.txt").exists()
    assert (content / "gpupool" / "__init__.py").exists()


def test_function_urls_use_iam_auth() -> None:
    for resource in FUNCTIONS:
        assert _function(resource)["FunctionUrlConfig"]["AuthType"] == "AWS_IAM"


def test_failed_async_invocations_reach_the_dead_letter_queue() -> None:
    dlq = {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}
    for resource in FUNCTIONS:
        on_failure = _function(resource)["EventInvokeConfig"]["DestinationConfig"]["OnFailure"]
        assert on_failure == {"Type": "SQS", "Destination": dlq}
    for kind in ("ScheduleV2", "Schedule", "EventBridgeRule"):
        for resource, name, properties in _events(kind):
            assert properties["DeadLetterConfig"] == {"Arn": dlq}, f"{resource}.{name}"


def test_every_function_logs_to_a_group_with_retention() -> None:
    for resource in FUNCTIONS:
        group = _function(resource)["LoggingConfig"]["LogGroup"]["Ref"]
        assert RESOURCES[group]["Type"] == "AWS::Logs::LogGroup"
        assert RESOURCES[group]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_each_function_ticks_every_minute_on_exactly_one_schedule_service() -> None:
    v2 = {resource: props for resource, _, props in _events("ScheduleV2")}
    classic = {resource: props for resource, _, props in _events("Schedule")}
    assert set(v2) == set(classic) == set(FUNCTIONS)
    for resource in FUNCTIONS:
        assert v2[resource]["ScheduleExpression"] == "rate(1 minute)"
        assert classic[resource]["Schedule"] == "rate(1 minute)"
        assert v2[resource]["State"] == {"Fn::If": ["UseScheduler", "ENABLED", "DISABLED"]}
        assert classic[resource]["State"] == {"Fn::If": ["UseScheduler", "DISABLED", "ENABLED"]}


def test_parameters_for_cluster_and_kube_access() -> None:
    parameters = TEMPLATE["Parameters"]
    assert {"ClusterName", "KubeAccess", "EksClusterName", "KubeconfigSecretArn", "LogLevel"} <= set(
        parameters
    )
    assert parameters["KubeAccess"]["AllowedValues"] == ["eks", "kubeconfig-secret"]


# ---- EventBridge patterns against the samples ------------------------------------------------
def _samples() -> list[dict[str, Any]]:
    samples = [json.loads(path.read_text()) for path in sorted((ROOT / "events" / "aws").glob("*.json"))]
    return [sample for sample in samples if "detail-type" in sample]


# Interruption warnings go to launch (it replaces the node at once), state changes to bind.
_RULE_OWNERS = {
    "EC2 Instance State-change Notification": "BindFunction",
    "EC2 Spot Instance Interruption Warning": "LaunchFunction",
    "EC2 Instance Rebalance Recommendation": "LaunchFunction",
}


def test_rules_match_exactly_the_ec2_samples_each_for_the_function_that_handles_it() -> None:
    rules = list(_events("EventBridgeRule"))
    assert sorted(resource for resource, _, _ in rules) == ["BindFunction", "LaunchFunction"]
    for sample in _samples():
        owners = [resource for resource, _, spec in rules if matches(spec["Pattern"], sample)]
        expected = [_RULE_OWNERS[sample["detail-type"]]] if sample["source"] == "aws.ec2" else []
        assert owners == expected, sample["id"]


def test_rule_pattern_and_intake_agree_on_the_detail_types() -> None:
    patterns = [spec["Pattern"] for _, _, spec in _events("EventBridgeRule")]
    assert all(pattern["source"] == ["aws.ec2"] for pattern in patterns)
    detail_types = [dt for pattern in patterns for dt in pattern["detail-type"]]
    assert sorted(detail_types) == sorted(dt for source, dt in DETAIL_TYPES if source == "aws.ec2")
    for resource, _, spec in _events("EventBridgeRule"):
        assert {_RULE_OWNERS[dt] for dt in spec["Pattern"]["detail-type"]} == {resource}


@pytest.mark.parametrize(
    "other",
    [
        {"source": "aws.ec2", "detail-type": "EC2 Fast Launch State-change Notification"},
        {"source": "aws.ec2", "detail-type": "AWS API Call via CloudTrail"},
        {"source": "aws.autoscaling", "detail-type": "EC2 Instance State-change Notification"},
        {"source": "custom.ec2", "detail-type": "EC2 Spot Instance Interruption Warning"},
    ],
)
def test_rule_does_not_match_other_events(other: dict[str, Any]) -> None:
    for _, _, spec in _events("EventBridgeRule"):
        assert not matches(spec["Pattern"], {"version": "0", "id": "x", "detail": {}, **other})
