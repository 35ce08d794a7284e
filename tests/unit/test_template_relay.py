"""template.yaml's relay-facing parts: the relay's two Lambda permissions per function, the NoEcho HMAC
secret reaching the functions, optional VPC placement, the Spot service-linked role only, and an
optional KMS key usable only through EC2.
"""

from __future__ import annotations

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


def test_the_hmac_secret_is_no_echo_and_reaches_every_function() -> None:
    assert PARAMETERS["RelayHmacSecret"]["NoEcho"] is True and PARAMETERS["RelayHmacSecret"]["Default"] == ""
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["GPUPOOL_RELAY_HMAC_SECRET"] == {"Ref": "RelayHmacSecret"}
    for function in FUNCTIONS:  # no function overrides the global variables away
        assert "GPUPOOL_RELAY_HMAC_SECRET" not in (RESOURCES[function]["Properties"].get("Environment") or {})


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
