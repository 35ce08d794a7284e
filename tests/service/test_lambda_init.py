"""What a Lambda function imports at init: on demand, no service, boto3 or kubernetes client (they
come with the first event that needs them); where the init phase is off the request path
(`AWS_LAMBDA_INITIALIZATION_TYPE` snap-start / provisioned-concurrency) the function's service and
the adapters' modules are imported then — and no deps (clients, credentials) are built at init in
either case. Each case runs `functions/<name>/app.py` in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import app
service = "gpupool.service." + sys.argv[2]
modules = (service, "botocore.session", "kubernetes.client", "gpupool.adapters.aws.wiring", "boto3")
found = {m: m in sys.modules for m in modules}
pool = sys.modules.get("gpupool.core.model.pool")
found["GPUPool built"] = pool is not None and pool.GPUPool.__pydantic_complete__
print(json.dumps(found))
"""


def _imported_at_init(function: str, init_type: str | None) -> dict[str, bool]:
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_INITIALIZATION_TYPE"}
    if init_type is not None:
        env["AWS_LAMBDA_INITIALIZATION_TYPE"] = init_type
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(ROOT / "functions" / function), function],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
        timeout=120,
    )
    found: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("init_type", [None, "on-demand"])
def test_an_on_demand_init_imports_no_service_and_no_sdk(init_type: str | None) -> None:
    assert not any(_imported_at_init("bind", init_type).values())


@pytest.mark.parametrize("init_type", ["snap-start", "provisioned-concurrency"])
def test_an_init_off_the_request_path_imports_the_service_and_the_adapters(init_type: str) -> None:
    imported = _imported_at_init("compact", init_type)
    assert imported == {
        "gpupool.service.compact": True,
        "botocore.session": True,
        "kubernetes.client": True,
        "gpupool.adapters.aws.wiring": True,
        "boto3": False,  # clients are botocore's; boto3's resources and S3 transfers go unused
        "GPUPool built": True,
    }


def test_no_deps_are_built_at_init() -> None:
    """A snapshot must hold no credentials or connections: the deps factory waits for an event."""
    code = (
        "import os, sys; sys.path.insert(0, sys.argv[1]); os.environ['AWS_LAMBDA_INITIALIZATION_TYPE']"
        " = 'snap-start'; from gpupool.handlers.aws_lambda import make_handler; built = []; "
        "make_handler('launch', lambda: built.append(1)); print(len(built))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "functions" / "launch")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == "0"
