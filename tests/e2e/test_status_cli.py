"""`gpupool status` against the sandbox (the embedded API server) in the middle of the demo's
Provisioned and AutoSelect stories: its `--json` checked fact by fact against the cluster's own
objects (recomputed here from the raw JSON), the text view showing every fact, `--watch --json`
following a change from the watches and ending on Ctrl-C (SIGINT) with exit 0, the bad input a
user can give (an unreachable API server, a cluster without the tensor-fusion.ai CRDs, a pool
that does not exist, no kubeconfig, an unknown context, a bad --refresh, --watch without a
terminal) each one line and exit 2 with no traceback, and docs/observability.md quoting the view
as the sandbox draws it now (`status_worlds.captured`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupool.cli.main import main
from gpupool.sandbox.demo.world import DemoWorld
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from tests.e2e.status_worlds import (
    AUTOSELECT_FOR,
    PROVISIONED_FOR,
    autoselect_world,
    provisioned_world,
)

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
GPUPOOL = str(Path(sys.executable).parent / "gpupool")
GROUP = "tensor-fusion.ai"
POOL = "tensor-fusion-elastic"


def _now_minus(span: Any) -> datetime:
    return datetime.now(UTC).replace(microsecond=0) - span


@pytest.fixture(scope="module")
def provisioned() -> Iterator[DemoWorld]:
    """4 minutes into the Provisioned story (ending about now), with a budget on the pool, one
    node cordoned and one GPU marked missing, so every flag and the budget's use have a value."""
    with provisioned_world(start=_now_minus(PROVISIONED_FOR)) as world:
        budget = {
            "spec": {
                "nodeManagerConfig": {
                    "nodeProvisioner": {
                        "budget": {
                            "budgetPerDay": "48",
                            "budgetPerMonth": "5000",
                            "budgetPerQuarter": "20000",
                        }
                    }
                }
            }
        }
        world.objects.patch(GROUP, "gpupools", POOL, budget)
        first = world.objects.list("", "nodes")[0]["metadata"]["name"]
        world.objects.patch("", "nodes", first, {"spec": {"unschedulable": True}})
        gpu = world.objects.list(GROUP, "gpus")[-1]["metadata"]["name"]
        world.objects.patch(
            GROUP,
            "gpus",
            gpu,
            {"metadata": {"annotations": {"tensor-fusion.ai/gpu-missing-since": "2026-01-01T00:00:00Z"}}},
        )
        yield world


@pytest.fixture(scope="module")
def autoselect() -> Iterator[DemoWorld]:
    with autoselect_world(start=_now_minus(AUTOSELECT_FOR)) as world:
        yield world


def _status(world: DemoWorld, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["status", "--kubeconfig", world.environ["KUBECONFIG"], *args])
    out, err = capsys.readouterr()
    return code, out, err


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _labelled_for(claim: dict[str, Any], pool: str) -> bool:
    labels = claim["metadata"].get("labels") or {}
    return (
        labels.get("tensor-fusion.ai/managed-by") == pool
        or labels.get(f"tensor-fusion.ai/pool-{pool}") == "true"
    )


def _quantity(text: str) -> float:
    units = {"Gi": 2**30, "Mi": 2**20, "Ki": 2**10}
    for suffix, factor in units.items():
        if str(text).endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


def test_json_is_the_provisioned_clusters_objects(
    provisioned: DemoWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _status(provisioned, "--json", capsys=capsys)
    assert code == 0
    body = json.loads(out)
    objects = provisioned.objects
    generated = _time(body["generated_at"])
    assert generated is not None
    [shown] = body["pools"]
    raw_pool = objects.get(GROUP, "gpupools", POOL)
    assert raw_pool is not None
    spec = raw_pool["spec"]
    assert (shown["name"], shown["mode"], shown["phase"]) == (
        POOL,
        spec["nodeManagerConfig"]["provisioningMode"],
        raw_pool["status"]["phase"],
    )
    claims = {
        c["metadata"]["name"]: c for c in objects.list(GROUP, "gpunodeclaims") if _labelled_for(c, POOL)
    }
    assert {c["name"] for c in shown["claims"]} == set(claims)
    nodes = {n["metadata"]["name"]: n for n in objects.list("", "nodes")}
    node_of = {
        (n["metadata"].get("labels") or {}).get("tensor-fusion.ai/node-provisioner"): name
        for name, n in nodes.items()
    }
    for claim in shown["claims"]:
        raw = claims[claim["name"]]
        assert claim["phase"] == (raw.get("status") or {}).get("phase", "Pending")
        assert claim["instance_type"] == raw["spec"]["instanceType"] and claim["zone"] == raw["spec"]["zone"]
        assert _time(claim["created"]) == _time(raw["metadata"]["creationTimestamp"])
        assert claim["age_seconds"] == int(
            (generated - _time(raw["metadata"]["creationTimestamp"])).total_seconds()
        )  # type: ignore[operator]
        assert claim["hourly_price"] == float(
            raw["metadata"]["annotations"]["tensor-fusion.ai/hourly-pricing"]
        )
        assert claim["node"] == node_of.get(claim["name"]) and claim["stuck"] is None
    assert shown["claims_by_phase"] == dict(Counter(c["status"]["phase"] for c in claims.values()))
    assert shown["claims_by_phase"] == {"Bound": 2, "Creating": 1}  # the spike's claim is in flight
    # capacity: the GPUNodes of the claims' nodes, and what in-flight claims offer (DESIGN §3)
    gpu_nodes = {g["metadata"]["name"]: g for g in objects.list(GROUP, "gpunodes")}
    reporting = {name for name in claims if node_of.get(name) in gpu_nodes}
    total = sum(_quantity(gpu_nodes[node_of[c]]["status"]["totalTFlops"]) for c in reporting)
    available = sum(_quantity(gpu_nodes[node_of[c]]["status"]["availableTFlops"]) for c in reporting)
    in_flight = sum(_quantity(claims[c]["spec"]["tflopsOffered"]) for c in set(claims) - reporting)
    capacity = spec["capacityConfig"]
    minimum, warm, maximum = (
        _quantity(capacity[k]["tflops"]) for k in ("minResources", "warmResources", "maxResources")
    )
    gap = min(
        max(0.0, minimum - (total + in_flight), warm - (available + in_flight)), maximum - (total + in_flight)
    )
    assert shown["tflops"] == {
        "total": total,
        "available": available,
        "in_flight": in_flight,
        "min": minimum,
        "warm": warm,
        "max": maximum,
        "gap": gap,
    }
    assert shown["vram_bytes"]["min"] == _quantity(capacity["minResources"]["vram"])
    assert shown["node_names"] == sorted(node_of[c] for c in claims if c in node_of)
    cost = sum(
        float(c["metadata"]["annotations"]["tensor-fusion.ai/hourly-pricing"]) for c in claims.values()
    )
    assert shown["hourly_cost"] == pytest.approx(cost)
    assert shown["budget"] == {
        "field": "budgetPerDay",
        "amount": 48.0,
        "hourly_ceiling": 2.0,
        "use_percent": round(100 * cost / 2, 3),
        "strategy": "AlertOnly",
    }
    # decisions: the Events about the pool, its claims and its nodes, newest first
    events = [
        e
        for e in objects.list("", "events")
        if e["involvedObject"]["name"] in {POOL, *claims, *nodes}
        or e["involvedObject"]["name"].startswith(f"{POOL}-")
    ]
    newest = sorted(events, key=lambda e: (e["lastTimestamp"], e["involvedObject"]["name"]), reverse=True)
    assert [(d["reason"], d["object"].split("/")[-1]) for d in shown["decisions"]] == [
        (e["reason"], e["involvedObject"]["name"]) for e in newest
    ][:8]
    assert shown["decisions"], "the story's Events are the pool's decisions"
    # nodes: every node of the pool, its GPU objects, offering, age and flags
    gpus = objects.list(GROUP, "gpus")
    for node in body["nodes"]:
        raw = nodes[node["name"]]
        labels = raw["metadata"]["labels"]
        assert node["pool"] == POOL and node["instance_type"] == labels["node.kubernetes.io/instance-type"]
        mine = [g for g in gpus if g["status"]["nodeSelector"]["kubernetes.io/hostname"] == node["name"]]
        assert [g["name"] for g in node["gpus"]] == sorted(g["metadata"]["name"] for g in mine)
        assert node["gpu_model"] == mine[0]["status"]["gpuModel"]
        assert node["age_seconds"] == int(
            (generated - _time(raw["metadata"]["creationTimestamp"])).total_seconds()
        )  # type: ignore[operator]
        missing = any(
            "tensor-fusion.ai/gpu-missing-since" in (g["metadata"].get("annotations") or {}) for g in mine
        )
        assert ("gpu-unusable" in node["flags"]) == missing
        assert ("cordoned" in node["flags"]) == bool(raw["spec"].get("unschedulable"))
    assert {f for n in body["nodes"] for f in n["flags"]} == {"cordoned", "gpu-unusable"}


def _nodeclaim_phase(nodeclaim: dict[str, Any]) -> str:
    conditions = {c["type"]: c["status"] for c in (nodeclaim.get("status") or {}).get("conditions") or []}
    if conditions.get("Launched") == "False":
        return "Failed"
    return next(
        (k for k in ("Initialized", "Registered", "Launched") if conditions.get(k) == "True"), "Pending"
    )


def test_json_is_the_autoselect_clusters_objects(
    autoselect: DemoWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _status(autoselect, "--json", capsys=capsys)
    assert code == 0
    body = json.loads(out)
    [shown] = body["pools"]
    assert (shown["name"], shown["mode"]) == ("auto-gpu", "AutoSelect")
    ours = [
        nc
        for nc in autoselect.objects.list("karpenter.sh", "nodeclaims")
        if (nc["metadata"].get("annotations") or {}).get("gpupool.io/expansion-pool") == "auto-gpu"
    ]
    assert ours, "the story made expansion NodeClaims by now"
    assert {c["name"]: c["phase"] for c in shown["claims"]} == {
        nc["metadata"]["name"]: _nodeclaim_phase(nc) for nc in ours
    }
    assert {c["kind"] for c in shown["claims"]} == {"NodeClaim"}
    prices = [float(nc["metadata"]["annotations"]["tensor-fusion.ai/hourly-pricing"]) for nc in ours]
    assert shown["hourly_cost"] == pytest.approx(sum(prices))
    made = sorted(n for nc in ours if (n := (nc.get("status") or {}).get("nodeName")))
    assert shown["node_names"] == made
    waiting = [p for p in autoselect.objects.list("", "pods") if not p["spec"].get("nodeName")]
    assert f"{len(waiting)} pod(s) wait for GPU capacity" in shown["warnings"]
    # The latest decisions are the Events the functions recorded about the pool's pods: the check that
    # refused the too-big pod, and the candidates Karpenter deleted for capacity (the story's fault).
    recorded = {(e["reason"], e["message"]) for e in autoselect.objects.list("", "events") if e.get("reason")}
    assert shown["decisions"] and {(d["reason"], d["message"]) for d in shown["decisions"]} <= recorded
    assert {d["reason"] for d in shown["decisions"]} == {
        "NodeExpansionCheck",
        "NodeExpansionCompleted",
        "NodeExpansionFailed",
    }
    # the template node Karpenter made before gpupool is listed, in no pool
    seed = {
        nc["status"]["nodeName"]
        for nc in autoselect.objects.list("karpenter.sh", "nodeclaims")
        if "gpupool.io/expansion-pool" not in (nc["metadata"].get("annotations") or {})
    }
    assert seed, "the story's template NodeClaim (Karpenter's own, from its NodePool) has a node"
    assert {n["name"] for n in body["nodes"] if n["pool"] is None} == seed


def test_the_text_view_shows_every_fact(
    provisioned: DemoWorld, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = _status(provisioned, capsys=capsys)
    assert code == 0
    claims = [c["metadata"]["name"] for c in provisioned.objects.list(GROUP, "gpunodeclaims")]
    nodes = [n["metadata"]["name"] for n in provisioned.objects.list("", "nodes")]
    for fact in [
        f"pool {POOL} · Provisioned",
        "TFLOPS",
        "VRAM",
        "total",
        "available",
        "in flight",
        "min",
        "warm",
        "max",
        "gap",
        "520",
        "128Gi",
        "claims (GPUNodeClaim): Bound 2 · Creating 1",
        "cost $1.578/h",
        "budget budgetPerDay $48 = $2.000/h, 78.9 % used (AlertOnly)",
        "latest decisions:",
        "ManagedNodeCreated",
        "g4dn.xlarge us-east-1a OnDemand",
        "$0.526",
        "█",
        "✗",
        "cordoned",
        "gpu-unusable",
        "T4",
        *claims,
        *nodes,
    ]:
        assert fact in out, fact
    code, only, _ = _status(provisioned, "--pool", POOL, capsys=capsys)
    assert code == 0 and f"pool {POOL}" in only


def test_watch_json_follows_a_change_and_ends_on_ctrl_c(provisioned: DemoWorld) -> None:
    command = [
        GPUPOOL,
        "status",
        "--kubeconfig",
        provisioned.environ["KUBECONFIG"],
        "--watch",
        "--json",
        "--pool",
        POOL,
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())
        assert first["pools"][0]["name"] == POOL
        patch = {"metadata": {"annotations": {"tensor-fusion.ai/hourly-pricing": "1.00000"}}}
        claim = first["pools"][0]["claims"][0]["name"]
        provisioned.objects.patch(GROUP, "gpunodeclaims", claim, patch)
        deadline = time.monotonic() + 60
        seen = first
        while time.monotonic() < deadline and seen["pools"][0]["claims"][0]["hourly_price"] != 1.0:
            seen = json.loads(process.stdout.readline())
        assert seen["pools"][0]["claims"][0]["hourly_price"] == 1.0
        process.send_signal(signal.SIGINT)
        # Read what it still writes while it stops: its last flush into a full pipe nobody reads
        # would block (seen on a loaded machine, a line a refresh while this test waited).
        _, errors = process.communicate(timeout=30)
        code = process.returncode
        assert code == 0, errors
        assert "Traceback" not in errors
    finally:
        provisioned.objects.patch(
            GROUP,
            "gpunodeclaims",
            claim,
            {"metadata": {"annotations": {"tensor-fusion.ai/hourly-pricing": "0.52600"}}},
        )
        if process.poll() is None:
            process.kill()


# ---- bad input: one line, exit 2, no traceback ----------------------------------------------------


def _kubeconfig(tmp_path: Path, server: str, name: str = "kubeconfig") -> Path:
    path = tmp_path / name
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run([GPUPOOL, "status", *args], capture_output=True, text=True, timeout=120, env=env)


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_an_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    port = _closed_port()
    line = _one_line(_run("--kubeconfig", str(_kubeconfig(tmp_path, f"http://127.0.0.1:{port}"))))
    assert (
        line == "gpupool status: error: cannot reach the Kubernetes API server at "
        f"http://127.0.0.1:{port}: connection refused"
    )


def test_a_cluster_without_the_crds_is_one_line(tmp_path: Path) -> None:
    with EmbeddedKubeAPI(install_gpupool_crds=False, kubeconfig_path=tmp_path / "kubeconfig") as api:
        url = api.url
        line = _one_line(_run("--kubeconfig", str(api.kubeconfig_path)))
    assert line.startswith(
        f"gpupool status: error: the cluster at {url} has no tensor-fusion.ai gpupools resource: "
        "install the CRDs"
    )


def test_a_pool_that_does_not_exist_is_one_line(provisioned: DemoWorld) -> None:
    line = _one_line(_run("--kubeconfig", provisioned.environ["KUBECONFIG"], "--pool", "nope"))
    assert line == f"gpupool status: error: no GPUPool named 'nope' in this cluster (pools: {POOL})"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--kubeconfig", "{tmp}/missing"],
            "no kubeconfig file at {tmp}/missing (--kubeconfig); give --kubeconfig FILE or set KUBECONFIG",
        ),
        (
            ["--kubeconfig", "{kubeconfig}", "--context", "other"],
            "kubeconfig {kubeconfig} has no context 'other' (contexts: ctx)",
        ),
        (
            ["--kubeconfig", "{kubeconfig}", "--refresh", "0"],
            "--refresh 0: give between 0.2 and 3600 seconds",
        ),
    ],
)
def test_other_bad_input_is_one_line_and_changes_nothing(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = _kubeconfig(tmp_path, f"http://127.0.0.1:{_closed_port()}")
    filled = [a.format(tmp=tmp_path, kubeconfig=kubeconfig) for a in args]
    assert main(["status", *filled]) == 2
    out, err = capsys.readouterr()
    assert (
        out == "" and err == f"gpupool status: error: {message.format(tmp=tmp_path, kubeconfig=kubeconfig)}\n"
    )


def test_watch_without_a_terminal_asks_for_json(
    provisioned: DemoWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _status(provisioned, "--watch", capsys=capsys)
    assert code == 2 and out == ""
    assert (
        err == "gpupool status: error: --watch draws on a terminal; "
        "use --watch --json for one JSON line per change\n"
    )


def test_the_docs_quote_the_view_as_the_sandbox_draws_it() -> None:
    # A fresh process: moto's EC2 state is per process, and the stories start from an empty account.
    printed = subprocess.run(
        [sys.executable, "-m", "tests.e2e.status_worlds"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert printed.returncode == 0, printed.stderr[-2000:]
    text = (ROOT / "docs" / "observability.md").read_text()
    assert printed.stdout.rstrip("\n") in text, (
        f"docs/observability.md should quote, verbatim:\n{printed.stdout}"
    )
