"""`gpupool invoke`: the real handlers, in-process, against a running `gpupool sandbox`.

The sandbox is the real one (`gpupool.sandbox.lifecycle.run_foreground`, what `gpupool sandbox up`
runs, here on a thread of the test process; it writes `D/env`), prepared with
`gpupool demo --prepare-sandbox D/env` (the demo's tagged network in moto, its
TensorFusionCluster and GPUNodeClass in the API server).

Covers: one schedule event delivered 10 times → exactly the instances the first plan
launched, counted in moto, one claim each; the simulated kubelet (`gpupool demo --join-nodes D/env`)
registers their nodes and `bind` binds every claim; `--dry-run` plans and changes nothing; a
JSON object that is no event → exit 0 with the ignore reason, nothing changed; missing /
non-JSON / non-object event files, unknown functions and bad env files → exit 2 with one
line and no traceback. The Function URL sample runs as template.yaml deploys the functions
(GPUPOOL_HTTP_AUTH=aws-iam, the relay's role the sample's caller); with no relay authentication
configured, or another caller, the same request is refused (exit 1) before anything is built.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import boto3
import pytest
from kubernetes import client, config

from gpupool.cli.env_file import read_env_file
from gpupool.cli.main import main
from gpupool.core.model.constants import TAG_NODE_NAME
from gpupool.sandbox.files import SandboxFiles

sys.path.insert(0, str(Path(__file__).parent))
from foreground_sandbox import foreground_sandbox

REPO = Path(__file__).resolve().parents[2]
SCHEDULE_EVENT = REPO / "events" / "aws" / "scheduled-event.json"
NODE_JOINED_EVENT = REPO / "events" / "aws" / "function-url-node-joined.json"
# As template.yaml deploys the functions; the samples' caller is a session of this role.
RELAY_AUTH = {
    "GPUPOOL_HTTP_AUTH": "aws-iam",
    "GPUPOOL_RELAY_PRINCIPAL": "arn:aws:iam::123456789012:role/gpupool-relay",
}


@dataclass
class Sandbox:
    env: Path
    ec2: Any
    custom: Any

    def instances(self) -> list[dict[str, Any]]:
        pages = self.ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "tag:managed-by", "Values": ["tensor-fusion.ai"]}]
        )
        return [i for page in pages for r in page["Reservations"] for i in r["Instances"]]

    def live_instances(self) -> list[dict[str, Any]]:
        return [i for i in self.instances() if i["State"]["Name"] not in ("shutting-down", "terminated")]

    def names(self, plural: str) -> list[str]:
        listed = self.custom.list_cluster_custom_object("tensor-fusion.ai", "v1", plural)
        return sorted(item["metadata"]["name"] for item in listed["items"])


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    files = SandboxFiles.at(tmp_path / "sandbox")
    with foreground_sandbox(files) as started:
        # moto keeps its accounts per process: start from an empty one.
        with urlopen(Request(f"{started.aws_url}/moto-api/reset", method="POST"), timeout=10) as answer:
            answer.read()
        assert main(["demo", "--prepare-sandbox", str(files.env)]) == 0
        env = read_env_file(files.env)
        ec2 = boto3.client(
            "ec2",
            region_name=env["AWS_REGION"],
            endpoint_url=env["AWS_ENDPOINT_URL"],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        api = config.new_client_from_config(config_file=env["KUBECONFIG"])
        yield Sandbox(files.env, ec2, client.CustomObjectsApi(api))


def _invoke(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["invoke", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _launch(
    capsys: pytest.CaptureFixture[str], sandbox: Sandbox, event: Path, *extra: str
) -> tuple[int, str, str]:
    return _invoke(
        capsys,
        "launch",
        str(event),
        "--cloud",
        "aws",
        "--env",
        str(sandbox.env),
        "--cluster",
        "tensor-fusion",
        *extra,
    )


def test_ten_deliveries_of_one_schedule_event_launch_exactly_what_the_plan_needs(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = []
    for _ in range(10):
        code, out, _ = _launch(capsys, sandbox, SCHEDULE_EVENT, "--json")
        assert code == 0, out
        outcomes.append(json.loads(out))
    assert all(set(o) == {"plan", "applied", "errors"} for o in outcomes)
    assert all(set(o["plan"]) == {"actions", "reasons"} for o in outcomes)
    first = outcomes[0]
    launched = [a for a in first["plan"]["actions"] if a["kind"] == "launch-instance"]
    assert len(launched) == 2  # min 130 TFLOPS / 32Gi of T4-class nodes (65 TFLOPS, 16Gi each)
    assert all(row["result"] == "applied" for row in first["applied"] if row["action"] == "launch-instance")
    for later in outcomes[1:]:
        assert not [a for a in later["plan"]["actions"] if a["kind"] in ("create-claim", "launch-instance")]
        assert later["errors"] == []
    instances = sandbox.live_instances()
    assert len(instances) == len(launched) == len(sandbox.instances())
    claims = sandbox.names("gpunodeclaims")
    assert len(claims) == len(launched)
    tagged = sorted({t["Value"] for i in instances for t in i["Tags"] if t["Key"] == TAG_NODE_NAME})
    assert tagged == sorted(claims)


def test_nodes_the_simulated_kubelet_registers_get_bound_by_the_bind_function(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in RELAY_AUTH.items():
        monkeypatch.setenv(name, value)
    code, _, _ = _launch(capsys, sandbox, SCHEDULE_EVENT)
    assert code == 0
    claims = sandbox.names("gpunodeclaims")
    capsys.readouterr()
    assert main(["demo", "--join-nodes", str(sandbox.env)]) == 0
    joined = capsys.readouterr().out
    assert all(f"claim {claim}" in joined for claim in claims)
    # The relay's node.joined CloudEvent on the Function URL (an HTTP response comes back).
    code, out, _ = _invoke(
        capsys,
        "bind",
        str(NODE_JOINED_EVENT),
        "--env",
        str(sandbox.env),
        "--cluster",
        "tensor-fusion",
        "--json",
    )
    assert code == 0, out
    bound = {a["claim"] for a in json.loads(out)["plan"]["actions"] if a.get("phase") == "Bound"}
    assert bound == set(claims)
    listed = sandbox.custom.list_cluster_custom_object("tensor-fusion.ai", "v1", "gpunodeclaims")["items"]
    assert {item["status"]["phase"] for item in listed} == {"Bound"}


def test_dry_run_prints_the_plan_and_changes_nothing(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _launch(capsys, sandbox, SCHEDULE_EVENT, "--dry-run", "--json")
    assert code == 0, out
    outcome = json.loads(out)
    kinds = [a["kind"] for a in outcome["plan"]["actions"]]
    assert "apply-pool" in kinds  # the pool does not exist yet: the plan would create it
    assert all(row["result"] == "dry-run" for row in outcome["applied"])
    assert sandbox.instances() == []
    assert sandbox.names("gpunodeclaims") == []
    assert sandbox.names("gpupools") == []

    code, out, _ = _launch(capsys, sandbox, SCHEDULE_EVENT, "--dry-run")
    assert code == 0
    assert "plan:" in out and "dry run: nothing applied" in out
    assert sandbox.instances() == [] and sandbox.names("gpupools") == []


def test_an_object_that_is_no_event_is_ignored_with_its_reason(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in RELAY_AUTH.items():
        monkeypatch.setenv(name, value)
    event = tmp_path / "odd.json"
    event.write_text(json.dumps({"detail-type": "Something Else", "source": "aws.ec2", "id": "x-1"}))
    code, out, _ = _launch(capsys, sandbox, event, "--json")
    assert code == 0
    outcome = json.loads(out)
    assert outcome["plan"]["actions"] == [] and outcome["applied"] == [] and outcome["errors"] == []
    assert any(reason.startswith("ignored: ") for reason in outcome["plan"]["reasons"])
    assert sandbox.instances() == [] and sandbox.names("gpunodeclaims") == []
    # A relay event sent to the wrong function: the Function URL answers 400, invoke exits 0.
    code, out, _ = _invoke(
        capsys,
        "compact",
        str(NODE_JOINED_EVENT),
        "--env",
        str(sandbox.env),
        "--cluster",
        "tensor-fusion",
        "--json",
    )
    assert code == 0
    assert any("bind function" in reason for reason in json.loads(out)["plan"]["reasons"])


@pytest.mark.parametrize(
    "environ",
    [{}, {**RELAY_AUTH, "GPUPOOL_RELAY_PRINCIPAL": "arn:aws:iam::123456789012:role/someone-else"}],
    ids=["nothing configured", "another principal"],
)
def test_a_function_url_call_the_deployment_does_not_trust_is_refused(
    environ: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("GPUPOOL_HTTP_AUTH", "GPUPOOL_RELAY_PRINCIPAL", "GPUPOOL_RELAY_HMAC_SECRET"):
        monkeypatch.delenv(name, raising=False)
    env = tmp_path / "env"  # no endpoint at all: a refusal builds nothing
    lines = {
        "GPUPOOL_CLUSTER_NAME": "tensor-fusion",
        "AWS_REGION": "us-east-1",
        "KUBECONFIG": "/nowhere",
        **environ,
    }
    env.write_text("".join(f"{key}={value}\n" for key, value in lines.items()))
    code, out, err = _invoke(capsys, "bind", str(NODE_JOINED_EVENT), "--env", str(env))
    assert code == 1 and "bind ← event: refused" in out and "Traceback" not in err, out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "not JSON"),
        ("[1, 2]", "not an event"),
    ],
)
def test_an_unreadable_event_file_is_one_line_and_exit_2(
    content: str | None, message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    event = tmp_path / "event.json"
    if content is not None:
        event.write_text(content)
    code, out, err = _invoke(capsys, "launch", str(event), "--json")
    assert code == 2
    assert out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_unknown_function_and_a_bad_env_file_are_clear_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = _invoke(capsys, "resize", str(SCHEDULE_EVENT))
    assert code == 2 and "unknown function 'resize'" in err and "launch, bind, compact" in err
    env = tmp_path / "env"
    env.write_text("this is not an env file\n")
    code, _, err = _invoke(capsys, "launch", str(SCHEDULE_EVENT), "--env", str(env))
    assert code == 2 and "expected KEY=VALUE" in err
    env.write_text("AWS_REGION=us-east-1\nKUBECONFIG=/nowhere/kubeconfig\n")
    monkeypatch.delenv("GPUPOOL_CLUSTER_NAME", raising=False)
    code, _, err = _invoke(capsys, "launch", str(SCHEDULE_EVENT), "--env", str(env))
    assert code == 2 and "GPUPOOL_CLUSTER_NAME is required" in err and "--cluster" in err
    assert len(err.strip().splitlines()) == 1


def test_the_installed_command_reports_a_missing_file_without_a_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpupool.cli.main", "invoke", "bind", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == f"gpupool invoke: error: {tmp_path / 'missing.json'}: no such file"
