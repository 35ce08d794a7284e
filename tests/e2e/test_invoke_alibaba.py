"""`gpupool invoke --cloud alibaba`: the real FC handlers, in-process, against a running `gpupool sandbox`.

The sandbox is the real one (`run_foreground` on a thread: Kubernetes API server, moto, and the
ECS endpoint the env file names as GPUPOOL_ECS_ENDPOINT with ALIBABA_CLOUD_* credentials),
prepared with `gpupool demo --prepare-sandbox D/env --cloud alibaba`.

Covers: every events/alibaba sample runs through `gpupool invoke --cloud alibaba` (exit 0,
handled or deliberately ignored); one timer event delivered 10 times → exactly the instances the
first plan launched, counted with DescribeInstances through the SDK, one claim each; the
simulated kubelet (`gpupool demo --join-nodes D/env --cloud alibaba`) registers their nodes and
`bind` binds every claim; `--dry-run` changes nothing; the prepared cluster names
`computingVendor.type: alibaba`; an env file without Alibaba settings → exit 2, one line.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from gpupool.adapters.ecs import EcsCompute
from gpupool.adapters.ecs_api import EcsCredentials, SdkEcsApi, sdk_client
from gpupool.cli.commands.invoke import read_env_file
from gpupool.cli.main import main
from gpupool.sandbox.files import SandboxFiles
from gpupool.sandbox.lifecycle import SandboxInfo, run_foreground

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "events" / "alibaba"


@dataclass
class Sandbox:
    env: Path
    compute: EcsCompute
    custom: Any

    def claims(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.custom.list_cluster_custom_object(
            "tensor-fusion.ai", "v1", "gpunodeclaims"
        )["items"]
        return items


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    files = SandboxFiles.at(tmp_path / "sandbox")
    stop, ready = threading.Event(), threading.Event()
    started: list[SandboxInfo] = []

    def announce(info: SandboxInfo) -> None:
        started.append(info)
        ready.set()

    thread = threading.Thread(
        target=run_foreground, args=(files,), kwargs={"announce": announce, "stop": stop}
    )
    thread.start()
    try:
        assert ready.wait(60), "the sandbox did not start"
        assert main(["demo", "--prepare-sandbox", str(files.env), "--cloud", "alibaba"]) == 0
        env = read_env_file(files.env)
        credentials = EcsCredentials(
            env["ALIBABA_CLOUD_ACCESS_KEY_ID"], env["ALIBABA_CLOUD_ACCESS_KEY_SECRET"]
        )
        api = SdkEcsApi.on(
            sdk_client(
                region=env["ALIBABA_CLOUD_REGION_ID"],
                endpoint=env["GPUPOOL_ECS_ENDPOINT"],
                credentials=credentials,
            )
        )
        compute = EcsCompute(api, cluster=env["GPUPOOL_CLUSTER_NAME"], region=env["ALIBABA_CLOUD_REGION_ID"])
        kube = config.new_client_from_config(config_file=env["KUBECONFIG"])  # type: ignore[no-untyped-call]
        yield Sandbox(files.env, compute, client.CustomObjectsApi(kube))
    finally:
        stop.set()
        thread.join(timeout=30)


def _invoke(
    capsys: pytest.CaptureFixture[str], sandbox: Sandbox, function: str, sample: str, *extra: str
) -> tuple[int, Any]:
    capsys.readouterr()
    code = main(
        [
            "invoke",
            function,
            str(EVENTS / f"{sample}.json"),
            "--cloud",
            "alibaba",
            "--env",
            str(sandbox.env),
            "--json",
            *extra,
        ]
    )
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def test_the_sandbox_env_names_the_ecs_endpoint_and_alibaba_credentials(sandbox: Sandbox) -> None:
    env = read_env_file(sandbox.env)
    assert env["GPUPOOL_ECS_ENDPOINT"].startswith("http://127.0.0.1:")
    assert env["ALIBABA_CLOUD_REGION_ID"] == "cn-hangzhou"
    assert env["ALIBABA_CLOUD_ACCESS_KEY_ID"] and env["ALIBABA_CLOUD_ACCESS_KEY_SECRET"]
    cluster = sandbox.custom.get_cluster_custom_object(
        "tensor-fusion.ai", "v1", "tensorfusionclusters", "tensor-fusion"
    )
    assert cluster["spec"]["computingVendor"]["type"] == "alibaba"


def test_a_timer_delivered_ten_times_then_nodes_join_and_bind(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, planned = _invoke(capsys, sandbox, "launch", "fc-timer", "--dry-run")
    assert code == 0 and sandbox.compute.list_managed() == [] and sandbox.claims() == []
    assert {row["result"] for row in planned["applied"]} == {"dry-run"}
    launches = [a for a in planned["plan"]["actions"] if a["kind"] == "launch-instance"]
    assert launches, planned
    for _ in range(10):
        code, outcome = _invoke(capsys, sandbox, "launch", "fc-timer")
        assert code == 0 and outcome["errors"] == []
    instances = sandbox.compute.list_managed()
    claims = sandbox.claims()
    assert len(instances) == len(claims) == len(launches)
    assert {i.claim_name for i in instances} == {c["metadata"]["name"] for c in claims}
    assert {i.instance_type for i in instances} == {a["offering"]["instance_type"] for a in launches}
    # The sandbox's instances run after a few seconds of wall time; the kubelet then joins them.
    deadline = time.monotonic() + 15
    while any(i.state != "running" for i in sandbox.compute.list_managed()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert main(["demo", "--join-nodes", str(sandbox.env), "--cloud", "alibaba"]) == 0
    code, outcome = _invoke(capsys, sandbox, "bind", "fc-timer")
    assert code == 0 and outcome["errors"] == []
    assert {c["status"]["phase"] for c in sandbox.claims()} == {"Bound"}


SAMPLES = sorted(path.stem for path in EVENTS.glob("*.json"))


def test_every_alibaba_sample_runs_through_invoke(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    owners = {
        "fc-http-pod-unschedulable": "launch",
        "fc-http-pool-manual-compaction": "compact",
        "fc-timer": "compact",
    }
    for sample in SAMPLES:
        function = owners.get(sample, "bind")
        code, outcome = _invoke(capsys, sandbox, function, sample)
        assert code == 0, (sample, outcome)
        assert outcome["errors"] == [], sample


def test_an_env_without_alibaba_settings_is_a_clear_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / "env"
    env.write_text("GPUPOOL_CLUSTER_NAME=tensor-fusion\nKUBECONFIG=/nowhere\n")
    code = main(["invoke", "launch", str(EVENTS / "fc-timer.json"), "--cloud", "alibaba", "--env", str(env)])
    err = capsys.readouterr().err
    assert code == 2 and "ALIBABA_CLOUD_REGION_ID" in err and "Traceback" not in err
