"""Alibaba credentials and wiring: where the ECS client's credentials come from, in order, and how
every bad variable is refused with a message naming it — never showing a credential.

Covers: the FC context's STS credentials; the `ak` / `sk` files of the Secret
tf-cloud-vendor-credentials (both or neither; a missing or empty file is named, its content never
shown); ALIBABA_CLOUD_* variables; none → the SDK's default chain; `read_alibaba_environment`
refusing a missing cluster or region, a non-URL endpoint, non-JSON extraParams and an unknown
Kubernetes access mode; `build_alibaba_deps` builds no client before first use and prices the
region from the Alibaba catalog.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpupool.adapters.alibaba.credentials import (
    CredentialsError,
    from_environment,
    from_fc_context,
    from_files,
)
from gpupool.adapters.alibaba.wiring import build_alibaba_deps, read_alibaba_environment
from gpupool.adapters.environment import ConfigError

BASE = {"GPUPOOL_CLUSTER_NAME": "demo", "ALIBABA_CLOUD_REGION_ID": "cn-hangzhou", "KUBECONFIG": "/k"}


def test_fc_context_credentials_are_read_and_incomplete_ones_ignored() -> None:
    given = SimpleNamespace(access_key_id="STS.a", access_key_secret="b", security_token="c")
    credentials = from_fc_context(SimpleNamespace(credentials=given))
    assert credentials is not None and (credentials.access_key_id, credentials.security_token) == (
        "STS.a",
        "c",
    )
    assert from_fc_context(SimpleNamespace(credentials=SimpleNamespace(access_key_id="x"))) is None
    assert from_fc_context(None) is None


def test_secret_files_win_over_variables(tmp_path: Path) -> None:
    (tmp_path / "ak").write_text("LTAI-file\n")
    (tmp_path / "sk").write_text("file-secret\n")
    environ = {
        "GPUPOOL_ALIBABA_ACCESS_KEY_PATH": str(tmp_path / "ak"),
        "GPUPOOL_ALIBABA_SECRET_KEY_PATH": str(tmp_path / "sk"),
        "ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAI-env",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "env-secret",
    }
    credentials = from_environment(environ)
    assert credentials is not None and credentials.access_key_id == "LTAI-file"
    assert credentials.access_key_secret == "file-secret" and "file-secret" not in repr(credentials)


def test_the_secret_mount_is_read_when_no_path_is_named(tmp_path: Path) -> None:
    (tmp_path / "ak").write_text("LTAI-mounted")
    assert from_environment({}, mount=tmp_path) is None, "both files are needed"
    (tmp_path / "sk").write_text("mounted-secret")
    credentials = from_environment(
        {"ALIBABA_CLOUD_ACCESS_KEY_ID": "a", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "b"}, mount=tmp_path
    )
    assert credentials is not None and credentials.access_key_id == "LTAI-mounted"


def test_variables_then_the_default_chain() -> None:
    credentials = from_environment(
        {"ALIBABA_CLOUD_ACCESS_KEY_ID": "a", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "b"}
    )
    assert credentials is not None and credentials.security_token is None
    assert from_environment({}) is None


def test_bad_credential_files_are_named_and_never_shown(tmp_path: Path) -> None:
    (tmp_path / "sk").write_text("very-secret")
    (tmp_path / "empty").write_text("  \n")
    with pytest.raises(CredentialsError, match="both"):
        from_files({"GPUPOOL_ALIBABA_ACCESS_KEY_PATH": str(tmp_path / "ak")})
    with pytest.raises(CredentialsError, match="cannot read") as missing:
        from_files(
            {
                "GPUPOOL_ALIBABA_ACCESS_KEY_PATH": str(tmp_path / "ak"),
                "GPUPOOL_ALIBABA_SECRET_KEY_PATH": str(tmp_path / "sk"),
            }
        )
    assert "very-secret" not in str(missing.value)
    with pytest.raises(CredentialsError, match="empty"):
        from_files(
            {
                "GPUPOOL_ALIBABA_ACCESS_KEY_PATH": str(tmp_path / "empty"),
                "GPUPOOL_ALIBABA_SECRET_KEY_PATH": str(tmp_path / "sk"),
            }
        )


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"GPUPOOL_CLUSTER_NAME": ""}, "GPUPOOL_CLUSTER_NAME"),
        ({"ALIBABA_CLOUD_REGION_ID": ""}, "ALIBABA_CLOUD_REGION_ID"),
        ({"GPUPOOL_ECS_ENDPOINT": "127.0.0.1:9"}, "GPUPOOL_ECS_ENDPOINT"),
        ({"GPUPOOL_ECS_EXTRA_PARAMS": "{nope"}, "GPUPOOL_ECS_EXTRA_PARAMS"),
        ({"GPUPOOL_ECS_EXTRA_PARAMS": '{"systemDiskSize": 100}'}, "GPUPOOL_ECS_EXTRA_PARAMS"),
        ({"GPUPOOL_KUBE_ACCESS": "eks"}, "GPUPOOL_KUBE_ACCESS"),
        ({"GPUPOOL_LAUNCH_TIMEOUT": "soon"}, "GPUPOOL_LAUNCH_TIMEOUT"),
        (
            {"ALIBABA_CLOUD_ACCESS_KEY_ID": "x", "GPUPOOL_ALIBABA_ACCESS_KEY_PATH": "/nowhere/ak"},
            "GPUPOOL_ALIBABA",
        ),
    ],
)
def test_a_bad_variable_is_a_config_error_naming_it(change: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        read_alibaba_environment({**BASE, **change})


def test_fc_region_is_the_fallback_and_extra_params_are_read() -> None:
    env = read_alibaba_environment(
        {
            **BASE,
            "ALIBABA_CLOUD_REGION_ID": "",
            "FC_REGION": "cn-shanghai",
            "GPUPOOL_ECS_EXTRA_PARAMS": '{"systemDiskSize": "100"}',
        }
    )
    assert env.region == "cn-shanghai" and env.extra_params == {"systemDiskSize": "100"}
    assert env.kube_mode == "kubeconfig" and env.credentials is None


def test_deps_build_no_client_before_first_use_and_price_the_region() -> None:
    code = (
        "import sys; from gpupool.adapters.alibaba.wiring import build_alibaba_deps; "
        "build_alibaba_deps({'GPUPOOL_CLUSTER_NAME': 'demo', 'ALIBABA_CLOUD_REGION_ID': 'cn-hangzhou', "
        "'KUBECONFIG': '/k'}); "
        "print(sorted(m for m in ('alibabacloud_ecs20140526', 'kubernetes') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
    deps = build_alibaba_deps({**BASE, "ALIBABA_CLOUD_REGION_ID": "ap-southeast-1"})
    assert deps.offerings and {o.region for o in deps.offerings} == {"ap-southeast-1"}
    assert all(o.instance_type.startswith("ecs.gn") for o in deps.offerings)
    assert deps.settings.cluster_name == "demo"
