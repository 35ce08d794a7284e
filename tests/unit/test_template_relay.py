"""template.yaml's relay-facing parts: the relay's two Lambda permissions per function, the relay's
role the stack creates (trusted through EKS Pod Identity or the cluster's OIDC provider by the relay's
ServiceAccount only, and given nothing but those permissions), the functions' EKS access entries into
the group the chart binds, the outputs `gpupool values` reads, the functions trusting only
IAM-authenticated URL calls from the relay's principal (no relay secret in a variable), optional VPC
placement, the Spot service-linked role only, and an optional KMS key usable only through EC2.
"""

from __future__ import annotations

import json
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
            assert permission["Properties"]["Principal"] == {
                "Fn::If": [
                    "HasGivenRelayPrincipal",
                    {"Ref": "RelayPrincipalArn"},
                    {"Fn::GetAtt": ["RelayRole", "Arn"]},
                ]
            }
            assert permission["Condition"] == "HasRelayPrincipal"
    conditions = TEMPLATE["Conditions"]
    assert conditions["HasRelayPrincipal"] == {
        "Fn::Or": [{"Condition": "CreatesRelayRole"}, {"Condition": "HasGivenRelayPrincipal"}]
    }


def test_the_stack_creates_the_relays_role_only_when_asked_and_one_principal_at_a_time() -> None:
    assert PARAMETERS["RelayIdentity"]["AllowedValues"] == ["pod-identity", "irsa", "none"]
    assert PARAMETERS["RelayIdentity"]["Default"] == "none"  # a stack from before keeps its RelayPrincipalArn
    assert RESOURCES["RelayRole"]["Condition"] == "CreatesRelayRole"
    assert TEMPLATE["Conditions"]["CreatesRelayRole"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "RelayIdentity"}, "none"]}]
    }
    rule = TEMPLATE["Rules"]["TheRelayRoleNeedsTheCluster"]
    assertions = [a["Assert"] for a in rule["Assertions"]]
    assert {"Fn::Equals": [{"Ref": "RelayPrincipalArn"}, ""]} in assertions
    assert {"Fn::Not": [{"Fn::Equals": [{"Ref": "EksClusterName"}, ""]}]} in assertions
    irsa = TEMPLATE["Rules"]["IrsaNeedsTheOidcIssuer"]
    assert irsa["RuleCondition"] == {"Fn::Equals": [{"Ref": "RelayIdentity"}, "irsa"]}


def test_the_relays_role_is_given_nothing_but_the_url_permissions() -> None:
    role = RESOURCES["RelayRole"]["Properties"]
    assert set(role) == {"Description", "AssumeRolePolicyDocument"}  # no policies, no managed policies
    granted = {
        r["Properties"]["FunctionName"]["Ref"]
        for r in RESOURCES.values()
        if r["Type"] == "AWS::Lambda::Permission"
    }
    assert granted == set(FUNCTIONS)


def test_pod_identity_trusts_only_the_relays_service_account_in_this_cluster() -> None:
    document = RESOURCES["RelayRole"]["Properties"]["AssumeRolePolicyDocument"]["Fn::If"]
    assert document[0] == "UseIrsa"
    (statement,) = document[2]["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:RequestTag/eks-cluster-name": {"Ref": "EksClusterName"},
            "aws:RequestTag/kubernetes-namespace": {"Ref": "RelayNamespace"},
            "aws:RequestTag/kubernetes-service-account": {"Ref": "RelayServiceAccount"},
        }
    }
    association = RESOURCES["RelayPodIdentityAssociation"]
    assert association["Condition"] == "UsePodIdentity"
    assert association["Properties"] == {
        "ClusterName": {"Ref": "EksClusterName"},
        "Namespace": {"Ref": "RelayNamespace"},
        "ServiceAccount": {"Ref": "RelayServiceAccount"},
        "RoleArn": {"Fn::GetAtt": ["RelayRole", "Arn"]},
    }


def test_irsa_trusts_only_the_relays_service_account_through_the_clusters_oidc_provider() -> None:
    text = RESOURCES["RelayRole"]["Properties"]["AssumeRolePolicyDocument"]["Fn::If"][1]["Fn::Sub"]
    values = {
        "AWS::Partition": "aws",
        "AWS::AccountId": "123456789012",
        "EksOidcIssuer": "oidc.eks.us-east-1.amazonaws.com/id/ABC",
        "RelayNamespace": "gpupool-system",
        "RelayServiceAccount": "gpupool-scheduler",
    }
    document = json.loads(re.sub(r"\$\{([^}]+)\}", lambda m: values[m.group(1)], text))
    (statement,) = document["Statement"]
    assert statement["Principal"] == {
        "Federated": "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC"
    }
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    issuer = values["EksOidcIssuer"]
    assert statement["Condition"] == {
        "StringEquals": {
            f"{issuer}:sub": "system:serviceaccount:gpupool-system:gpupool-scheduler",
            f"{issuer}:aud": "sts.amazonaws.com",
        }
    }
    pattern = re.compile(PARAMETERS["EksOidcIssuer"]["AllowedPattern"])
    assert pattern.fullmatch("oidc.eks.us-east-1.amazonaws.com/id/ABC") and pattern.fullmatch("")
    assert not pattern.fullmatch("https://oidc.eks.us-east-1.amazonaws.com/id/ABC")


def test_the_functions_roles_enter_the_cluster_in_the_group_the_chart_binds() -> None:
    entries = {name: r for name, r in RESOURCES.items() if r["Type"] == "AWS::EKS::AccessEntry"}
    assert set(entries) == {"LaunchAccessEntry", "BindAccessEntry", "CompactAccessEntry"}
    for name, entry in entries.items():
        function = name.removesuffix("AccessEntry") + "Function"
        assert entry["Condition"] == "CreatesAccessEntries"
        assert entry["Properties"] == {
            "ClusterName": {"Ref": "EksClusterName"},
            "PrincipalArn": {"Fn::GetAtt": [f"{function}Role", "Arn"]},
            "Type": "STANDARD",
            "KubernetesGroups": [{"Ref": "FunctionsKubernetesGroup"}],
        }
    assert not re.fullmatch(PARAMETERS["FunctionsKubernetesGroup"]["AllowedPattern"], "system:masters")


def test_the_outputs_name_what_the_charts_values_need() -> None:
    outputs = TEMPLATE["Outputs"]
    assert {"LaunchUrl", "BindUrl", "CompactUrl", "ClusterName", "Region", "RelayIdentity", "RelayRoleArn",
            "RelayServiceAccount", "FunctionsKubernetesGroup"} <= set(outputs)  # fmt: skip
    assert outputs["RelayRoleArn"]["Condition"] == "HasRelayPrincipal"
    assert outputs["RelayServiceAccount"]["Value"] == {"Fn::Sub": "${RelayNamespace}/${RelayServiceAccount}"}


def test_the_functions_take_only_iam_authenticated_calls_from_the_relay_and_hold_no_secret() -> None:
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["GPUPOOL_HTTP_AUTH"] == "aws-iam"
    # The one caller the functions accept is the one the URL permissions let in: the given principal,
    # else the relay role the stack creates, else none (every call refused).
    assert variables["GPUPOOL_RELAY_PRINCIPAL"] == {
        "Fn::If": [
            "HasGivenRelayPrincipal",
            {"Ref": "RelayPrincipalArn"},
            {"Fn::If": ["CreatesRelayRole", {"Fn::GetAtt": ["RelayRole", "Arn"]}, ""]},
        ]
    }
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


def _mentions_the_relay(value: Any) -> bool:
    text = json.dumps(value)
    return '"RelayRole"' in text or '"RelayPrincipalArn"' in text


def _invokes(action: str) -> bool:
    """Whether an IAM action pattern covers lambda:InvokeFunction (wildcards included)."""
    pattern = re.escape(action.lower()).replace(r"\*", ".*").replace(r"\?", ".")
    return re.fullmatch(pattern, "lambda:invokefunction") is not None


def test_the_relays_identity_may_invoke_a_function_only_through_its_url() -> None:
    """Issue 33, Why 6: a direct Invoke would skip the Function URL's SigV4 over the body and the
    delivery ledger. Every grant anywhere in the template that names the relay's principal — a
    Lambda permission, or an IAM policy on its role — is read: lambda:InvokeFunction only with
    InvokedViaFunctionUrl, and no other Lambda action."""
    seen = 0
    for name, resource in RESOURCES.items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::Lambda::Permission" and _mentions_the_relay(properties.get("Principal")):
            seen += 1
            assert properties["Action"] in ("lambda:InvokeFunctionUrl", "lambda:InvokeFunction"), name
            if properties["Action"] == "lambda:InvokeFunction":
                assert properties.get("InvokedViaFunctionUrl") is True, name
        documents = [properties.get("PolicyDocument")] + [
            p.get("PolicyDocument") for p in properties.get("Policies", [])
        ]
        holders = [properties.get(k) for k in ("Roles", "Users", "Groups")]
        if name == "RelayRole" or _mentions_the_relay(holders):
            for document in filter(None, documents):
                for statement in document["Statement"]:
                    actions = (
                        statement["Action"]
                        if isinstance(statement["Action"], list)
                        else [statement["Action"]]
                    )
                    assert statement["Effect"] != "Allow" or not any(_invokes(a) for a in actions), name
    assert seen == 2 * len(FUNCTIONS)
