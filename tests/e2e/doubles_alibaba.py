"""Alibaba Cloud's tools' doubles for docs/install-ack.md: s (Serverless Devs) and aliyun (rules:
install_doubles.py).

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


# ---- s (Serverless Devs) ------------------------------------------------------------------------
def s(argv: list[str], state: dict[str, Any]) -> str:
    flags, positional = flags_of(argv, boolean=("-y", "-f"))
    s_yaml_text = (ROOT / "s.yaml").read_text()
    if positional[:2] == ["config", "add"]:
        keys = flags.get("-kl", "").split(",")
        values = flags.get("-il", "").split(",")
        config = dict(zip(keys, values, strict=True))
        if not all(config.get(k) for k in ("AccountID", "AccessKeyID", "AccessKeySecret")):
            raise Refused("s config add: the guide configures AccountID, AccessKeyID and AccessKeySecret")
        state.setdefault("s_access", {})[flags.get("-a", "default")] = sorted(config)
        return "Configuration successful\n"
    if positional == ["deploy"]:
        if not flags.get("-y"):
            raise Refused("the guide deploys without a prompt (-y)")
        access = yaml.safe_load(s_yaml_text)["access"]
        if access not in state.get("s_access", {}):
            raise Refused(f"Error: the access {access!r} s.yaml names is not configured (s config add)")
        missing = [
            name for name in re.findall(r"\$\{env\('([A-Z_]+)'\)\}", s_yaml_text) if not os.environ.get(name)
        ]
        if missing:
            raise Refused(f"Error: s.yaml reads ${{env('{missing[0]}')}} and it is not set")
        kubeconfig = yaml.safe_load(os.environ["GPUPOOL_KUBECONFIG"])
        if not kubeconfig["users"][0]["user"].get("token"):
            raise Refused("GPUPOOL_KUBECONFIG has no token: the functions could not reach the cluster")
        queue = yaml.safe_load(s_yaml_text)["vars"]["failureQueue"]
        if queue not in state.get("mns_queues", []):
            raise Refused(f"Error: asyncInvokeConfig destination queue {queue} does not exist")
        state["s_deployed"] = True
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
    raise Refused(f"no answer for {action}")


# (product, action) → required parameters, from each API's reference page (STS GetCallerIdentity;
# VPC CreateVpc, DescribeVpcAttribute, CreateVSwitch, DescribeVSwitchAttributes, DeleteVSwitch,
# DeleteVpc; ECS DescribeAvailableResource, DescribeImages; MNS CreateQueue, DeleteQueue).
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
