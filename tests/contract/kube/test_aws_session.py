"""The functions' AWS sessions (`adapters.aws.session`): clients for every service gpupool calls
load the same model as botocore's own loader would (same API version, same operations), except
EC2's, which is the shipped cut (`adapters/aws/botocore_data.json`), and every endpoint is resolved
as botocore's own endpoints.json resolves it; the service listing answers without
walking botocore's whole data tree, `AWS_DATA_PATH` is still on the search path (and a model there
wins over the cuts), and a client for a service gpupool does not call is refused naming the ones it
does. The shipped cuts: equal to a fresh cut from the installed botocore (or the test says how to
regenerate it), of the botocore version the layer pins, naming exactly the operations
`Ec2Compute` and `AwsPricing` call; an operation outside it fails loudly; another botocore reads
its full model."""

from __future__ import annotations

import importlib.util
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore import xform_name
from botocore.exceptions import UnknownServiceError
from moto import mock_aws

from gpupool.adapters.aws.botocore_data import DATA_FILE, EC2_OPERATIONS, read_shipped, shipped_data
from gpupool.adapters.aws.pricing import EC2_CALLS
from gpupool.adapters.aws.session import SERVICES, ServicesLoader, aws_session

ROOT = Path(__file__).resolve().parents[3]


def fresh_cut() -> dict[str, Any]:
    """What layers/gpupool/cut_botocore_data.py would write now, from the installed botocore."""
    script_path = ROOT / "layers/gpupool/cut_botocore_data.py"
    spec = importlib.util.spec_from_file_location("cut_botocore_data", script_path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    cut: dict[str, Any] = script.fresh_cut()
    return cut


KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.mark.parametrize("service", SERVICES)
def test_a_client_loads_the_model_botocore_would(service: str) -> None:
    ours = aws_session(region_name="us-east-1", **KEYS).client(service)
    theirs = boto3.session.Session(region_name="us-east-1", **KEYS).client(service)
    assert ours.meta.service_model.api_version == theirs.meta.service_model.api_version
    if service == "ec2":  # the shipped cut: botocore's operations, only those Ec2Compute calls
        assert sorted(ours.meta.service_model.operation_names) == sorted(EC2_OPERATIONS)
        for name in EC2_OPERATIONS:
            cut, full = (
                ours.meta.service_model.operation_model(name),
                theirs.meta.service_model.operation_model(name),
            )
            assert cut.input_shape.members.keys() == full.input_shape.members.keys()
            assert cut.output_shape.members.keys() == full.output_shape.members.keys()
    else:
        assert ours.meta.service_model.operation_names == theirs.meta.service_model.operation_names
    assert ours.meta.region_name == "us-east-1"


def test_the_listing_names_only_the_services_called(monkeypatch: pytest.MonkeyPatch) -> None:
    session = aws_session(region_name="us-east-1", **KEYS)
    loader = session.botocore_session.get_component("data_loader")
    assert isinstance(loader, ServicesLoader)
    listed: list[str] = []
    real_listdir = os.listdir

    def listdir(path: str) -> list[str]:
        listed.append(str(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    assert loader.list_available_services("service-2") == sorted(SERVICES)
    assert all(Path(path).name in SERVICES for path in listed), listed


def test_aws_data_path_stays_on_the_search_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    session = aws_session(region_name="us-east-1", **KEYS)
    loader = session.botocore_session.get_component("data_loader")
    assert loader.search_paths[0] == str(tmp_path)
    assert any(path.endswith("botocore/data") for path in loader.search_paths)
    # Nothing of EC2's there: botocore would read its own file, so the shipped cut is read.
    assert len(session.client("ec2").meta.service_model.operation_names) == len(EC2_OPERATIONS)


def test_a_service_gpupool_does_not_call_is_refused_by_name() -> None:
    with pytest.raises(UnknownServiceError, match="ec2, eks, pricing, secretsmanager"):
        aws_session(region_name="us-east-1", **KEYS).client("s3")


def test_the_cut_names_every_operation_ec2compute_and_pricing_call() -> None:
    source = (ROOT / "layers/gpupool/gpupool/adapters/aws/compute.py").read_text()
    called = set(re.findall(r'_call\(\s*"([a-z_]+)"', source)) | set(
        re.findall(r"_client\.([a-z_]+)\(", source)
    )
    pricing = (ROOT / "layers/gpupool/gpupool/adapters/aws/pricing.py").read_text()
    ec2_pages = set(re.findall(r'self\._pages\(self\._ec2, "([A-Za-z]+)"', pricing))
    assert ec2_pages == set(EC2_CALLS)
    model = boto3.session.Session(region_name="us-east-1", **KEYS).client("ec2").meta.service_model
    by_method = {xform_name(name): name for name in model.operation_names}
    assert called and {by_method[method] for method in called} | ec2_pages == set(EC2_OPERATIONS)
    shipped = read_shipped()["data"]
    (ec2,) = (name for name in shipped if name.startswith("ec2/"))
    assert sorted(shipped[ec2]["operations"]) == sorted(EC2_OPERATIONS)


def test_the_shipped_cut_is_the_installed_botocores() -> None:
    shipped, fresh = read_shipped(), fresh_cut()
    regenerate = (
        f"{DATA_FILE.name} was cut from botocore {shipped['botocore']}; botocore {fresh['botocore']} is"
        " installed. Regenerate it (.venv/bin/python layers/gpupool/cut_botocore_data.py) and pin boto3 and"
        " botocore to that version in layers/gpupool/requirements.txt and pyproject.toml's dev extra"
    )
    assert shipped["botocore"] == fresh["botocore"], regenerate
    assert shipped == fresh, f"the shipped cut differs from a fresh one: {regenerate}"


def test_the_layer_pins_the_botocore_the_cut_came_from() -> None:
    requirements = (ROOT / "layers/gpupool/requirements.txt").read_text(encoding="utf-8").splitlines()
    pins = dict(line.split("==") for line in requirements if line.startswith(("boto3==", "botocore==")))
    version = read_shipped()["botocore"]
    assert pins == {"botocore": version, "boto3": boto3.__version__}, pins
    assert boto3.__version__ == version  # boto3 and botocore are released together, same number


def test_the_dev_install_pins_the_sdk_the_layer_ships() -> None:
    # `pip install -e '.[dev]'` (the README's test line, CI) installs the layer's SDK: otherwise a
    # boto3 released after the cut would fail the cut's tests on a fresh clone.
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    pins = dict(item.split("==") for item in dev["dev"] if item.startswith(("boto3==", "botocore==")))
    version = read_shipped()["botocore"]
    assert pins == {"boto3": version, "botocore": version}, pins


def test_another_botocore_reads_its_own_files() -> None:
    assert shipped_data("0.0.0") == {}
    session = aws_session(region_name="us-east-1", **KEYS)
    loader = ServicesLoader(
        SERVICES,
        shipped=lambda: shipped_data("0.0.0"),
        extra_search_paths=session.botocore_session.get_component("data_loader").search_paths,
        include_default_search_paths=False,
    )
    session.botocore_session.register_component("data_loader", loader)
    assert len(session.client("ec2").meta.service_model.operation_names) > len(EC2_OPERATIONS)
    assert len(loader.load_data("endpoints")["partitions"][0]["services"]) > len(SERVICES)


@pytest.mark.parametrize(
    "region", ["us-east-1", "eu-west-3", "cn-north-1", "us-gov-west-1", "ap-southeast-5"]
)
@pytest.mark.parametrize("service", SERVICES)
def test_endpoints_resolve_as_botocores_own(service: str, region: str) -> None:
    ours = aws_session(region_name=region, **KEYS)
    theirs = boto3.session.Session(region_name=region, **KEYS)
    assert ours.client(service).meta.endpoint_url == theirs.client(service).meta.endpoint_url
    for fips in (True, False):
        resolver, builtin = (
            core._get_internal_component("endpoint_resolver")
            for core in (ours.botocore_session, theirs._session)
        )
        assert resolver.construct_endpoint(
            service, region, use_fips_endpoint=fips
        ) == builtin.construct_endpoint(service, region, use_fips_endpoint=fips)
        assert resolver.uses_builtin_data == builtin.uses_builtin_data


def test_a_copy_on_the_data_path_wins_over_the_shipped_cut(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "endpoints.json").write_text('{"partitions": [], "version": 3}', encoding="utf-8")
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    loader = aws_session(region_name="us-east-1", **KEYS).botocore_session.get_component("data_loader")
    assert loader.load_data("endpoints") == {"partitions": [], "version": 3}


def test_an_operation_outside_the_cut_fails_loudly() -> None:
    client = aws_session(region_name="us-east-1", **KEYS).client("ec2")
    with pytest.raises(AttributeError, match="describe_vpcs"):
        client.describe_vpcs()


def test_another_api_version_of_ec2_is_read_from_botocore() -> None:
    loader = aws_session(region_name="us-east-1", **KEYS).botocore_session.get_component("data_loader")
    older = loader.load_service_model("ec2", "service-2", api_version="2016-09-15")
    assert older["metadata"]["apiVersion"] == "2016-09-15"
    assert len(older["operations"]) > len(EC2_OPERATIONS)


@pytest.mark.parametrize("operation", EC2_OPERATIONS)
def test_a_client_on_the_cut_answers_each_operation_against_moto(operation: str) -> None:
    calls: dict[str, dict[str, Any]] = {
        "DescribeImages": {"Owners": ["amazon"]},
        "DescribeInstanceTypeOfferings": {"LocationType": "availability-zone"},
        "DescribeInstanceTypes": {"InstanceTypes": ["g5.xlarge"]},
        "DescribeInstances": {},
        "DescribeSpotPriceHistory": {"InstanceTypes": ["g5.xlarge"], "ProductDescriptions": ["Linux/UNIX"]},
        "DescribeSecurityGroups": {},
        "DescribeSubnets": {},
        "RunInstances": {"ImageId": "ami-12c6146b", "MinCount": 1, "MaxCount": 1},
        "TerminateInstances": {"InstanceIds": ["i-0123456789abcdef0"]},
    }
    with mock_aws():
        client = aws_session(region_name="us-east-1", **KEYS).client("ec2")
        assert len(client.meta.service_model.operation_names) == len(EC2_OPERATIONS)
        if operation == "TerminateInstances":
            image = client.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
            started = client.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0][
                "InstanceId"
            ]
            calls[operation] = {"InstanceIds": [started]}
        if operation == "RunInstances":
            calls[operation]["ImageId"] = client.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        response = getattr(client, xform_name(operation))(**calls[operation])
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 200
