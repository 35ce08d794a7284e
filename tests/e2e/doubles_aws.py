"""The AWS tools' doubles for docs/install-eks.md: aws, eksctl and sam (rules: install_doubles.py).

Must not: reach a network beyond 127.0.0.1 (the stack goes to moto's CloudFormation at $AWS_ENDPOINT_URL).
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml
from doubles_base import FIXTURES, ROOT, Refused, flags_of

ACCOUNT = "123456789012"
CA_PEM = b"-----BEGIN CERTIFICATE-----\nMIIDBTCCAe2gAwIBAgIIDOUBLE\n-----END CERTIFICATE-----\n"


# ---- aws ---------------------------------------------------------------------------------------
AWS_GLOBAL = ("--region", "--output", "--query", "--profile")
AWS_SERVICE_NAMES = {"service-quotas": "service-quotas", "s3api": "s3"}
MANAGED_POLICIES = {
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
}
AMI_PARAMETERS = (
    r"/aws/service/eks/optimized-ami/1\.\d+/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
    r"/aws/service/bottlerocket/aws-k8s-1\.\d+-nvidia/x86_64/latest/image_id",
)


def _aws_split(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    options: dict[str, str] = {}
    rest: list[str] = []
    words = list(argv)
    while words:
        word = words.pop(0)
        name, eq, value = word.partition("=")
        if name in AWS_GLOBAL:
            options[name] = value if eq else words.pop(0)
        elif word == "--no-cli-pager":
            continue
        else:
            rest.append(word)
    return options, rest


def _shorthand(text: str, shape: Any) -> Any:
    """The CLI's flat shorthand for a structure: Key=a,Values=x,y (a word without = extends a list)."""
    result: dict[str, Any] = {}
    last = None
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if eq and key in shape.members:
            last = key
            member = shape.members[key]
            result[key] = [value] if member.type_name == "list" else _scalar(value, member)
        elif last is not None and isinstance(result[last], list):
            result[last].append(part)
        else:
            raise Refused(f"Error parsing parameter: {text!r} is not Key=Value shorthand for {shape.name}")
    return result


def _scalar(value: str, shape: Any) -> Any:
    if value.startswith("file://"):
        return Path(value.removeprefix("file://")).read_text()
    kind = shape.type_name
    if kind in ("integer", "long"):
        return int(value)
    if kind in ("double", "float"):
        return float(value)
    if kind == "boolean":
        return value.lower() == "true"
    return value


def _value(values: list[str], shape: Any) -> Any:
    # The CLI reads any parameter given as file://PATH from that file first, then parses it.
    values = [Path(v.removeprefix("file://")).read_text() if v.startswith("file://") else v for v in values]
    kind = shape.type_name
    if kind == "list":
        if len(values) == 1 and values[0].lstrip().startswith("["):
            return json.loads(values[0])
        return [_value([v], shape.member) for v in values]
    if kind in ("structure", "map"):
        (text,) = values
        if text.lstrip().startswith("{"):
            return json.loads(text)
        if kind == "map":
            raise Refused(f"Error parsing parameter: give {shape.name} as JSON")
        return _shorthand(text, shape)
    if len(values) != 1:
        raise Refused(f"Unknown options: {' '.join(values[1:])}")
    return _scalar(values[0], shape)


def _operation(service: str, operation: str) -> Any:
    import botocore.session
    from botocore import xform_name

    model = botocore.session.get_session().get_service_model(AWS_SERVICE_NAMES.get(service, service))
    for name in model.operation_names:
        if xform_name(name).replace("_", "-") == operation:
            return model.operation_model(name)
    raise Refused(
        f"aws: error: argument operation: Invalid choice: {operation!r} (aws {service} has no such operation)"
    )


def _parameters(op: Any, words: list[str]) -> dict[str, Any]:
    from botocore import xform_name

    shape = op.input_shape
    members = {xform_name(name).replace("_", "-"): name for name in (shape.members if shape else {})}
    given: dict[str, list[str]] = {}
    current = None
    for word in words:
        if word.startswith("--"):
            flag, eq, value = word[2:].partition("=")
            if flag.startswith("no-") and flag[3:] in members:
                given[flag[3:]] = ["false"]
                current = None
                continue
            if flag not in members:
                raise Refused(f"Unknown options: --{flag}")
            current = flag
            given.setdefault(flag, [])
            if eq:
                given[flag].append(value)
        elif current is None:
            raise Refused(f"Unknown options: {word}")
        else:
            given[current].append(word)
    params: dict[str, Any] = {}
    for flag, values in given.items():
        member = shape.members[members[flag]]
        params[members[flag]] = (
            True if (member.type_name == "boolean" and not values) else _value(values, member)
        )
    missing = [
        xform_name(m).replace("_", "-") for m in (shape.required_members if shape else []) if m not in params
    ]
    if missing:
        raise Refused(
            f"aws: error: the following arguments are required: {', '.join('--' + m for m in missing)}"
        )
    return params


def _text(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, list):
        if all(isinstance(v, list) for v in value):
            return "\n".join("\t".join(_text(i) for i in row) for row in value)
        return "\t".join(_text(v) for v in value)
    if isinstance(value, dict):
        return "\t".join(_text(v) for v in value.values())
    return str(value)


def _cluster(state: dict[str, Any], name: str) -> dict[str, Any]:
    cluster = state.get("eks", {}).get(name)
    if cluster is None:
        raise Refused(
            f"An error occurred (ResourceNotFoundException) when calling the DescribeCluster operation: "
            f"No cluster found for name: {name}."
        )
    found: dict[str, Any] = cluster
    return found


def _iam_role(state: dict[str, Any], name: str) -> dict[str, Any]:
    role = state.get("iam_roles", {}).get(name)
    if role is None:
        raise Refused(f"An error occurred (NoSuchEntity): The role with name {name} cannot be found.")
    found: dict[str, Any] = role
    return found


def _answer_aws(state: dict[str, Any], service: str, name: str, p: dict[str, Any], region: str) -> Any:
    key = f"{service}:{name}"
    if key == "sts:GetCallerIdentity":
        return {
            "UserId": "AIDAEXAMPLEDOUBLE",
            "Account": ACCOUNT,
            "Arn": f"arn:aws:iam::{ACCOUNT}:user/admin",
        }
    if key == "service-quotas:ListServiceQuotas":
        quota = {
            "ServiceCode": "ec2",
            "QuotaCode": "L-DB2E81BA",
            "QuotaName": "Running On-Demand G and VT instances",
            "Value": 16.0,
            "Unit": "None",
        }
        standard = {
            **quota,
            "QuotaCode": "L-1216C47A",
            "QuotaName": "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances",
        }
        return {"Quotas": [standard, quota]}
    if key == "service-quotas:GetServiceQuota":
        return {"Quota": {"ServiceCode": p["ServiceCode"], "QuotaCode": p["QuotaCode"], "Value": 16.0}}
    if key == "eks:DescribeCluster":
        return {"cluster": {k: v for k, v in _cluster(state, p["name"]).items() if not k.startswith("_")}}
    if key == "eks:CreateAccessEntry":
        cluster = _cluster(state, p["clusterName"])
        if "API" not in cluster["accessConfig"]["authenticationMode"]:
            raise Refused(
                "An error occurred (InvalidRequestException): the authentication mode must include API"
            )
        role = p["principalArn"].rsplit("/", 1)[-1]
        _iam_role(state, role)
        if p.get("type") not in ("EC2_LINUX", "STANDARD"):
            raise Refused(f"access entry type {p.get('type')!r} is not what this guide creates")
        cluster.setdefault("accessEntries", []).append({"principalArn": p["principalArn"], "type": p["type"]})
        return {
            "accessEntry": {
                "clusterName": p["clusterName"],
                "principalArn": p["principalArn"],
                "type": p["type"],
            }
        }
    if key == "iam:CreateRole":
        json.loads(p["AssumeRolePolicyDocument"])  # the real call refuses a document that is not JSON
        roles = state.setdefault("iam_roles", {})
        if p["RoleName"] in roles:
            raise Refused(
                f"An error occurred (EntityAlreadyExists): Role with name {p['RoleName']} already exists."
            )
        arn = f"arn:aws:iam::{ACCOUNT}:role/{p['RoleName']}"
        roles[p["RoleName"]] = {
            "Arn": arn,
            "Policies": [],
            "Trust": json.loads(p["AssumeRolePolicyDocument"]),
        }
        return {"Role": {"Path": "/", "RoleName": p["RoleName"], "RoleId": "AROADOUBLE", "Arn": arn}}
    if key == "iam:AttachRolePolicy":
        role = _iam_role(state, p["RoleName"])
        found = re.fullmatch(r"arn:aws:iam::aws:policy/(.+)", p["PolicyArn"])
        if not found or found.group(1) not in MANAGED_POLICIES:
            raise Refused(f"An error occurred (NoSuchEntity): Policy {p['PolicyArn']} does not exist")
        role["Policies"].append(p["PolicyArn"])
        return None
    if key == "iam:DetachRolePolicy":
        role = _iam_role(state, p["RoleName"])
        if p["PolicyArn"] not in role["Policies"]:
            raise Refused(f"An error occurred (NoSuchEntity): Policy {p['PolicyArn']} was not found.")
        role["Policies"].remove(p["PolicyArn"])
        return None
    if key == "iam:CreateInstanceProfile":
        state.setdefault("instance_profiles", {})[p["InstanceProfileName"]] = []
        return {"InstanceProfile": {"InstanceProfileName": p["InstanceProfileName"], "Roles": []}}
    if key in ("iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile"):
        roles = state.get("instance_profiles", {}).get(p["InstanceProfileName"])
        if roles is None:
            raise Refused(
                f"An error occurred (NoSuchEntity): Instance Profile {p['InstanceProfileName']} not found"
            )
        _iam_role(state, p["RoleName"])
        (roles.append if name.startswith("Add") else roles.remove)(p["RoleName"])
        return None
    if key == "iam:DeleteInstanceProfile":
        if state.get("instance_profiles", {}).get(p["InstanceProfileName"]):
            raise Refused(
                "An error occurred (DeleteConflict): Cannot delete entity, must remove roles from it first."
            )
        state["instance_profiles"].pop(p["InstanceProfileName"])
        return None
    if key == "iam:DeleteRole":
        role = _iam_role(state, p["RoleName"])
        in_profiles = [n for n, roles in state.get("instance_profiles", {}).items() if p["RoleName"] in roles]
        if role["Policies"] or in_profiles:
            raise Refused(
                "An error occurred (DeleteConflict): Cannot delete entity, must detach all policies first."
            )
        state["iam_roles"].pop(p["RoleName"])
        return None
    if key == "ec2:DescribeSubnets":
        if not state.get("eks"):  # a cluster eksctl did not make: its VPC is moto's
            return _moto(service, name, p, region)
        subnets = [s for c in state.get("eks", {}).values() for s in c["_subnets"]]
        for item in p.get("Filters", []):
            field = {"vpc-id": "VpcId", "map-public-ip-on-launch": "MapPublicIpOnLaunch"}.get(item["Name"])
            if field is None:
                raise Refused(f"the double knows no subnet filter {item['Name']}")
            subnets = [s for s in subnets if str(s[field]).lower() in [v.lower() for v in item["Values"]]]
        return {"Subnets": subnets}
    if key == "ec2:CreateTags":
        known = {s["SubnetId"] for c in state.get("eks", {}).values() for s in c["_subnets"]}
        known |= {c["resourcesVpcConfig"]["clusterSecurityGroupId"] for c in state.get("eks", {}).values()}
        unknown = [r for r in p["Resources"] if r not in known]
        if unknown:
            raise Refused(f"An error occurred (InvalidID): The ID '{unknown[0]}' is not valid")
        state.setdefault("tags", []).append({"resources": p["Resources"], "tags": p["Tags"]})
        return None
    if key == "ecr:CreateRepository":
        uri = f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/{p['repositoryName']}"
        state.setdefault("ecr", {})[uri] = True
        arn = f"arn:aws:ecr:{region}:{ACCOUNT}:repository/{p['repositoryName']}"
        return {
            "repository": {
                "repositoryName": p["repositoryName"],
                "repositoryUri": uri,
                "registryId": ACCOUNT,
                "repositoryArn": arn,
            }
        }
    if key == "ecr:DeleteRepository":
        uri = f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/{p['repositoryName']}"
        if state.get("ecr", {}).pop(uri, None) is None:
            raise Refused(
                f"An error occurred (RepositoryNotFoundException): repository {p['repositoryName']} not found"
            )
        return {"repository": {"repositoryName": p["repositoryName"]}}
    if key == "ssm:GetParameter":
        if not any(re.fullmatch(pattern, p["Name"]) for pattern in AMI_PARAMETERS):
            raise Refused(
                f"An error occurred (ParameterNotFound) when calling the GetParameter operation: {p['Name']}"
            )
        return {
            "Parameter": {"Name": p["Name"], "Type": "String", "Value": "ami-0abcdef1234567890", "Version": 1}
        }
    if service in MOTO_SERVICES:
        return _moto(service, name, p, region)
    raise Refused(
        f"the aws double has no answer for `aws {service} {name}`: add it to tests/e2e/install_doubles.py"
    )


# Services whose calls the double has no rule of its own for are moto's ($AWS_ENDPOINT_URL): the
# self-managed guide's VPC, security groups, S3 bucket, IAM OIDC provider and Secrets Manager secret.
MOTO_SERVICES = {"ec2", "s3api", "iam", "secretsmanager"}


def _moto(service: str, name: str, p: dict[str, Any], region: str) -> Any:
    """The call made to moto with the parameters as the CLI parsed them; a file path given for a
    blob (`--body FILE`) is read, as the CLI reads it. An error is the CLI's one line."""
    import boto3
    from botocore import xform_name
    from botocore.exceptions import ClientError

    boto_name = AWS_SERVICE_NAMES.get(service, service)
    op = _operation(service, xform_name(name).replace("_", "-"))
    for member, shape in (op.input_shape.members if op.input_shape else {}).items():
        if shape.type_name == "blob" and isinstance(p.get(member), str) and Path(p[member]).is_file():
            p = {**p, member: Path(p[member]).read_bytes()}
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    client = boto3.client(boto_name, region_name=region or "us-east-1", endpoint_url=endpoint)
    try:
        answer = getattr(client, xform_name(name))(**p)
    except ClientError as error:
        code, message = (
            error.response.get("Error", {}).get("Code"),
            error.response.get("Error", {}).get("Message"),
        )
        raise Refused(f"An error occurred ({code}) when calling the {name} operation: {message}") from None
    answer.pop("ResponseMetadata", None)
    return json.loads(json.dumps(answer, default=str))


def aws(argv: list[str], state: dict[str, Any]) -> str:
    options, rest = _aws_split(argv)
    if len(rest) < 2:
        raise Refused("usage: aws [options] <command> <subcommand> [parameters]")
    service, operation, words = rest[0], rest[1], rest[2:]
    region = options.get("--region") or os.environ.get("AWS_REGION") or ""
    if (service, operation) == ("ecr", "get-login-password"):
        return base64.b64encode(b"AWS:double-token").decode() + "\n"
    if (service, operation) == ("eks", "update-kubeconfig"):
        return "Updated context\n"
    op = _operation(service, operation)
    result = _answer_aws(state, service, op.name, _parameters(op, words), region)
    if "--query" in options:
        import jmespath

        result = jmespath.search(options["--query"], result)
    if result is None and "--query" not in options:
        return ""
    if options.get("--output") == "text":
        return _text(result) + "\n"
    return json.dumps(result, indent=4) + "\n"


# ---- eksctl ------------------------------------------------------------------------------------
def eksctl(argv: list[str], state: dict[str, Any]) -> str:
    flags, positional = flags_of(argv, boolean=("--wait", "--approve"))
    if positional[:2] == ["create", "cluster"]:
        config = yaml.safe_load(Path(flags["-f"]).read_text())
        if (config.get("apiVersion"), config.get("kind")) != ("eksctl.io/v1alpha5", "ClusterConfig"):
            raise Refused("Error: loading config file: not an eksctl.io/v1alpha5 ClusterConfig")
        meta = config["metadata"]
        version = str(meta["version"])
        if not re.fullmatch(r"1\.(29|3[0-7])", version):
            raise Refused(f"Error: invalid version {version}: this double's EKS offers 1.29 to 1.37")
        mode = (config.get("accessConfig") or {}).get("authenticationMode", "API_AND_CONFIG_MAP")
        addons = [a["name"] for a in config.get("addons") or []]
        groups = config.get("managedNodeGroups") or []
        if not groups:
            raise Refused("the guide's cluster needs a node group for the scheduler pod")
        name, region = meta["name"], meta["region"]
        vpc = "vpc-0double0000000001"
        subnets = [
            {
                "SubnetId": f"subnet-0{kind}{zone}double",
                "VpcId": vpc,
                "AvailabilityZone": f"{region}{zone}",
                "MapPublicIpOnLaunch": kind == "p",
            }
            for kind in ("p", "q")
            for zone in "abc"
        ]
        state.setdefault("eks", {})[name] = {
            "name": name,
            "arn": f"arn:aws:eks:{region}:{ACCOUNT}:cluster/{name}",
            "version": version,
            "status": "ACTIVE",
            "endpoint": f"https://0123456789ABCDEF0123456789ABCDEF.gr7.{region}.eks.amazonaws.com",
            "certificateAuthority": {"data": base64.b64encode(CA_PEM).decode()},
            "kubernetesNetworkConfig": {"serviceIpv4Cidr": "10.100.0.0/16", "ipFamily": "ipv4"},
            "identity": {"oidc": {"issuer": f"https://oidc.eks.{region}.amazonaws.com/id/0123456789ABCDEF"}},
            "resourcesVpcConfig": {
                "vpcId": vpc,
                "subnetIds": [s["SubnetId"] for s in subnets],
                "clusterSecurityGroupId": "sg-0double0cluster01",
            },
            "accessConfig": {"authenticationMode": mode},
            "_addons": addons,
            "_subnets": subnets,
            "_withOIDC": bool((config.get("iam") or {}).get("withOIDC")),
        }
        state["kube_version"] = f"{version}.0"
        return f"EKS cluster {name!r} in {region!r} region is ready\n"
    if positional[:2] == ["delete", "cluster"]:
        name = yaml.safe_load(Path(flags["-f"]).read_text())["metadata"]["name"]
        if state.get("eks", {}).pop(name, None) is None:
            raise Refused(f"Error: cluster {name} not found")
        return "all cluster resources were deleted\n"
    raise Refused(f"the eksctl double knows no `eksctl {' '.join(positional[:2])}`")


# ---- sam ---------------------------------------------------------------------------------------
def _template() -> dict[str, Any]:
    from cfnlint.decode import decode

    template, _ = decode(str(ROOT / "template.yaml"))
    return dict(template)


def _evaluate(expression: Any, parameters: dict[str, str]) -> Any:
    """CloudFormation's rule functions over literal parameter values (what template.yaml's Rules use)."""
    if isinstance(expression, dict):
        ((function, argument),) = expression.items()
        if function == "Ref":
            return parameters[argument]
        values = [_evaluate(a, parameters) for a in argument]
        return {
            "Fn::Equals": lambda: values[0] == values[1],
            "Fn::Not": lambda: not values[0],
            "Fn::And": lambda: all(values),
            "Fn::Or": lambda: any(values),
        }[function]()
    return expression


def _overrides(words: list[str]) -> dict[str, str]:
    given: dict[str, str] = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq:
            raise Refused(f"Error: Invalid value for '--parameter-overrides': {word!r} is not Key=Value")
        given[key] = value
    return given


def _deploy_parameters(state: dict[str, Any], given: dict[str, str]) -> dict[str, str]:
    template = _template()
    declared = template["Parameters"]
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise Refused(
            f"Error: Failed to create changeset: Parameters: {unknown} do not exist in the template"
        )
    values = {k: str(v.get("Default", "")) for k, v in declared.items() if "Default" in v} | given
    missing = [k for k in declared if k not in values]
    if missing:
        raise Refused(f"Error: Failed to create changeset: Parameters: {missing} must have values")
    for key, spec in declared.items():
        value = values[key]
        if "AllowedValues" in spec and value not in [str(v) for v in spec["AllowedValues"]]:
            raise Refused(f"Error: Parameter '{key}' must be one of AllowedValues")
        if (
            "AllowedPattern" in spec
            and spec["Type"] == "String"
            and not re.fullmatch(spec["AllowedPattern"], value)
        ):
            raise Refused(f"Error: Parameter '{key}' must match pattern {spec['AllowedPattern']}")
    for name, rule in template.get("Rules", {}).items():
        if "RuleCondition" in rule and not _evaluate(rule["RuleCondition"], values):
            continue
        for assertion in rule["Assertions"]:
            if not _evaluate(assertion["Assert"], values):
                raise Refused(
                    f"Error: Failed to create changeset: rule {name}: {assertion['AssertDescription']}"
                )
    return values


def _check_world(state: dict[str, Any], values: dict[str, str]) -> None:
    """What CloudFormation would fail on later: the names the parameters give must exist."""
    if values["KubeAccess"] == "eks" or values["RelayIdentity"] != "none":
        cluster = _cluster(state, values["EksClusterName"])
        if values["RelayIdentity"] == "pod-identity" and "eks-pod-identity-agent" not in cluster["_addons"]:
            raise Refused("RelayIdentity=pod-identity: the cluster runs no eks-pod-identity-agent add-on")
        if values["RelayIdentity"] == "irsa" and not cluster["_withOIDC"]:
            raise Refused("RelayIdentity=irsa: the cluster's OIDC provider is not in IAM")
        if values["FunctionsKubernetesGroup"] and "API" not in cluster["accessConfig"]["authenticationMode"]:
            raise Refused("the stack's access entries need the cluster's authentication mode to include API")
    _iam_role(state, values["InstanceRoleArn"].rsplit("/", 1)[-1])


def _stack_outputs(values: dict[str, str], region: str) -> dict[str, str]:
    fixture = json.loads((FIXTURES / "describe-stacks.json").read_text())["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in fixture["Outputs"]}
    outputs.update(
        ClusterName=values["ClusterName"],
        Region=region,
        RelayIdentity=values["RelayIdentity"],
        RelayServiceAccount=f"{values['RelayNamespace']}/{values['RelayServiceAccount']}",
        FunctionsKubernetesGroup=values["FunctionsKubernetesGroup"],
    )
    outputs = {k: v.replace("us-east-1", region) for k, v in outputs.items()}
    if values["RelayIdentity"] == "none":
        outputs.pop("RelayRoleArn")
        if values["RelayPrincipalArn"]:
            outputs["RelayRoleArn"] = values["RelayPrincipalArn"]
    declared = set(_template()["Outputs"])
    assert set(outputs) <= declared, set(outputs) - declared
    return outputs


def _cloudformation(region: str) -> Any:
    import boto3

    return boto3.client("cloudformation", region_name=region, endpoint_url=os.environ["AWS_ENDPOINT_URL"])


def sam(argv: list[str], state: dict[str, Any]) -> str:
    """The `sam` commands that need AWS (deploy, delete); `validate` and `build` run the real sam
    (install_doubles.py), and deploy reads what the real build left in .aws-sam/build."""
    command = argv[0] if argv else ""
    if command == "deploy":
        words = argv[1:]
        overrides: list[str] = []
        if "--parameter-overrides" in words:
            at = words.index("--parameter-overrides")
            tail = words[at + 1 :]
            end = next((i for i, w in enumerate(tail) if w.startswith("--")), len(tail))
            overrides, words = tail[:end], words[:at] + tail[end:]
        flags, positional = flags_of(
            words,
            repeated=("--capabilities",),
            boolean=("--resolve-s3", "--no-confirm-changeset", "--no-fail-on-empty-changeset"),
        )
        if positional:
            raise Refused(f"Error: Got unexpected extra arguments ({' '.join(positional)})")
        built = Path.cwd() / ".aws-sam" / "build"
        if not (built / "template.yaml").is_file():
            raise Refused("Error: run `sam build` first (no .aws-sam/build/template.yaml)")
        if not (built / "GpupoolLayer" / "python" / "gpupool" / "handlers" / "aws_lambda.py").is_file():
            raise Refused("Error: the layer `sam build` made has no gpupool handlers")
        if "CAPABILITY_IAM" not in flags.get("--capabilities", []):
            raise Refused("Error: Requires capabilities : [CAPABILITY_IAM]")
        if not flags.get("--resolve-s3"):
            raise Refused(
                "Error: Templates larger than 51,200 bytes must be deployed via an S3 Bucket (--resolve-s3)"
            )
        if not flags.get("--no-confirm-changeset"):
            raise Refused("the guide deploys without a prompt (--no-confirm-changeset)")
        region = flags.get("--region") or os.environ["AWS_REGION"]
        values = _deploy_parameters(state, _overrides(overrides))
        _check_world(state, values)
        outputs = _stack_outputs(values, region)
        template = {
            "Resources": {"Stand": {"Type": "AWS::SQS::Queue"}},
            "Outputs": {k: {"Value": v} for k, v in outputs.items()},
        }
        _cloudformation(region).create_stack(
            StackName=flags["--stack-name"], TemplateBody=json.dumps(template)
        )
        state.setdefault("stacks", {})[flags["--stack-name"]] = values
        return f"Successfully created/updated stack - {flags['--stack-name']} in {region}\n"
    if command == "delete":
        flags, _ = flags_of(argv[1:], boolean=("--no-prompts",))
        if not flags.get("--no-prompts"):
            raise Refused("the guide deletes without a prompt (--no-prompts)")
        name = flags["--stack-name"]
        if state.get("stacks", {}).pop(name, None) is None:
            raise Refused(f"Error: stack {name} does not exist")
        _cloudformation(flags.get("--region") or os.environ["AWS_REGION"]).delete_stack(StackName=name)
        return "Deleted successfully\n"
    raise Refused(f"the sam double knows no `sam {command}`")
