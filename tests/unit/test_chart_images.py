"""Every image of every workload the chart renders comes from values: containers, init containers and
ephemeral containers of every object, wherever a pod spec sits in it (Deployment, DaemonSet, Job,
CronJob, a bare Pod), with every optional part of the chart switched on.

A container whose image ignores values is an outage on a real cluster: the node agent's guardian
init container once named `gpupool/relay:<version>` whatever `image.repository` said, so every GPU
node's agent sat in ImagePullBackOff, no claim ever bound and each instance was paid for until its
registration timeout. The walk is generic (any list under `containers`, `initContainers` or
`ephemeralContainers`), so a container added later is covered without touching this test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "incluster" / "chart"
CONTAINER_KINDS = ("containers", "initContainers", "ephemeralContainers")

REPOSITORY = "registry.example.test/team/gpupool"
TAG = "9.9.9-images"
SCHEDULER = "registry.example.test/mirror/kube-scheduler:v1.33.1"
# Every optional part on, so every workload the chart can render is rendered.
EVERYTHING_ON: dict[str, Any] = {
    "image": {"repository": REPOSITORY, "tag": TAG},
    "scheduler": {
        "kubeSchedulerImage": SCHEDULER,
        "networkPolicy": {"enabled": True, "apiServer": [{"ipBlock": {"cidr": "10.0.0.0/28"}}]},
        "certManager": {"enabled": True},
        "apiAccess": "token",
        "forward": {"urls": {"bind": "https://bind.example.test/"}, "auth": "hmac", "hmacSecret": "s3cret"},
    },
    "agent": {
        "metricsReaders": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}]
    },
    "karpenter": {"nodeOverlay": {"enabled": True}},
    "prometheusRule": {"enabled": True},
    "dashboards": {"enabled": True},
}


def _render(values: dict[str, Any]) -> list[dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render(values, name="gp", namespace="gpupool-system")
    return [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]


def containers(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, container) for every container of every kind anywhere under `node`."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CONTAINER_KINDS and isinstance(value, list):
                for item in value:
                    yield f"{path}.{key}[{item.get('name')}]", item
            else:
                yield from containers(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from containers(item, f"{path}[{index}]")


def _images(values: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for doc in _render(values):
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        for place, container in containers(doc):
            found[where + place] = container.get("image", "<no image>")
    return found


def test_the_walk_finds_every_kind_of_container() -> None:
    """The walk itself: a pod spec nested anywhere, every container kind."""
    cron = {
        "kind": "CronJob",
        "spec": {
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "a", "image": "x"}],
                            "initContainers": [{"name": "b", "image": "y"}],
                            "ephemeralContainers": [{"name": "c", "image": "z"}],
                        }
                    }
                }
            }
        },
    }
    assert sorted(c["image"] for _, c in containers(cron)) == ["x", "y", "z"]


def test_every_image_of_every_object_is_from_values() -> None:
    images = _images(EVERYTHING_ON)
    assert any(".initContainers[guardian]" in where for where in images), sorted(images)
    ours = f"{REPOSITORY}:{TAG}"
    wrong = {where: image for where, image in images.items() if image not in (ours, SCHEDULER)}
    assert not wrong, f"images not from values: {wrong}"
    assert SCHEDULER in images.values() and ours in images.values()


@pytest.mark.parametrize(
    ("values", "where", "expected"),
    [
        ({"agent": {"image": "registry.example.test/agent:1"}}, "DaemonSet", "registry.example.test/agent:1"),
        (
            {"scheduler": {"relayImage": "registry.example.test/relay:2"}},
            "Deployment",
            "registry.example.test/relay:2",
        ),
    ],
)
def test_a_components_own_image_value_reaches_each_of_its_containers(
    values: dict[str, Any], where: str, expected: str
) -> None:
    """agent.image is every container of the agent's pod (the guardian too); scheduler.relayImage the
    relay's, kube-scheduler keeping its own."""
    merged = {
        **EVERYTHING_ON,
        **{key: {**EVERYTHING_ON.get(key, {}), **value} for key, value in values.items()},
    }
    images = {w: i for w, i in _images(merged).items() if w.startswith(where + "/")}
    assert images
    assert {i for i in images.values() if i != SCHEDULER} == {expected}, images


def test_with_default_values_every_image_is_the_charts_own_or_the_matching_kube_scheduler() -> None:
    app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    default = yaml.safe_load((CHART / "values.yaml").read_text())["image"]["repository"]
    for where, image in _images({}).items():
        assert image == f"{default}:{app_version}" or image.startswith(
            "registry.k8s.io/kube-scheduler:v1."
        ), (
            where,
            image,
        )
