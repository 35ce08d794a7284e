"""`kubectl describe` lists the Events gpupool's functions recorded, as on a real cluster.

Plays the demo's scale story (the real launch, bind and compact handlers and adapters against
the embedded API server, the world's clock) and then asks kubectl, which finds an object's
Events by a field selector on its uid: every claim's `describe` lists its ManagedNodeCreated
Event from gpupool, the pool's lists its Compaction Event, and `kubectl get events` prints the
events with kubectl's columns, aged in the world's time. Skipped where kubectl is not installed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpupool.cli.commands.demo import _wire
from gpupool.cli.commands.invoke import quiet_handler_output
from gpupool.sandbox.demo.provisioned_story import STORIES, ProvisionedStory
from gpupool.sandbox.demo.world import DemoWorld
from tests.programs import program_path

pytestmark = pytest.mark.usefixtures("needs_kubectl")
KUBECTL = program_path("kubectl")


@pytest.fixture(scope="module")
def world() -> Iterator[DemoWorld]:
    with DemoWorld("aws") as world:
        invoke = _wire(world, None)
        with quiet_handler_output(verbose=False):
            ProvisionedStory(world, invoke, STORIES["scale"][1]).run()
        yield world


def _kubectl(world: DemoWorld, home: Path, *args: str) -> str:
    assert KUBECTL is not None
    env = {"KUBECONFIG": world.environ["KUBECONFIG"], "HOME": str(home), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _events_section(described: str) -> list[list[str]]:
    lines = described.split("\nEvents:", 1)[1].strip().splitlines()
    assert lines[0].split() == ["Type", "Reason", "Age", "From", "Message"], lines
    return [line.split() for line in lines[2:]]


def _claims(world: DemoWorld) -> list[dict[str, Any]]:
    return list(world.objects.list("tensor-fusion.ai", "gpunodeclaims"))


def test_describe_gpunodeclaim_lists_the_events_launch_and_bind_recorded(
    world: DemoWorld, tmp_path: Path
) -> None:
    claims = _claims(world)
    assert claims
    for claim in claims:
        name = claim["metadata"]["name"]
        rows = _events_section(_kubectl(world, tmp_path, "describe", "gpunodeclaim", name))
        assert [row[:2] for row in rows] == [
            ["Normal", "InstanceLaunched"],
            ["Normal", "ManagedNodeCreated"],
        ], rows
        assert {row[3] for row in rows} == {"gpupool"}
        assert " ".join(rows[1][4:]).endswith("joined, is ready and its GPUs are usable")


def test_describe_gpupool_lists_the_compaction(world: DemoWorld, tmp_path: Path) -> None:
    rows = _events_section(_kubectl(world, tmp_path, "describe", "gpupool", "tensor-fusion-elastic"))
    assert ["Normal", "Compaction"] in [row[:2] for row in rows]


def test_get_events_ages_them_in_the_worlds_time(world: DemoWorld, tmp_path: Path) -> None:
    lines = _kubectl(world, tmp_path, "get", "events").splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    objects = {line.split()[3] for line in lines[1:]}
    assert {f"gpunodeclaim/{c['metadata']['name']}" for c in _claims(world)} <= objects
    assert "gpupool/tensor-fusion-elastic" in objects
    assert all(not line.split()[0].startswith("<") for line in lines[1:]), lines  # none in the future
