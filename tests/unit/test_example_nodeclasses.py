"""The node class examples for today's images, and the examples the install guides apply: each is valid
under `gpupool validate` as shipped (placeholders and all), and once its @NAME@ placeholders are filled
(as the guides fill them) the userData that reaches RunInstances joins the node as its OS expects it,
with the label gpupool binds by set to the claim's name:

- AL2023: a MIME multi-part document whose `application/node.eks.aws` part is a nodeadm NodeConfig
  (node.eks.aws/v1alpha1) with the four cluster fields nodeadm requires and the labels in kubelet's
  `--node-labels` (none in the kubernetes.io / k8s.io namespaces, which kubelet refuses to set itself);
- Bottlerocket: TOML with settings.kubernetes' cluster-name, api-server and cluster-certificate
  (required by Bottlerocket on EKS) and the labels in settings.kubernetes.node-labels;
- Alibaba Cloud: a bash script running ACK's attach command with `--labels`.

The multi-document state file validates too, and `gpupool plan` still reads it.
"""

from __future__ import annotations

import base64
import email
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupool.adapters.alibaba.request import ResolvedEcsNetwork, run_instances_params
from gpupool.adapters.aws.request import ResolvedNetwork, run_instances_request
from gpupool.cli.main import main
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.planning.plan import OfferingRef

EXAMPLES = Path(str(resources.files("gpupool").joinpath("examples")))
GUIDE_EXAMPLES = (
    "aws-al2023-nodeclass.yaml",
    "aws-bottlerocket-nodeclass.yaml",
    "alibaba-nodeclass.yaml",
    "aws-install-cluster.yaml",
    "alibaba-install-cluster.yaml",
    "aws-provisioned-state.yaml",
)
CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIC...\n-----END CERTIFICATE-----\n").decode()
FILLED = {
    "AMI_ID": "ami-0abcdef1234567890",
    "CLUSTER_NAME": "gpupool-demo",
    "API_SERVER_ENDPOINT": "https://0123456789ABCDEF0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    "CERTIFICATE_AUTHORITY": CA,
    "SERVICE_CIDR": "10.100.0.0/16",
    "CLUSTER_DNS_IP": "10.100.0.10",
    "IMAGE_ID": "aliyun_3_x64_20G_alibase_20261015.vhd",
    "VSWITCH_ID": "vsw-bp1example0vswitch",
    "SECURITY_GROUP_ID": "sg-bp1example0group",
    "CLUSTER_ID": "c0123456789abcdef0123456789abcdef",
    "ZONE_ID": "cn-hangzhou-h",
    "AWS_REGION": "us-east-1",
    "REGION": "cn-hangzhou",
    "ATTACH_COMMAND": (
        "curl http://aliacs-k8s-cn-hangzhou.oss-cn-hangzhou-internal.aliyuncs.com/public/pkg/run/attach/"
        "1.33.3-aliyun.1/attach_node.sh | bash -s -- --openapi-token 0123abcd --ess true"
    ),
}
CLAIM = "tensor-fusion-first-7kx2p"
PROVISIONER = "tensor-fusion.ai/node-provisioner"


def fill(text: str) -> str:
    """The example with each @NAME@ replaced, as the guides' one-liner does (KeyError when one is unknown)."""
    return re.sub(r"@([A-Z_]+)@", lambda found: FILLED[found.group(1)], text)


def _node_class(name: str) -> GPUNodeClass:
    return GPUNodeClass.model_validate(yaml.safe_load(fill((EXAMPLES / name).read_text())))


def _claim(instance_type: str, zone: str) -> GPUNodeClaim:
    spec = {
        "tflopsOffered": "65",
        "vramOffered": "16Gi",
        "gpuDeviceOffered": 1,
        "instanceType": instance_type,
    }
    return GPUNodeClaim.model_validate({"metadata": {"name": CLAIM}, "spec": {**spec, "zone": zone}})


def _offering(instance_type: str, zone: str) -> OfferingRef:
    return OfferingRef.model_validate(
        {"instance_type": instance_type, "zone": zone, "tflops": "65", "vram": "16Gi", "gpu_count": 1,
         "hourly_price": "0.526"}
    )  # fmt: skip


def _ec2_user_data(name: str) -> str:
    request = run_instances_request(
        _claim("g4dn.xlarge", "us-east-1a"),
        _node_class(name),
        _offering("g4dn.xlarge", "us-east-1a"),
        network=ResolvedNetwork(
            image_id=FILLED["AMI_ID"], subnet_id="subnet-1", security_group_ids=("sg-1",)
        ),
        cluster="tensor-fusion",
        client_token="uid-1",
    )
    user_data: str = request["UserData"]
    return user_data


def _labels(flag: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in flag.split(",") if pair)


@pytest.mark.parametrize("name", GUIDE_EXAMPLES)
def test_the_example_is_valid_as_shipped(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(EXAMPLES / name)]) == 0, capsys.readouterr().out


def test_al2023_joins_with_a_nodeadm_node_config_labelled_for_the_claim() -> None:
    message = email.message_from_string(_ec2_user_data("aws-al2023-nodeclass.yaml"))
    assert message.is_multipart() and message.get_content_type() == "multipart/mixed"
    (part,) = [p for p in message.get_payload() if p.get_content_type() == "application/node.eks.aws"]
    config = yaml.safe_load(part.get_payload())
    assert (config["apiVersion"], config["kind"]) == ("node.eks.aws/v1alpha1", "NodeConfig")
    assert config["spec"]["cluster"] == {
        "name": FILLED["CLUSTER_NAME"],
        "apiServerEndpoint": FILLED["API_SERVER_ENDPOINT"],
        "certificateAuthority": CA,
        "cidr": FILLED["SERVICE_CIDR"],
    }
    (flag,) = [f for f in config["spec"]["kubelet"]["flags"] if f.startswith("--node-labels=")]
    labels = _labels(flag.removeprefix("--node-labels="))
    assert labels == {PROVISIONER: CLAIM, "nvidia.com/gpu.present": "true"}
    assert not [k for k in labels if re.search(r"(^|\.)(kubernetes\.io|k8s\.io)/", k)]


def test_bottlerocket_joins_with_toml_settings_labelled_for_the_claim() -> None:
    settings = tomllib.loads(_ec2_user_data("aws-bottlerocket-nodeclass.yaml"))["settings"]["kubernetes"]
    assert {
        k: settings[k] for k in ("cluster-name", "api-server", "cluster-certificate", "cluster-dns-ip")
    } == {
        "cluster-name": FILLED["CLUSTER_NAME"],
        "api-server": FILLED["API_SERVER_ENDPOINT"],
        "cluster-certificate": CA,
        "cluster-dns-ip": FILLED["CLUSTER_DNS_IP"],
    }
    assert settings["node-labels"] == {PROVISIONER: CLAIM, "nvidia.com/gpu.present": "true"}
    devices = [
        m.device_name for m in _node_class("aws-bottlerocket-nodeclass.yaml").spec.block_device_mappings
    ]
    assert devices == ["/dev/xvda", "/dev/xvdb"]  # Bottlerocket: OS volume, then the data volume


def test_the_alibaba_class_runs_acks_attach_command_with_the_claims_labels() -> None:
    params = run_instances_params(
        _claim("ecs.gn6i-c4g1.xlarge", "cn-hangzhou-h"),
        _node_class("alibaba-nodeclass.yaml"),
        _offering("ecs.gn6i-c4g1.xlarge", "cn-hangzhou-h"),
        network=ResolvedEcsNetwork(
            image_id=FILLED["IMAGE_ID"], vswitch_id=FILLED["VSWITCH_ID"], security_group_ids=("sg-1",)
        ),
        cluster="tensor-fusion",
        region="cn-hangzhou",
        client_token="uid-1",
    )
    script = base64.b64decode(params["UserData"]).decode()
    assert script.startswith("#!/bin/bash\n")
    (line,) = [line for line in script.splitlines() if "attach_node.sh" in line]
    assert line == f"{FILLED['ATTACH_COMMAND']} --labels {PROVISIONER}={CLAIM},nvidia.com/gpu.present=true"
    assert params["SystemDisk"] == {"Category": "cloud_essd", "Size": "120"}


EKS_CLUSTER = {"CLUSTER_NAME", "API_SERVER_ENDPOINT", "CERTIFICATE_AUTHORITY"}


@pytest.mark.parametrize(
    ("name", "placeholders"),
    [
        ("aws-al2023-nodeclass.yaml", {"AMI_ID", "SERVICE_CIDR", *EKS_CLUSTER}),
        ("aws-bottlerocket-nodeclass.yaml", {"AMI_ID", "CLUSTER_DNS_IP", *EKS_CLUSTER}),
        (
            "alibaba-nodeclass.yaml",
            {"IMAGE_ID", "VSWITCH_ID", "SECURITY_GROUP_ID", "CLUSTER_ID", "ATTACH_COMMAND"},
        ),
        ("alibaba-install-cluster.yaml", {"ZONE_ID", "REGION"}),
        ("aws-install-cluster.yaml", {"AWS_REGION"}),
    ],
)
def test_each_example_has_exactly_the_placeholders_its_guide_fills(name: str, placeholders: set[str]) -> None:
    text = (EXAMPLES / name).read_text()
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert set(re.findall(r"@([A-Z_]+)@", body)) == placeholders
    assert "@" not in fill(body).replace("__GPU_NODE_RESOURCE_NAME__", "")


@pytest.mark.parametrize(
    ("name", "instance_type"),
    [("aws-install-cluster.yaml", "g4dn.xlarge"), ("alibaba-install-cluster.yaml", "ecs.gn6i-c4g1.xlarge")],
)
def test_the_install_pools_plan_one_t4_node_once_filled(
    name: str, instance_type: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = tmp_path / name
    pool.write_text(fill((EXAMPLES / name).read_text()))
    assert main(["plan", "--pool", str(pool), "--json"]) == 0
    plan: dict[str, Any] = yaml.safe_load(capsys.readouterr().out)
    assert [(n["instanceType"], n["count"], n["capacityType"]) for n in plan["nodes"]] == [
        (instance_type, 1, "OnDemand")
    ]


def test_the_state_example_is_multi_document_and_still_plans(capsys: pytest.CaptureFixture[str]) -> None:
    documents = list(yaml.safe_load_all((EXAMPLES / "aws-provisioned-state.yaml").read_text()))
    assert [d["kind"] for d in documents] == ["GPUNode", "GPUNodeClaim"]
    pool, state = EXAMPLES / "aws-provisioned-pool.yaml", EXAMPLES / "aws-provisioned-state.yaml"
    assert main(["plan", "--pool", str(pool), "--state", str(state)]) == 0
    assert "inference-7kx2p" not in capsys.readouterr().err
