"""Alibaba Cloud's tools' doubles for docs/install-ack.md: s (Serverless Devs) and aliyun (rules:
install_doubles.py), and `resolve_s_yaml`, s.yaml with its references filled in as `s deploy` fills
them.

The KMS and RAM calls keep what they made in the state (`kms`, `ram`) for the Function Compute
double (doubles_fc.py), which serves the secrets and checks the AccessKeys and policies. Their
rules, from each API's reference: KMS — CreateKey in a KMS instance of the account
(DKMSInstanceId); CreateSecret (SecretName, VersionId, SecretData) encrypted with a key of a KMS
instance, the same instance when DKMSInstanceId is given ("the key and the secret must belong to
the same KMS instance"), a name unique in the region and not starting with `acs/`; DeleteSecret
removes at once only with ForceDeleteWithoutRecovery; ScheduleKeyDeletion waits 7 to 366 days. RAM —
unique user and policy names; a policy document in RAM's version-1 grammar (Version "1", a
Statement list of Effect / Action / Resource); AttachPolicyToUser and CreateAccessKey name a user
and policy that exist; at most two AccessKeys per user; a policy still attached cannot be deleted,
nor a user that still has AccessKeys or policies. The account has one KMS instance (bought in the
console, a step the walk does not run).

Must not: reach a network.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml
from doubles_base import FIXTURES, ROOT, Refused, flags_of

ALIBABA_ACCOUNT = "1234567890123456"
KMS_INSTANCE = "kst-hzz6double0instance"  # the account's KMS instance (the guide's prerequisite)
_S_REFERENCE = re.compile(r"\$\{(vars\.[A-Za-z0-9_.]+|config\('AccountID'\)|env\('([A-Z0-9_]+)'\))\}")


def resolve_s_yaml(account: str, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """s.yaml as `s deploy` reads it: `${vars.…}` (a whole-string reference keeps its type),
    `${config('AccountID')}` from the configured access, `${env('X')}` from the environment."""
    raw = yaml.safe_load((ROOT / "s.yaml").read_text())
    environ = dict(os.environ) if environ is None else environ

    def value(match: re.Match[str]) -> Any:
        reference = match.group(1)
        if reference.startswith("vars."):
            found: Any = raw["vars"]
            for part in reference.removeprefix("vars.").split("."):
                found = found[part]
            return resolve(found)
        if reference.startswith("config("):
            return account
        return environ.get(match.group(2), "")

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: resolve(item) for key, item in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        if isinstance(node, str):
            whole = _S_REFERENCE.fullmatch(node)
            if whole:
                return value(whole)
            return _S_REFERENCE.sub(lambda m: str(value(m)), node)
        return node

    resolved: dict[str, Any] = resolve(raw)
    return resolved


# ---- s (Serverless Devs) ------------------------------------------------------------------------
def configured_access() -> dict[str, dict[str, str]]:
    """What the real `s config add` wrote ($HOME/.s/access.yaml: alias → keys, values encrypted)."""
    path = Path(os.environ["HOME"]) / ".s" / "access.yaml"
    found: dict[str, dict[str, str]] = yaml.safe_load(path.read_text()) if path.is_file() else {}
    return found or {}


def s(argv: list[str], state: dict[str, Any]) -> str:
    """The `s` commands that need Alibaba Cloud or Serverless Devs' registry (deploy, info, remove,
    logs); the offline ones (`s config ...`) run the real `s` (install_doubles.py)."""
    flags, positional = flags_of(argv, boolean=("-y", "-f"))
    s_yaml_text = (ROOT / "s.yaml").read_text()
    if positional == ["deploy"]:
        if not flags.get("-y"):
            raise Refused("the guide deploys without a prompt (-y)")
        access = yaml.safe_load(s_yaml_text)["access"]
        configured = configured_access().get(access) or {}
        if not all(configured.get(k) for k in ("AccountID", "AccessKeyID", "AccessKeySecret")):
            raise Refused(f"Error: the access {access!r} s.yaml names is not configured (s config add)")
        missing = [
            name for name in re.findall(r"\$\{env\('([A-Z_]+)'\)\}", s_yaml_text) if not os.environ.get(name)
        ]
        if missing:
            raise Refused(f"Error: s.yaml reads ${{env('{missing[0]}')}} and it is not set")
        queue = yaml.safe_load(s_yaml_text)["vars"]["failureQueue"]
        if queue not in state.get("mns_queues", []):
            raise Refused(f"Error: asyncInvokeConfig destination queue {queue} does not exist")
        # The real `s config add` stores the values encrypted: the account is the credentials' own.
        resolved = resolve_s_yaml(ALIBABA_ACCOUNT)
        state["s_deployed"] = {  # what Function Compute and RAM now hold, for doubles_fc.py
            "region": resolved["vars"]["region"],
            "account": ALIBABA_ACCOUNT,
            "functions": {
                resource["props"]["functionName"]: resource["props"]["environmentVariables"]
                for resource in resolved["resources"].values()
                if resource["component"] == "fc3"
            },
            "role_statements": [
                statement
                for policy in resolved["resources"]["gpupool-role"]["props"]["policies"]
                for statement in policy["statement"]
            ],
            "relay_invoke_policy": resolved["vars"]["relayInvokePolicy"],
        }
        return "Deploy succeeded\n"
    if positional == ["info"]:
        if flags.get("-o") != "json" or not state.get("s_deployed"):
            raise Refused("the guide reads `s info -o json` after `s deploy`")
        return (FIXTURES / "s-info.json").read_text()
    if positional == ["remove"]:
        if not state.pop("s_deployed", False):
            raise Refused("Error: nothing deployed to remove")
        return "Remove succeeded\n"
    raise Refused(f"the s double knows no `s {' '.join(positional)}`")


# ---- aliyun --------------------------------------------------------------------------------------
def _aliyun_answer(state: dict[str, Any], product: str, words: list[str], flags: dict[str, Any]) -> Any:
    """One ACK-guide call: ROA (`aliyun cs GET /path`) or RPC (`aliyun ecs Action --Param v`)."""
    ack = state.setdefault("ack", {})
    if product == "cs":
        method, path = words[0], words[1]
        body = json.loads(flags.get("--body", "{}"))
        if (method, path) == ("POST", "/clusters"):
            required = {
                "name",
                "cluster_type",
                "region_id",
                "vpcid",
                "vswitch_ids",
                "service_cidr",
                "nodepools",
            }
            if not required <= set(body) or body["cluster_type"] != "ManagedKubernetes":
                raise Refused(
                    f"ErrorCode: InvalidParameter: CreateCluster needs {sorted(required - set(body))}"
                )
            ack.update(cluster_id="c0123456789abcdef0123456789abcdef", body=body, version="1.35.3-aliyun.1")
            state["kube_version"] = "1.35.3"
            return {"cluster_id": ack["cluster_id"], "request_id": "DOUBLE", "task_id": "T-double"}
        cluster = f"/clusters/{ack.get('cluster_id')}"
        if (method, path) == ("GET", cluster):
            return {
                "cluster_id": ack["cluster_id"],
                "name": ack["body"]["name"],
                "state": "running",
                "current_version": ack["version"],
                "vpc_id": ack["body"]["vpcid"],
                "vswitch_id": ",".join(ack["body"]["vswitch_ids"]),
                "security_group_id": "sg-bp1double0node",
                "region_id": ack["body"]["region_id"],
            }
        if (method, path) == ("GET", f"/k8s/{ack.get('cluster_id')}/user_config"):
            return {"config": Path(os.environ["KUBECONFIG"]).read_text()}
        if (method, path) == ("POST", f"{cluster}/attachscript"):
            region = ack["body"]["region_id"]
            script = f"public/pkg/run/attach/{ack['version']}/attach_node.sh"
            host = f"aliacs-k8s-{region}.oss-{region}-internal.aliyuncs.com"
            return f"curl http://{host}/{script} | bash -s -- --openapi-token 0123abcd --ess true"
        if (method, path) == ("DELETE", cluster):
            ack.clear()
            return {"cluster_id": "deleted", "task_id": "T-delete"}
        raise Refused(f"the aliyun double has no answer for `aliyun cs {method} {path}`")
    action = words[0]
    params = {k.removeprefix("--"): v for k, v in flags.items()}
    required = ALIYUN_CALLS.get((product, action))
    if required is None:
        raise Refused(
            f"the aliyun double has no answer for `aliyun {product} {action}`: add it to ALIYUN_CALLS"
        )
    missing = [p for p in required if p not in params]
    if missing:
        raise Refused(f"ErrorCode: MissingParameter: {action} needs {', '.join(missing)}")
    vpc = state.setdefault("vpc", {})
    if action == "GetCallerIdentity":
        return {"AccountId": ALIBABA_ACCOUNT, "IdentityType": "RAMUser", "UserId": "20000000000000000"}
    if action == "CreateVpc":
        vpc["vpc"] = "vpc-bp1double0vpc"
        return {"VpcId": vpc["vpc"], "RequestId": "DOUBLE"}
    if action == "DescribeVSwitchAttributes":
        if params["VSwitchId"] != vpc.get("vswitch"):
            raise Refused(f"ErrorCode: InvalidVSwitchId.NotFound: {params['VSwitchId']}")
        return {"VSwitchId": params["VSwitchId"], "Status": "Available", "ZoneId": vpc["zone"]}
    if action == "DescribeVpcAttribute":
        return {"VpcId": params["VpcId"], "Status": "Available"}
    if action == "DescribeAvailableResource":
        zones = [
            {"ZoneId": f"{params['RegionId']}-{z}", "Status": "Available", "StatusCategory": "WithStock"}
            for z in "hik"
        ]
        return {"AvailableZones": {"AvailableZone": zones}}
    if action == "CreateVSwitch":
        if params["VpcId"] != vpc.get("vpc"):
            raise Refused(f"ErrorCode: InvalidVpcId.NotFound: {params['VpcId']}")
        vpc.update(vswitch="vsw-bp1double0vswitch", zone=params["ZoneId"])
        return {"VSwitchId": vpc["vswitch"], "RequestId": "DOUBLE"}
    if action == "DescribeImages":
        newest_first = ("aliyun_3_x64_20G_alibase_20261015.vhd", "aliyun_3_x64_20G_alibase_20260901.vhd")
        return {"Images": {"Image": [{"ImageId": image} for image in newest_first]}}
    if action == "CreateQueue":
        state.setdefault("mns_queues", []).append(params["QueueName"])
        return {
            "Code": 200,
            "Success": True,
            "Data": f"https://{ALIBABA_ACCOUNT}.mns.cn-hangzhou.aliyuncs.com/queues/{params['QueueName']}",
        }
    if action == "DeleteQueue":
        state.get("mns_queues", []).remove(params["QueueName"])
        return {"Code": 200, "Success": True}
    if action in ("DeleteVSwitch", "DeleteVpc"):
        return {"RequestId": "DOUBLE"}
    if product == "kms":
        return _kms(action, params, state)
    if product == "ram":
        return _ram(action, params, state)
    raise Refused(f"no answer for {action}")


def _kms(action: str, params: dict[str, Any], state: dict[str, Any]) -> Any:
    """KMS 2016-01-20 (rules: the module docstring)."""
    kms = state.setdefault("kms", {"keys": {}, "secrets": {}})
    region = "cn-hangzhou"
    if action == "ListKmsInstances":
        arn = f"acs:kms:{region}:{ALIBABA_ACCOUNT}:keystore/{KMS_INSTANCE}"
        instances = [{"KmsInstanceId": KMS_INSTANCE, "KmsInstanceArn": arn}]
        return {"KmsInstances": {"KmsInstance": instances}, "TotalCount": 1, "PageNumber": 1, "PageSize": 20}
    if action == "CreateKey":
        instance = params.get("DKMSInstanceId")
        if instance is not None and instance != KMS_INSTANCE:
            raise Refused(f"ErrorCode: Forbidden.ResourceNotFound: KMS instance {instance} does not exist")
        key_id = f"key-hzz6double{len(kms['keys']):04d}"
        kms["keys"][key_id] = {"instance": instance, "state": "Enabled"}
        arn = f"acs:kms:{region}:{ALIBABA_ACCOUNT}:key/{key_id}"
        return {
            "KeyMetadata": {"KeyId": key_id, "Arn": arn, "KeyState": "Enabled", "DKMSInstanceId": instance}
        }
    if action == "CreateSecret":
        name, key_id = params["SecretName"], params.get("EncryptionKeyId")
        key = kms["keys"].get(key_id or "")
        if key is None or key["instance"] is None or key["state"] != "Enabled":
            raise Refused(
                f"ErrorCode: InvalidParameter: EncryptionKeyId {key_id}: a secret is encrypted with an "
                "enabled key of a KMS instance"
            )
        if params.get("DKMSInstanceId", key["instance"]) != key["instance"]:
            raise Refused(
                "ErrorCode: InvalidParameter: the key and the secret must belong to the same KMS instance"
            )
        if name in kms["secrets"] or name.startswith("acs/"):
            raise Refused(f"ErrorCode: Rejected.ResourceExist: the secret {name} exists (or is reserved)")
        kms["secrets"][name] = {"data": params["SecretData"], "key": key_id, "version": params["VersionId"]}
        arn = f"acs:kms:{region}:{ALIBABA_ACCOUNT}:secret/{name}"
        return {"Arn": arn, "SecretName": name, "VersionId": params["VersionId"]}
    if action == "DeleteSecret":
        if params["SecretName"] not in kms["secrets"]:
            raise Refused(f"ErrorCode: Forbidden.ResourceNotFound: secret {params['SecretName']}")
        if str(params.get("ForceDeleteWithoutRecovery", "false")).lower() == "true":
            del kms["secrets"][params["SecretName"]]
        else:
            kms["secrets"][params["SecretName"]]["pending_deletion"] = True
        return {"SecretName": params["SecretName"]}
    if action == "ScheduleKeyDeletion":
        key = kms["keys"].get(params["KeyId"])
        if key is None:
            raise Refused(f"ErrorCode: Forbidden.KeyNotFound: {params['KeyId']}")
        if not 7 <= int(params["PendingWindowInDays"]) <= 366:
            raise Refused("ErrorCode: InvalidParameter: PendingWindowInDays is 7 to 366")
        key["state"] = "PendingDeletion"
        return {}
    raise Refused(f"no answer for kms {action}")


def _policy_document_problem(text: str) -> str | None:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        return f"not JSON ({error.msg})"
    statements = document.get("Statement") if isinstance(document, dict) else None
    if document.get("Version") != "1" or not isinstance(statements, list) or not statements:
        return 'a policy document has Version "1" and a list of statements'
    for statement in statements:
        if not isinstance(statement, dict) or statement.get("Effect") not in ("Allow", "Deny"):
            return "each statement has Effect Allow or Deny"
        if not statement.get("Action") or not statement.get("Resource"):
            return "each statement names its Action and Resource"
    return None


def _ram(action: str, params: dict[str, Any], state: dict[str, Any]) -> Any:
    """RAM (rules: the module docstring)."""
    ram = state.setdefault("ram", {"users": {}, "policies": {}})
    users, policies = ram["users"], ram["policies"]

    def user(name: str) -> dict[str, Any]:
        if name not in users:
            raise Refused(f"ErrorCode: EntityNotExist.User: the user {name} does not exist")
        found: dict[str, Any] = users[name]
        return found

    if action == "CreateUser":
        if params["UserName"] in users:
            raise Refused(f"ErrorCode: EntityAlreadyExists.User: {params['UserName']}")
        users[params["UserName"]] = {"policies": [], "keys": {}}
        return {"User": {"UserName": params["UserName"], "UserId": "20000000000000001"}}
    if action == "CreatePolicy":
        if params["PolicyName"] in policies:
            raise Refused(f"ErrorCode: EntityAlreadyExists.Policy: {params['PolicyName']}")
        problem = _policy_document_problem(params["PolicyDocument"])
        if problem:
            raise Refused(f"ErrorCode: MalformedPolicyDocument: {problem}")
        policies[params["PolicyName"]] = json.loads(params["PolicyDocument"])
        return {
            "Policy": {"PolicyName": params["PolicyName"], "PolicyType": "Custom", "DefaultVersion": "v1"}
        }
    if action in ("AttachPolicyToUser", "DetachPolicyFromUser"):
        found = user(params["UserName"])
        if params["PolicyType"] != "Custom" or params["PolicyName"] not in policies:
            raise Refused(f"ErrorCode: EntityNotExist.Policy: {params['PolicyType']} {params['PolicyName']}")
        attached = params["PolicyName"] in found["policies"]
        if action == "AttachPolicyToUser" and not attached:
            found["policies"].append(params["PolicyName"])
        elif action == "DetachPolicyFromUser":
            if not attached:
                raise Refused(f"ErrorCode: EntityNotExist.User.Policy: {params['PolicyName']}")
            found["policies"].remove(params["PolicyName"])
        return {}
    if action == "CreateAccessKey":
        found = user(params["UserName"])
        if len(found["keys"]) >= 2:
            raise Refused("ErrorCode: LimitExceeded.User.AccessKey: a RAM user has at most 2 AccessKeys")
        key_id = f"LTAI5tDouble{params['UserName'].replace('-', '')[:8]}{len(found['keys'])}"
        secret = f"double-secret-of-{key_id}"
        found["keys"][key_id] = secret
        return {
            "AccessKey": {
                "AccessKeyId": key_id,
                "AccessKeySecret": secret,
                "Status": "Active",
                "CreateDate": "2026-12-01T10:00:00Z",
            }
        }
    if action == "DeleteAccessKey":
        found = user(params["UserName"])
        if found["keys"].pop(params["UserAccessKeyId"], None) is None:
            raise Refused(f"ErrorCode: EntityNotExist.User.AccessKey: {params['UserAccessKeyId']}")
        return {}
    if action == "DeletePolicy":
        if params["PolicyName"] not in policies:
            raise Refused(f"ErrorCode: EntityNotExist.Policy: {params['PolicyName']}")
        if any(params["PolicyName"] in u["policies"] for u in users.values()):
            raise Refused(f"ErrorCode: DeleteConflict.Policy.User: {params['PolicyName']} is still attached")
        del policies[params["PolicyName"]]
        return {}
    if action == "DeleteUser":
        found = user(params["UserName"])
        if found["keys"] or found["policies"]:
            raise Refused(
                f"ErrorCode: DeleteConflict.User: {params['UserName']} still has AccessKeys or policies"
            )
        del users[params["UserName"]]
        return {}
    raise Refused(f"no answer for ram {action}")


# (product, action) → required parameters, from each API's reference page (STS GetCallerIdentity;
# VPC CreateVpc, DescribeVpcAttribute, CreateVSwitch, DescribeVSwitchAttributes, DeleteVSwitch,
# DeleteVpc; ECS DescribeAvailableResource, DescribeImages; MNS CreateQueue, DeleteQueue; KMS
# ListKmsInstances, CreateKey, CreateSecret, DeleteSecret, ScheduleKeyDeletion; RAM CreateUser,
# CreatePolicy, AttachPolicyToUser, DetachPolicyFromUser, CreateAccessKey, DeleteAccessKey,
# DeletePolicy, DeleteUser — CreateAccessKey and DeleteAccessKey default UserName to the caller, a
# default the guide never relies on, so the double requires it).
ALIYUN_CALLS: dict[tuple[str, str], tuple[str, ...]] = {
    ("sts", "GetCallerIdentity"): (),
    ("vpc", "CreateVpc"): ("RegionId",),
    ("vpc", "DescribeVSwitchAttributes"): ("RegionId", "VSwitchId"),
    ("vpc", "DescribeVpcAttribute"): ("RegionId", "VpcId"),
    ("vpc", "CreateVSwitch"): ("RegionId", "VpcId", "ZoneId", "CidrBlock"),
    ("vpc", "DeleteVSwitch"): ("RegionId", "VSwitchId"),
    ("vpc", "DeleteVpc"): ("RegionId", "VpcId"),
    ("ecs", "DescribeAvailableResource"): ("RegionId", "DestinationResource"),
    ("ecs", "DescribeImages"): ("RegionId",),
    ("mns-open", "CreateQueue"): ("QueueName",),
    ("mns-open", "DeleteQueue"): ("QueueName",),
    ("kms", "ListKmsInstances"): (),
    ("kms", "CreateKey"): (),
    ("kms", "CreateSecret"): ("SecretName", "VersionId", "SecretData"),
    ("kms", "DeleteSecret"): ("SecretName",),
    ("kms", "ScheduleKeyDeletion"): ("KeyId", "PendingWindowInDays"),
    ("ram", "CreateUser"): ("UserName",),
    ("ram", "CreatePolicy"): ("PolicyName", "PolicyDocument"),
    ("ram", "AttachPolicyToUser"): ("PolicyType", "PolicyName", "UserName"),
    ("ram", "DetachPolicyFromUser"): ("PolicyType", "PolicyName", "UserName"),
    ("ram", "CreateAccessKey"): ("UserName",),
    ("ram", "DeleteAccessKey"): ("UserName", "UserAccessKeyId"),
    ("ram", "DeletePolicy"): ("PolicyName",),
    ("ram", "DeleteUser"): ("UserName",),
}


def aliyun(argv: list[str], state: dict[str, Any]) -> str:
    if argv[:1] == ["configure"]:
        return "Configure Done!!!\n"
    product, *rest = argv
    waiter: list[str] = []
    if (
        "--waiter" in rest
    ):  # --waiter expr=<JMESPath> to=<value>: poll until it holds (the answers hold at once)
        at = rest.index("--waiter")
        end = at + 1
        while end < len(rest) and re.match(r"(expr|to|timeout|interval)=", rest[end]):
            end += 1
        waiter, rest = rest[at + 1 : end], rest[:at] + rest[end:]
        if not (len(waiter) >= 2 and waiter[0].startswith("expr=") and waiter[1].startswith("to=")):
            raise Refused("--waiter takes expr=<expression> to=<value> [timeout=<s>] [interval=<s>]")
    flags, positional = flags_of(rest)
    flags.pop("--region", None)
    if product == "cs" and "--body" in flags and flags.get("--header") != "Content-Type=application/json":
        raise Refused(
            "ErrorCode: UnsupportedMediaType: a --body needs --header Content-Type=application/json"
        )
    flags.pop("--header", None)
    answer = _aliyun_answer(state, product, positional, flags)
    if waiter:
        import jmespath

        expected, found = (
            waiter[1].removeprefix("to="),
            jmespath.search(waiter[0].removeprefix("expr="), answer),
        )
        if str(found) != expected:
            raise Refused(f"the double's answer has {found!r} where the waiter waits for {expected!r}")
    return json.dumps(answer, indent=4) + "\n"
