"""template.yaml's relay-facing parts: the relay's two Lambda permissions per function, the functions
trusting only IAM-authenticated URL calls from the relay's principal (and holding no relay secret
in a variable), optional VPC placement, the Spot service-linked role only, and an optional KMS key
usable only through EC2.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cfnlint.decode import decode  # type: ignore[import-untyped]

TEMPLATE, _ = decode(str(Path(__file__).resolve().parents[2] / "template.yaml"))
RESOURCES: dict[str, Any] = TEMPLATE["Resources"]
PARAMETERS: dict[str, Any] = TEMPLATE["Parameters"]
FUNCTIONS = ("LaunchFunction", "BindFunction", "CompactFunction")


def _permissions(function: str) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["Action"]: r
        for r in RESOURCES.values()
        if r["Type"] == "AWS::Lambda::Permission" and r["Properties"]["FunctionName"] == {"Ref": function}
    }


def _statements(policy: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = RESOURCES[policy]["Properties"]["PolicyDocument"]["Statement"]
    return statements


def test_the_relay_may_invoke_each_function_only_through_its_url() -> None:
    for function in FUNCTIONS:
        permissions = _permissions(function)
        assert set(permissions) == {"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"}, function
        url, invoke = permissions["lambda:InvokeFunctionUrl"], permissions["lambda:InvokeFunction"]
        assert url["Properties"]["FunctionUrlAuthType"] == "AWS_IAM"
        assert invoke["Properties"]["InvokedViaFunctionUrl"] is True
        for permission in (url, invoke):
            assert permission["Properties"]["Principal"] == {"Ref": "RelayPrincipalArn"}
            assert permission["Condition"] == "HasRelayPrincipal"


def test_the_functions_take_only_iam_authenticated_calls_from_the_relay_and_hold_no_secret() -> None:
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["GPUPOOL_HTTP_AUTH"] == "aws-iam"
    assert variables["GPUPOOL_RELAY_PRINCIPAL"] == {"Ref": "RelayPrincipalArn"}
    for function in FUNCTIONS:  # no function overrides the global variables away, or opens its URL
        assert not (RESOURCES[function]["Properties"].get("Environment") or {}), function
        assert RESOURCES[function]["Properties"]["FunctionUrlConfig"]["AuthType"] == "AWS_IAM"
    # No secret's value travels in a variable: no NoEcho parameter reaches the environment.
    secret_parameters = {name for name, p in PARAMETERS.items() if p.get("NoEcho")}
    referenced = {v["Ref"] for v in variables.values() if isinstance(v, dict) and "Ref" in v}
    assert not secret_parameters & referenced and "GPUPOOL_RELAY_HMAC_SECRET" not in variables
    pattern = re.compile(PARAMETERS["RelayPrincipalArn"]["AllowedPattern"])
    for accepted in ("", "arn:aws:iam::123456789012:role/gpupool-relay", "arn:aws:iam::123456789012:user/r"):
        assert pattern.fullmatch(accepted), accepted
    for refused in ("*", "123456789012", "arn:aws:iam::123456789012:root", "arn:aws:sts::1:assumed-role/r/s"):
        assert not pattern.fullmatch(refused), refused


def test_functions_join_the_vpc_only_when_subnets_are_given() -> None:
    assert PARAMETERS["VpcSubnetIds"]["Type"] == "CommaDelimitedList"
    vpc = TEMPLATE["Globals"]["Function"]["VpcConfig"]["Fn::If"]
    assert vpc[0] == "InVpc" and vpc[2] == {"Ref": "AWS::NoValue"}
    assert vpc[1] == {
        "SubnetIds": {"Ref": "VpcSubnetIds"},
        "SecurityGroupIds": {"Ref": "VpcSecurityGroupIds"},
    }
    assert RESOURCES["VpcAccessPolicy"]["Condition"] == "InVpc"
    for function in FUNCTIONS:
        assert {"Fn::If": ["InVpc", {"Ref": "VpcAccessPolicy"}, {"Ref": "AWS::NoValue"}]} in RESOURCES[
            function
        ]["Properties"]["Policies"]


def test_launch_may_create_only_the_spot_service_linked_role() -> None:
    found = [
        (policy, s)
        for policy in ("LaunchPolicy", "TerminatePolicy", "VpcAccessPolicy", "EbsKmsPolicy")
        for s in _statements(policy)
        if "iam:CreateServiceLinkedRole" in str(s["Action"])
    ]
    assert len(found) == 1 and found[0][0] == "LaunchPolicy"
    statement = found[0][1]
    assert statement["Condition"] == {"StringEquals": {"iam:AWSServiceName": "spot.amazonaws.com"}}
    assert statement["Resource"]["Fn::Sub"].endswith("/spot.amazonaws.com/AWSServiceRoleForEC2Spot")


def test_the_ebs_key_is_usable_only_by_launch_and_only_through_ec2() -> None:
    assert RESOURCES["EbsKmsPolicy"]["Condition"] == "HasEbsKmsKey"
    use, grant = _statements("EbsKmsPolicy")
    assert use["Condition"]["StringEquals"]["kms:ViaService"] == {
        "Fn::Sub": "ec2.${AWS::Region}.amazonaws.com"
    }
    assert grant["Action"] == "kms:CreateGrant" and grant["Condition"] == {
        "Bool": {"kms:GrantIsForAWSResource": True}
    }
    for statement in (use, grant):
        assert statement["Resource"] == {"Ref": "EbsKmsKeyArn"}
    holders = [f for f in FUNCTIONS if "EbsKmsPolicy" in str(RESOURCES[f]["Properties"]["Policies"])]
    assert holders == ["LaunchFunction"]
