"""build_aws_deps: environment variables → working ports, against a moto server and the embedded API server.

Covers: AWS_ENDPOINT_URL and KUBECONFIG are honoured from the mapping passed in (not
os.environ); a kubeconfig held in Secrets Manager; settings durations and limits with their
defaults; every bad or missing variable is a ConfigError naming it; the access mode default;
boto3 and kubernetes are not imported until a port is used, and the adapters never import the
client's generated API classes; the region's offerings are loaded, when first used.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest

from gpupool.adapters.aws.wiring import build_aws_deps, read_aws_environment
from gpupool.adapters.environment import ConfigError, parse_duration
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import OfferingRef
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.moto_ec2 import MotoEC2
from tests.service.fakes import FakeClock

from .conftest import POOL_COMPACTION, make_pool

BASE = {"GPUPOOL_CLUSTER_NAME": "demo", "AWS_REGION": "us-east-1"}


@pytest.fixture
def moto_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # The mapping passed to build_aws_deps is the only source: make os.environ useless on purpose.
    for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "KUBECONFIG"):
        monkeypatch.delenv(key, raising=False)
    with MotoEC2() as moto:
        yield moto.reset().url  # moto's backends are process-wide: start from an empty account


def _aws(url: str) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def test_deps_reach_moto_and_the_embedded_api_server(moto_url: str, kube_api: EmbeddedKubeAPI) -> None:
    environ = {**BASE, **_aws(moto_url), "KUBECONFIG": str(kube_api.kubeconfig_path)}
    deps = build_aws_deps(environ)
    assert deps.settings.cluster_name == "demo" and deps.settings.region == "us-east-1"
    assert deps.settings.launch_timeout == timedelta(minutes=5)
    assert deps.compute.list_managed() == []
    assert deps.cluster.list_pools() == []
    deps.cluster.create_pool(make_pool())
    assert [pool.name for pool in deps.cluster.list_pools()] == ["pool-a"]
    ec2 = boto3.client(
        "ec2",
        region_name="us-east-1",
        **{k.lower(): v for k, v in _aws(moto_url).items() if k != "AWS_ENDPOINT_URL"},
        endpoint_url=moto_url,
    )
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": "managed-by", "Value": "tensor-fusion.ai"},
                    {"Key": "tensor-fusion.ai/cluster", "Value": "demo"},
                    {"Key": "tensor-fusion.ai/node-name", "Value": "c1"},
                ],
            }
        ],
    )["Instances"][0]["InstanceId"]
    found = deps.compute.find_by_claim(
        GPUNodeClaim.model_validate(
            {
                "metadata": {"name": "c1"},
                "spec": {"tflopsOffered": "1", "vramOffered": "1Gi", "gpuDeviceOffered": 1},
            }
        )
    )
    assert found is not None and found.instance_id == instance
    assert deps.clock.now().tzinfo is not None


def test_kubeconfig_from_secrets_manager(moto_url: str, kube_api: EmbeddedKubeAPI) -> None:
    secrets = boto3.client(
        "secretsmanager",
        region_name="us-east-1",
        endpoint_url=moto_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    secrets.create_secret(
        Name="gpupool/demo/kubeconfig", SecretString=Path(kube_api.kubeconfig_path).read_text()
    )
    environ = {
        **BASE,
        **_aws(moto_url),
        "GPUPOOL_KUBE_ACCESS": "kubeconfig-secret",
        "GPUPOOL_KUBECONFIG_SECRET": "gpupool/demo/kubeconfig",
    }
    assert build_aws_deps(environ).cluster.list_pools() == []
    missing = {**environ, "GPUPOOL_KUBECONFIG_SECRET": "gpupool/none"}
    with pytest.raises(ConfigError, match="GPUPOOL_KUBECONFIG_SECRET=gpupool/none"):
        build_aws_deps(missing).cluster.list_pools()


def test_settings_come_from_the_environment() -> None:
    env = read_aws_environment(
        {
            **BASE,
            "KUBECONFIG": "/k/config:/k/other",
            "GPUPOOL_LAUNCH_TIMEOUT": "90s",
            "GPUPOOL_REGISTRATION_TIMEOUT": "1h30m",
            "GPUPOOL_ORPHAN_GRACE": "600",
            "GPUPOOL_MAX_NODES_PER_PLAN": "7",
            "GPUPOOL_KUBE_NAMESPACE": "tensor-fusion-sys",
            "GPUPOOL_KUBE_TIMEOUT": "3s",
        }
    )
    assert env.settings.launch_timeout == timedelta(seconds=90)
    assert env.settings.registration_timeout == timedelta(hours=1, minutes=30)
    assert env.settings.orphan_grace == timedelta(minutes=10)
    assert env.settings.max_nodes_per_plan == 7
    assert env.settings.offering_unavailable_for == timedelta(minutes=3)  # default kept
    assert env.kube.mode == "kubeconfig" and env.kube.kubeconfig_path == "/k/config"
    endpoints = read_aws_environment(
        {**BASE, "AWS_ENDPOINT_URL": "http://all", "AWS_ENDPOINT_URL_EC2": "http://ec2", "KUBECONFIG": "/k"}
    )
    assert (endpoints.ec2_endpoint_url, endpoints.secrets_endpoint_url) == ("http://ec2", "http://all")
    assert env.kube_namespace == "tensor-fusion-sys" and env.kube_timeout_s == 3
    assert env.ec2_endpoint_url is None and env.secrets_endpoint_url is None and env.credentials == {}


@pytest.mark.parametrize(
    ("extra", "mode"),
    [
        ({}, "eks"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "incluster"),
        ({"GPUPOOL_KUBECONFIG": "apiVersion: v1"}, "kubeconfig"),
        ({"GPUPOOL_KUBE_ACCESS": "eks", "KUBECONFIG": "/x"}, "eks"),
    ],
)
def test_access_mode_default_and_choice(extra: dict[str, str], mode: str) -> None:
    env = read_aws_environment({**BASE, **extra})
    assert env.kube.mode == mode
    if mode == "eks":
        assert env.kube.eks_cluster_name == "demo"


@pytest.mark.parametrize(
    ("environ", "names"),
    [
        ({"AWS_REGION": "us-east-1"}, "GPUPOOL_CLUSTER_NAME"),
        ({"GPUPOOL_CLUSTER_NAME": "demo"}, "AWS_REGION"),
        ({**BASE, "GPUPOOL_KUBE_ACCESS": "ssh"}, "GPUPOOL_KUBE_ACCESS='ssh'"),
        ({**BASE, "GPUPOOL_KUBE_ACCESS": "kubeconfig"}, "GPUPOOL_KUBECONFIG_SECRET"),
        (
            {**BASE, "GPUPOOL_KUBE_ACCESS": "kubeconfig-secret", "KUBECONFIG": "/x"},
            "GPUPOOL_KUBECONFIG_SECRET",
        ),
        ({**BASE, "GPUPOOL_LAUNCH_TIMEOUT": "soon"}, "GPUPOOL_LAUNCH_TIMEOUT"),
        ({**BASE, "GPUPOOL_MAX_LAUNCH_ROUNDS": "0"}, "GPUPOOL_MAX_LAUNCH_ROUNDS"),
        ({**BASE, "GPUPOOL_KUBE_TIMEOUT": "-1"}, "GPUPOOL_KUBE_TIMEOUT"),
        ({**BASE, "GPUPOOL_KUBE_ENDPOINT": "https://x"}, "both"),
    ],
)
def test_bad_environment_is_a_config_error_naming_the_variable(environ: dict[str, str], names: str) -> None:
    with pytest.raises(ConfigError, match=names.replace("(", r"\(")):
        read_aws_environment(environ)


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("5m", 300), ("1h30m", 5400), ("45", 45), ("2h", 7200)]
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration("X", text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "m", "5 m", "1.5h", "5d"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ConfigError, match="X="):
        parse_duration("X", text)


def test_offerings_of_the_region_are_loaded() -> None:
    deps = build_aws_deps({**BASE, "KUBECONFIG": "/unused"})
    assert deps.offerings, "the bundled catalog prices us-east-1"
    assert all(
        isinstance(offering, OfferingRef) and offering.region == "us-east-1" for offering in deps.offerings
    )
    assert {offering.capacity_type for offering in deps.offerings} >= {"OnDemand"}
    assert all(offering.zone and offering.zone.startswith("us-east-1") for offering in deps.offerings)


def test_the_catalog_is_read_when_the_offerings_are_first_used() -> None:
    script = (
        "import sys\n"
        "from gpupool.adapters.aws.wiring import build_aws_deps\n"
        "environ = {'GPUPOOL_CLUSTER_NAME': 'demo', 'AWS_REGION': 'us-east-1', 'KUBECONFIG': '/none'}\n"
        "deps = build_aws_deps(environ)\n"
        "from gpupool.core.catalog.loader import load_catalog\n"
        "before = load_catalog.cache_info().currsize > 0\n"
        "count = len(deps.offerings)\n"
        "print(before, count > 0, deps.offerings[0] == list(deps.offerings)[0], len(deps.offerings[:2]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "False True True 2"


def test_no_sdk_is_imported_until_a_port_is_used(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from gpupool.adapters.aws.wiring import build_aws_deps\n"
        "environ = {'GPUPOOL_CLUSTER_NAME': 'demo', 'AWS_REGION': 'us-east-1', 'KUBECONFIG': '/none'}\n"
        "deps = build_aws_deps(environ)\n"
        "print(sorted(m for m in ('boto3', 'botocore', 'kubernetes') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"


def test_unusable_kubeconfig_is_a_config_error_on_first_use() -> None:
    deps = build_aws_deps({**BASE, "KUBECONFIG": "/no/such/kubeconfig"})
    with pytest.raises(ConfigError, match="/no/such/kubeconfig"):
        deps.cluster.list_pools()


def test_a_simulated_clock_stamps_events(kube_api: EmbeddedKubeAPI) -> None:
    from kubernetes import client as k8s
    from kubernetes import config as kube_config

    simulated = FakeClock(datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC))
    deps = build_aws_deps({**BASE, "KUBECONFIG": str(kube_api.kubeconfig_path)}, clock=simulated)
    assert deps.clock is simulated
    deps.cluster.record_event(POOL_COMPACTION)
    api_client = kube_config.new_client_from_config(config_file=str(kube_api.kubeconfig_path))
    events = k8s.CoreV1Api(api_client).list_event_for_all_namespaces().items
    assert [event.last_timestamp.year for event in events] == [2030]


def test_the_functions_adapters_import_no_generated_api_class() -> None:
    script = (
        "import sys\n"
        "from kubernetes.client import ApiClient, Configuration\n"
        "from gpupool.adapters.kube.karpenter import KubeKarpenter\n"
        "from gpupool.adapters.kube.cluster import KubeCluster\n"
        "from gpupool.adapters.kube.deliveries import KubeDeliveryLedger\n"
        "api = ApiClient(Configuration())\n"
        "KubeCluster(api); KubeKarpenter(api); KubeDeliveryLedger(api, namespace='n', request_timeout_s=1)\n"
        "print(sorted(m for m in sys.modules if m.startswith('kubernetes.client.api.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"
