"""`gpupool sandbox up --background` end to end: a client that knows only D/kubeconfig and
the official `kubernetes` client creates a GPUPool, loses a stale-resourceVersion replace
(409), watches MODIFIED and DELETED, sees a finalizer hold a deleted pool and its dependent
GPUNode go once the finalizer is removed, and patches status without touching spec. Also:
the env file, moto's EC2 endpoint, foreground mode with Ctrl-C, and the bad states."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from gpupool.core.model import GPUPool
from gpupool.core.model.constants import FINALIZER

GROUP, VERSION = "tensor-fusion.ai", "v1"
POOLS, NODES = "gpupools", "gpunodes"


def gpupool_cli(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "gpupool.cli.main", "sandbox", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def sandbox_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("sandbox")
    started = gpupool_cli("up", "--background", "--dir", str(directory))
    assert started.returncode == 0, started.stderr
    try:
        yield directory
    finally:
        stopped = gpupool_cli("down", "--dir", str(directory))
        assert stopped.returncode == 0, stopped.stderr
        assert not (directory / "sandbox.pid").exists()


@pytest.fixture(scope="module")
def custom(sandbox_dir: Path) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(config.new_client_from_config(config_file=str(sandbox_dir / "kubeconfig")))


def _pool(name: str, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "GPUPool",
        "metadata": {"name": name, **metadata},
        "spec": {"nodeManagerConfig": {"provisioningMode": "AutoSelect"}},
    }


def test_env_file_names_everything_a_shell_needs(sandbox_dir: Path) -> None:
    env = dict(line.split("=", 1) for line in (sandbox_dir / "env").read_text().splitlines())
    assert env["KUBECONFIG"] == str(sandbox_dir / "kubeconfig")
    assert env["AWS_DEFAULT_REGION"] == "us-east-1"
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]) == ("testing", "testing")
    assert env["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
    assert env["GPUPOOL_SANDBOX_DIR"] == str(sandbox_dir)
    assert env["GPUPOOL_CLUSTER_NAME"] == "tensor-fusion"


def test_moto_ec2_answers_at_the_env_endpoint(sandbox_dir: Path) -> None:
    import boto3

    env = dict(line.split("=", 1) for line in (sandbox_dir / "env").read_text().splitlines())
    ec2 = boto3.client(
        "ec2",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=env["AWS_DEFAULT_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )
    assert ec2.describe_instances()["Reservations"] == []


def test_status_reports_the_running_sandbox(sandbox_dir: Path) -> None:
    found = gpupool_cli("status", "--dir", str(sandbox_dir))
    assert found.returncode == 0 and "Kubernetes API  http://127.0.0.1:" in found.stdout


def test_second_up_is_refused(sandbox_dir: Path) -> None:
    again = gpupool_cli("up", "--background", "--dir", str(sandbox_dir))
    assert again.returncode == 2
    assert "already running" in again.stderr and "Traceback" not in again.stderr


def test_create_gpupool_returns_the_object(custom: client.CustomObjectsApi) -> None:
    created = custom.create_cluster_custom_object(GROUP, VERSION, POOLS, _pool("created"))
    pool = GPUPool.model_validate(created)
    assert pool.metadata.name == "created"
    assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]


def test_stale_resource_version_replace_is_409(custom: client.CustomObjectsApi) -> None:
    created = custom.create_cluster_custom_object(GROUP, VERSION, POOLS, _pool("contended"))
    custom.patch_cluster_custom_object(
        GROUP, VERSION, POOLS, "contended", {"metadata": {"labels": {"won": "yes"}}}
    )
    with pytest.raises(ApiException) as raised:
        custom.replace_cluster_custom_object(GROUP, VERSION, POOLS, "contended", created)
    assert raised.value.status == 409


def test_watch_sees_modified_and_deleted(custom: client.CustomObjectsApi) -> None:
    created = custom.create_cluster_custom_object(GROUP, VERSION, POOLS, _pool("watched"))
    seen: list[tuple[str, str]] = []
    watcher = watch.Watch()

    def consume() -> None:
        stream = watcher.stream(
            custom.list_cluster_custom_object,
            GROUP,
            VERSION,
            POOLS,
            resource_version=created["metadata"]["resourceVersion"],
            timeout_seconds=20,
        )
        for event in stream:
            if event["object"]["metadata"]["name"] == "watched":
                seen.append((event["type"], event["object"]["metadata"]["name"]))
            if event["type"] == "DELETED":
                watcher.stop()

    thread = threading.Thread(target=consume)
    thread.start()
    time.sleep(0.3)
    custom.patch_cluster_custom_object(
        GROUP, VERSION, POOLS, "watched", {"spec": {"schedulingConfigTemplate": "x"}}
    )
    custom.delete_cluster_custom_object(GROUP, VERSION, POOLS, "watched")
    thread.join(timeout=20)
    assert seen == [("MODIFIED", "watched"), ("DELETED", "watched")]


def _gone(custom: client.CustomObjectsApi, plural: str, name: str) -> bool:
    try:
        custom.get_cluster_custom_object(GROUP, VERSION, plural, name)
    except ApiException as error:
        assert error.status == 404
        return True
    return False


def test_finalizer_holds_the_pool_and_dependents_go_after(custom: client.CustomObjectsApi) -> None:
    pool = custom.create_cluster_custom_object(GROUP, VERSION, POOLS, _pool("held", finalizers=[FINALIZER]))
    owner = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "GPUPool",
        "name": "held",
        "uid": pool["metadata"]["uid"],
    }
    node = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "GPUNode",
        "metadata": {"name": "held-node", "ownerReferences": [owner]},
        "spec": {},
    }
    custom.create_cluster_custom_object(GROUP, VERSION, NODES, node)

    custom.delete_cluster_custom_object(GROUP, VERSION, POOLS, "held")
    still = custom.get_cluster_custom_object(GROUP, VERSION, POOLS, "held")
    assert still["metadata"]["deletionTimestamp"]
    assert not _gone(custom, NODES, "held-node")

    custom.patch_cluster_custom_object(GROUP, VERSION, POOLS, "held", {"metadata": {"finalizers": None}})
    assert _gone(custom, POOLS, "held")
    assert _gone(custom, NODES, "held-node")


def test_status_patch_leaves_spec_alone(custom: client.CustomObjectsApi) -> None:
    created = custom.create_cluster_custom_object(GROUP, VERSION, POOLS, _pool("status"))
    patched = custom.patch_cluster_custom_object_status(
        GROUP,
        VERSION,
        POOLS,
        "status",
        {"status": {"phase": "Running"}, "spec": {"schedulingConfigTemplate": "sneaky"}},
    )
    assert patched["status"]["phase"] == "Running"
    assert patched["spec"] == created["spec"]
    assert patched["metadata"]["generation"] == created["metadata"]["generation"]


def test_foreground_up_stops_on_ctrl_c(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "gpupool.cli.main", "sandbox", "up", "--dir", str(tmp_path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "state.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "kubeconfig").exists() and (tmp_path / "sandbox.pid").exists()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "gpupool sandbox is up" in out and "stopped" in out
    assert not (tmp_path / "sandbox.pid").exists()


def test_bad_states_have_clear_messages(tmp_path: Path) -> None:
    not_up = gpupool_cli("down", "--dir", str(tmp_path))
    assert not_up.returncode == 2 and "no sandbox is running" in not_up.stderr
    assert gpupool_cli("status", "--dir", str(tmp_path)).returncode == 1

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "sandbox.pid").write_text(f"{dead.pid}\n")
    stale = gpupool_cli("status", "--dir", str(tmp_path))
    assert stale.returncode == 1 and "stale pid file" in stale.stdout
    cleaned = gpupool_cli("down", "--dir", str(tmp_path))
    assert cleaned.returncode == 2 and "stale pid file" in cleaned.stderr
    assert not (tmp_path / "sandbox.pid").exists()


def test_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    refused = gpupool_cli("up", "--background", "--dir", str(not_a_dir))
    assert refused.returncode == 2
    assert "is not a directory" in refused.stderr and "Traceback" not in refused.stderr


def test_stale_pid_file_does_not_block_up(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "sandbox.pid").write_text(f"{dead.pid}\n")
    started = gpupool_cli("up", "--background", "--dir", str(tmp_path))
    try:
        assert started.returncode == 0, started.stderr
        assert int((tmp_path / "sandbox.pid").read_text()) != dead.pid
    finally:
        assert gpupool_cli("down", "--dir", str(tmp_path)).returncode == 0
    assert os.path.exists(tmp_path / "kubeconfig")
