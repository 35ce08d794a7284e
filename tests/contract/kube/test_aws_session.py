"""The functions' boto3 sessions (`adapters.aws_session`): clients for every service gpupool calls
load the same model as botocore's own loader would (same API version, same operations), the
service listing answers without walking botocore's whole data tree, `AWS_DATA_PATH` is still on
the search path, and a client for a service gpupool does not call is refused naming the ones it does;
the cold-start benchmark's cut EC2 model names exactly the operations `Ec2Compute` calls."""

from __future__ import annotations

import os
import re
from pathlib import Path

import boto3
import pytest
from botocore import xform_name
from botocore.exceptions import UnknownServiceError

from gpupool.adapters.aws_session import SERVICES, ServicesLoader, aws_session

KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.mark.parametrize("service", SERVICES)
def test_a_client_loads_the_model_botocore_would(service: str) -> None:
    ours = aws_session(region_name="us-east-1", **KEYS).client(service)
    theirs = boto3.session.Session(region_name="us-east-1", **KEYS).client(service)
    assert ours.meta.service_model.api_version == theirs.meta.service_model.api_version
    assert ours.meta.service_model.operation_names == theirs.meta.service_model.operation_names
    assert ours.meta.region_name == "us-east-1"


def test_the_listing_names_only_the_services_called(monkeypatch: pytest.MonkeyPatch) -> None:
    session = aws_session(region_name="us-east-1", **KEYS)
    loader = session._session.get_component("data_loader")
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
    loader = aws_session(region_name="us-east-1", **KEYS)._session.get_component("data_loader")
    assert loader.search_paths[0] == str(tmp_path)
    assert any(path.endswith("botocore/data") for path in loader.search_paths)


def test_a_service_gpupool_does_not_call_is_refused_by_name() -> None:
    with pytest.raises(UnknownServiceError, match="ec2, eks, secretsmanager"):
        aws_session(region_name="us-east-1", **KEYS).client("s3")


def test_the_cold_start_benchmarks_cut_model_names_every_operation_ec2compute_calls() -> None:
    from benchmarks.cold_start import EC2_OPERATIONS

    source = (Path(__file__).resolve().parents[3] / "layers/gpupool/gpupool/adapters/ec2.py").read_text()
    called = set(re.findall(r'_call\(\s*"([a-z_]+)"', source))
    model = boto3.session.Session(region_name="us-east-1", **KEYS).client("ec2").meta.service_model
    by_method = {xform_name(name): name for name in model.operation_names}
    assert called and {by_method[method] for method in called} == set(EC2_OPERATIONS)
