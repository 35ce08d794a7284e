"""The real kube-apiserver calling the relay's pod webhook over TLS (issue 31, story 2).

`gpupool relay serve` runs as a process on loopback with a serving certificate signed by a CA of the
test's own; the chart's MutatingWebhookConfiguration is registered with `clientConfig.url` pointing
at it and that CA as `caBundle`, narrowed to the test's namespace (`relay_process.pod_webhook_harness`).
Covers: a TensorFusion pod created through the API server comes back mutated as docs/scheduling.md
says (schedulerName `tensor-fusion-scheduler`, the index resource, the default pool, limits from
requests, qos); a pod without the label is never sent; the tenant attacks of docs/security.md ("The
pod webhook") are refused by the API server because the webhook refused them; a webhook whose
certificate the `caBundle` does not vouch for is never trusted; and with the relay down a
TensorFusion pod is refused, not admitted unmutated (`failurePolicy: Fail`).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.real.relay_process import (
    WEBHOOKS,
    WebhookHarness,
    call,
    pod_webhook_harness,
    serving_pair,
    wait_for,
)

T = "tensor-fusion.ai/"


def tf_pod(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {T + "enabled": "true"},
            "annotations": {T + "tflops-request": "10", T + "vram-request": "4Gi", **(annotations or {})},
        },
        "spec": {"containers": [{"name": "main", "image": "example.invalid/cuda:12"}], **spec},
    }


@pytest.fixture(scope="module")
def story(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookHarness]:
    with pod_webhook_harness(control_plane, tmp_path_factory.mktemp("pod-webhook")) as harness:
        yield harness


def test_a_tensorfusion_pod_is_mutated_by_the_webhook_the_api_server_called(story: WebhookHarness) -> None:
    status, pod = story.create(tf_pod("worker"))
    assert status == 201, pod
    spec, notes = pod["spec"], pod["metadata"]["annotations"]
    assert spec["schedulerName"] == "tensor-fusion-scheduler"
    assert spec["containers"][0]["resources"]["limits"][T + "index_0"] == "1"
    assert notes[T + "gpupool"] == story.pool  # the default pool the relay watched
    assert (notes[T + "tflops-limit"], notes[T + "vram-limit"]) == ("10", "4Gi")  # limits default to requests
    assert notes[T + "qos"] == "high"  # request == limit
    assert notes[T + "isolation"] == "soft"
    status, burstable = story.create(tf_pod("burstable", {T + "tflops-limit": "20"}))
    assert status == 201, burstable
    assert burstable["metadata"]["annotations"][T + "qos"] == "medium"  # request < limit, no pool default
    stored = story.plane.request("GET", f"{story.pods}/worker")
    assert stored["spec"]["schedulerName"] == "tensor-fusion-scheduler"  # what was stored, not only returned


def test_a_pod_without_the_label_is_not_sent_to_the_webhook(story: WebhookHarness) -> None:
    plain = tf_pod("plain")
    plain["metadata"]["labels"] = {}
    status, pod = story.create(plain)
    assert status == 201, pod
    assert pod["spec"]["schedulerName"] == "default-scheduler"
    assert "index_0" not in str(pod["spec"]["containers"][0].get("resources"))


ATTACKS = {
    "victim GPUs in gpu-ids with qos critical": (
        tf_pod("a1", {T + "gpu-ids": "gpu-a,gpu-b,gpu-c,gpu-d", T + "qos": "critical"}),
        "gpu-ids",
    ),
    "a forged allocation record": (
        tf_pod("a2", {"gpupool.io/allocation": '{"node":"victim"}'}),
        "allocation",
    ),
    "a preset spec.nodeName": (tf_pod("a3", nodeName="victim-node"), "nodeName"),
    "qos critical without the namespace's ceiling": (tf_pod("a4", {T + "qos": "critical"}), "critical"),
    "a shared worker without any VRAM request or limit": (
        tf_pod("a5")
        | {
            "metadata": {
                "name": "a5",
                "labels": {T + "enabled": "true"},
                "annotations": {T + "tflops-request": "10"},
            }
        },
        "vram",
    ),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_tenant_attack_is_refused_by_the_api_server_because_the_webhook_refused_it(
    story: WebhookHarness, attack: str
) -> None:
    pod, topic = ATTACKS[attack]
    status, answer = story.create(pod)
    assert status in (400, 403), answer
    message = answer["message"]
    assert 'admission webhook "pods.gpupool.tensor-fusion.ai" denied the request' in message, message
    assert topic.lower() in message.lower(), message
    assert call(story.plane, "GET", f"{story.pods}/{pod['metadata']['name']}")[0] == 404


def test_a_webhook_the_ca_bundle_does_not_vouch_for_is_never_trusted(
    story: WebhookHarness, tmp_path: Path
) -> None:
    stranger = serving_pair(tmp_path / "other-ca")
    path = f"{WEBHOOKS}/{story.webhook_name}"
    current = story.plane.request("GET", path)
    try:
        for hook in current["webhooks"]:
            hook["clientConfig"]["caBundle"] = base64.b64encode(stranger.ca_pem).decode()
        story.plane.request("PUT", path, current)
        refused = wait_for(
            "the API server to use the new caBundle",
            lambda: (answer := story.create(tf_pod("distrusted"), dry_run=True))[0] >= 500 and answer,
            timeout=30,
        )
        assert "failed calling webhook" in refused[1]["message"], refused
        assert "certificate" in refused[1]["message"], refused
    finally:
        current = story.plane.request("GET", path)
        for hook in current["webhooks"]:
            hook["clientConfig"]["caBundle"] = base64.b64encode(story.pair.ca_pem).decode()
        story.plane.request("PUT", path, current)
        wait_for(
            "the webhook to be trusted again",
            lambda: story.create(tf_pod("trusted"), dry_run=True)[0] == 201,
            timeout=30,
        )


def test_with_the_relay_down_a_tensorfusion_pod_is_refused_not_admitted_unmutated(
    story: WebhookHarness,
) -> None:
    story.relay.stop()
    status, answer = story.create(tf_pod("while-down"))
    assert status >= 500, answer
    assert "failed calling webhook" in answer["message"], answer
    plain = tf_pod("plain-while-down")
    plain["metadata"]["labels"] = {}
    assert story.create(plain)[0] == 201  # only TensorFusion pods depend on the relay
