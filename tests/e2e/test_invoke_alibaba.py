"""`gpupool invoke --cloud alibaba`: the real FC handlers, in-process, against a running `gpupool sandbox`.

The sandbox is the real one (`run_foreground` on a thread: Kubernetes API server, moto, and the
ECS endpoint the env file names as GPUPOOL_ECS_ENDPOINT with ALIBABA_CLOUD_* credentials),
prepared with `gpupool demo --prepare-sandbox D/env --cloud alibaba`.

Covers: every events/alibaba sample runs through `gpupool invoke --cloud alibaba` (exit 0,
handled or deliberately ignored); one timer event delivered 10 times → exactly the instances the
first plan launched, counted with DescribeInstances through the SDK, one claim each; the
simulated kubelet (`gpupool demo --join-nodes D/env --cloud alibaba`) registers their nodes and
`bind` binds every claim; `--dry-run` changes nothing; the prepared cluster names
`computingVendor.type: alibaba`; an env file without Alibaba settings → exit 2, one line. The FC
HTTP samples run as s.yaml deploys the functions (GPUPOOL_HTTP_AUTH=fc-signature: their
x-acs-content-sha256 is the body's). Relay authentication through the real command (issue 22): an FC HTTP
event with no secret set is refused and changes nothing; signed with the right secret (given in
the `--env` file) it is handled once, its replay is acknowledged as a duplicate and not acted
on, its delivery record a Lease in the sandbox's API server; a signature that is only a prefix
of the digest (`v1=` alone, or most of the digest) is refused; in fc-signature mode a delivery
the relay's `--forward-auth fc` signer signed (ACS3-HMAC-SHA256) is handled once, its replay is
not acted on, and another body under its headers is refused.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from gpupool.adapters.alibaba.api import EcsCredentials, SdkEcsApi, sdk_client
from gpupool.adapters.alibaba.compute import EcsCompute
from gpupool.adapters.kube.deliveries import LABEL_RECORD
from gpupool.cli.env_file import read_env_file
from gpupool.cli.main import main
from gpupool.core.intake.signature import SIGNATURE_HEADER, sign_body
from gpupool.sandbox.files import SandboxFiles

sys.path.insert(0, str(Path(__file__).parent))
from foreground_sandbox import foreground_sandbox

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
    with foreground_sandbox(files):
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
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUPOOL_HTTP_AUTH", "fc-signature")  # as s.yaml deploys them
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


# ---- relay authentication through the real command ----------------------------------------------
SECRET = "relay-hmac-secret"
RELAY_VARIABLES = ("GPUPOOL_HTTP_AUTH", "GPUPOOL_RELAY_HMAC_SECRET", "GPUPOOL_RELAY_HMAC_SECRET_ID")


def _event_file(tmp_path: Path, sample: str, *, secret: str | None, signature: str | None = None) -> Path:
    """The sample as the relay would send it now: HMAC-signed with `secret` (or `signature` as given)."""
    event = json.loads((EVENTS / f"{sample}.json").read_text())
    if secret is not None:
        headers = sign_body(secret.encode(), event["body"].encode(), timestamp=int(time.time()))
        if signature is not None:
            headers[SIGNATURE_HEADER] = signature
        event["headers"] = {**event["headers"], **headers}
    path = tmp_path / f"{sample}-{secret is not None}-{signature}.json"
    path.write_text(json.dumps(event))
    return path


def _text_invoke(
    capsys: pytest.CaptureFixture[str], env: Path, function: str, event: Path
) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["invoke", function, str(event), "--cloud", "alibaba", "--env", str(env)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_fc_http_events_unsigned_are_refused_signed_are_handled_once_and_a_replay_is_not_acted_on(
    sandbox: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in RELAY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    env = read_env_file(sandbox.env)
    leases = client.CoordinationV1Api(config.new_client_from_config(config_file=env["KUBECONFIG"]))  # type: ignore[no-untyped-call]

    def records() -> list[str]:
        listed = leases.list_namespaced_lease("default", label_selector=f"{LABEL_RECORD}=delivery")
        return [item.metadata.name for item in listed.items]

    unsigned = _event_file(tmp_path, "fc-http-pod-unschedulable", secret=None)
    code, out = _text_invoke(capsys, sandbox.env, "launch", unsigned)
    assert code == 1 and "refused" in out and "no relay HMAC secret" in out, out
    assert sandbox.claims() == [] and sandbox.compute.list_managed() == [] and records() == []

    with_secret = tmp_path / "env"
    with_secret.write_text(sandbox.env.read_text() + f"GPUPOOL_RELAY_HMAC_SECRET={SECRET}\n")
    signed = _event_file(tmp_path, "fc-http-pod-unschedulable", secret=SECRET)
    code, out = _text_invoke(capsys, with_secret, "launch", signed)
    assert code == 0 and "launch ← reconcile: handled" in out, out
    assert "apply-pool" in out and sandbox.claims() == [] and len(records()) == 1  # it made the pool
    code, out = _text_invoke(capsys, with_secret, "launch", signed)  # the captured delivery, sent again
    assert code == 0 and "launch ← reconcile: duplicate" in out, out
    assert "plan: 0 action(s)" in out and "why:" not in out, "a duplicate reaches no service"
    assert sandbox.claims() == [] and sandbox.compute.list_managed() == [] and len(records()) == 1

    wrong = _event_file(tmp_path, "fc-http-pod-unschedulable", secret="another-secret")
    assert _text_invoke(capsys, with_secret, "launch", wrong)[0] == 1 and sandbox.claims() == []
    fresh = json.loads(signed.read_text())  # a new delivery (another event id), signed: acted on
    body = json.loads(fresh["body"]) | {"id": "relay-0002-pod-unschedulable"}
    fresh["body"] = json.dumps(body)
    fresh["headers"] |= sign_body(SECRET.encode(), fresh["body"].encode(), timestamp=int(time.time()))
    (tmp_path / "fresh.json").write_text(json.dumps(fresh))
    code, out = _text_invoke(capsys, with_secret, "launch", tmp_path / "fresh.json")
    assert code == 0 and "launch ← reconcile: handled" in out and "why:" in out and len(records()) == 2, out


@pytest.mark.parametrize("keep", [len("v1="), len("v1=") + 63], ids=["v1= alone", "a prefix of the digest"])
def test_a_signature_that_is_a_prefix_of_the_digest_is_refused(
    keep: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No API server is needed: the refusal comes before the function builds anything."""
    for name in RELAY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    env = tmp_path / "env"
    env.write_text(
        "GPUPOOL_CLUSTER_NAME=tensor-fusion\nALIBABA_CLOUD_REGION_ID=cn-hangzhou\nKUBECONFIG=/nowhere\n"
        f"GPUPOOL_HTTP_AUTH=hmac\nGPUPOOL_RELAY_HMAC_SECRET={SECRET}\n"
    )
    event = json.loads((EVENTS / "fc-http-pool-manual-compaction.json").read_text())
    digest = sign_body(SECRET.encode(), event["body"].encode(), timestamp=int(time.time()))[SIGNATURE_HEADER]
    forged = _event_file(tmp_path, "fc-http-pool-manual-compaction", secret=SECRET, signature=digest[:keep])
    code, out = _text_invoke(capsys, env, "compact", forged)
    assert code == 1 and "refused" in out and "does not match" in out, out


def test_an_acs3_signed_fc_delivery_is_handled_once_and_neither_its_replay_nor_another_body_is_acted_on(
    sandbox: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpupool_incluster.relay.signing import fc_signer

    for name in RELAY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    env = tmp_path / "env"
    env.write_text(sandbox.env.read_text() + "GPUPOOL_HTTP_AUTH=fc-signature\n")  # as s.yaml deploys it
    event = json.loads((EVENTS / "fc-http-pod-unschedulable.json").read_text())
    signer = fc_signer(lambda: ("LTAI-relay", "relay-secret", ""))
    url = "https://gpupool-launch.cn-hangzhou.fcapp.run/"
    event["headers"] = {"User-Agent": "gpupool-relay/0.1"} | signer(
        url, event["body"].encode(), {"content-type": "application/cloudevents+json; charset=utf-8"}
    )
    signed = tmp_path / "signed.json"
    signed.write_text(json.dumps(event))
    code, out = _text_invoke(capsys, env, "launch", signed)
    assert code == 0 and "launch ← reconcile: handled" in out, out
    code, out = _text_invoke(capsys, env, "launch", signed)  # the captured delivery, within its 15 minutes
    assert code == 0 and "launch ← reconcile: duplicate" in out and "why:" not in out, out
    swapped = event | {"body": event["body"].replace("relay-0001-pod-unschedulable", "relay-0099-forged")}
    (tmp_path / "swapped.json").write_text(json.dumps(swapped))
    code, out = _text_invoke(capsys, env, "launch", tmp_path / "swapped.json")
    assert code == 1 and "x-acs-content-sha256 does not match the body" in out, out
