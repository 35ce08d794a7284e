"""`gpupool invoke`: the real launch handler, in-process, against a sandbox given by an env file.

The sandbox here is the demo's world served over HTTP (embedded API server + moto's EC2
server on 127.0.0.1, the demo's TensorFusionCluster and GPUNodeClass installed), described by
an env file exactly like the one `gpupool sandbox up` writes (KUBECONFIG, AWS_ENDPOINT_URL,
region, credentials, GPUPOOL_CLUSTER_NAME). Covers: one schedule event delivered 10 times →
exactly the instances the first plan launched, counted in moto, and one claim each;
`--dry-run` plans and changes nothing; a JSON object that is no event → exit 0 with the
ignore reason, nothing changed; missing / non-JSON / non-object event files and unknown
functions → exit 2 with one line and no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpupool.cli.main import main
from gpupool.core.model.constants import TAG_NODE_NAME
from gpupool.local.simulation_world import SimWorld, demo_manifests

REPO = Path(__file__).resolve().parents[2]
SCHEDULE_EVENT = REPO / "events" / "aws" / "scheduled-event.json"
POOL = "tensor-fusion-elastic"


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[tuple[SimWorld, Path]]:
    with SimWorld(start=datetime.now(UTC), serve_ec2=True) as world:
        world.install(demo_manifests())
        env_file = tmp_path / "env"
        env_file.write_text("".join(f"export {k}={v}\n" for k, v in world.environ.items()))
        yield world, env_file


def _invoke(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["invoke", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _live_instances(world: SimWorld) -> list[dict[str, Any]]:
    return [i for i in world.managed_instances() if i["State"]["Name"] not in ("shutting-down", "terminated")]


def _claims(world: SimWorld) -> list[str]:
    return [c["metadata"]["name"] for c in world.objects.list("tensor-fusion.ai", "gpunodeclaims")]


def test_ten_deliveries_of_one_schedule_event_launch_exactly_what_the_plan_needs(
    sandbox: tuple[SimWorld, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    world, env = sandbox
    outcomes = []
    for _ in range(10):
        code, out, _ = _invoke(
            capsys, "launch", str(SCHEDULE_EVENT), "--cloud", "aws", "--env", str(env), "--json"
        )
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
    instances = _live_instances(world)
    assert len(instances) == len(launched)
    claims = _claims(world)
    assert len(claims) == len(launched)
    tagged = sorted({t["Value"] for i in instances for t in i["Tags"] if t["Key"] == TAG_NODE_NAME})
    assert tagged == sorted(claims)


def test_dry_run_prints_the_plan_and_changes_nothing(
    sandbox: tuple[SimWorld, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    world, env = sandbox
    code, out, _ = _invoke(capsys, "launch", str(SCHEDULE_EVENT), "--env", str(env), "--dry-run", "--json")
    assert code == 0, out
    outcome = json.loads(out)
    kinds = [a["kind"] for a in outcome["plan"]["actions"]]
    assert "apply-pool" in kinds  # the pool does not exist yet: the plan would create it
    assert all(row["result"] == "dry-run" for row in outcome["applied"])
    assert world.managed_instances() == []
    assert _claims(world) == []
    assert world.objects.list("tensor-fusion.ai", "gpupools") == []

    code, out, _ = _invoke(capsys, "launch", str(SCHEDULE_EVENT), "--env", str(env), "--dry-run")
    assert code == 0
    assert "plan:" in out and "dry run: nothing applied" in out
    assert world.managed_instances() == []


def test_an_object_that_is_no_event_is_ignored_with_its_reason(
    sandbox: tuple[SimWorld, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    world, env = sandbox
    event = tmp_path / "odd.json"
    event.write_text(json.dumps({"detail-type": "Something Else", "source": "aws.ec2", "id": "x-1"}))
    code, out, _ = _invoke(capsys, "launch", str(event), "--env", str(env), "--json")
    assert code == 0
    outcome = json.loads(out)
    assert outcome["plan"]["actions"] == [] and outcome["applied"] == [] and outcome["errors"] == []
    assert any(reason.startswith("ignored: ") for reason in outcome["plan"]["reasons"])
    assert world.managed_instances() == [] and _claims(world) == []


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
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _invoke(capsys, "resize", str(SCHEDULE_EVENT))
    assert code == 2 and "unknown function 'resize'" in err and "launch, bind, compact" in err
    env = tmp_path / "env"
    env.write_text("this is not an env file\n")
    code, _, err = _invoke(capsys, "launch", str(SCHEDULE_EVENT), "--env", str(env))
    assert code == 2 and "expected KEY=VALUE" in err


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
