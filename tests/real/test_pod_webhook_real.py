"""The real kube-apiserver calling the relay's pod webhook over TLS (issue 31, story 2).

`gpupool relay serve` runs as a process on loopback with a serving certificate signed by a CA of the
test's own; the chart's MutatingWebhookConfiguration is registered with `clientConfig.url` pointing
at it and that CA as `caBundle`, narrowed to the test's namespace. Covers: a TensorFusion pod
created through the API server comes back mutated as docs/scheduling.md says (schedulerName
`tensor-fusion-scheduler`, the index resource, the default pool, limits from requests, qos); a pod without the
label is never sent; the tenant attacks of docs/security.md ("The pod webhook") are refused by the
API server because the webhook refused them; a webhook whose certificate the `caBundle` does not
vouch for is never trusted; and with the relay down a TensorFusion pod is refused, not admitted
unmutated (`failurePolicy: Fail`).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.real.relay_process import (
    RelayProcess,
    ServingPair,
    call,
    chart_pod_webhook,
    serving_pair,
    wait_for,
)

T = "tensor-fusion.ai/"
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


class Story:
    def __init__(self, plane: ControlPlane, relay: RelayProcess, pair: ServingPair, namespace: str) -> None:
        self.plane, self.relay, self.pair, self.namespace = plane, relay, pair, namespace
        self.webhook_name = f"gpupool-test-{namespace}"

    @property
    def pods(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    def create(self, pod: dict[str, Any], *, dry_run: bool = False) -> tuple[int, Any]:
        return call(self.plane, "POST", self.pods + ("?dryRun=All" if dry_run else ""), pod)


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
def story(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    plane = control_plane
    root: Path = tmp_path_factory.mktemp("pod-webhook")
    namespace = f"tenant-{uuid.uuid4().hex[:6]}"
    pair = serving_pair(root / "tls")
    plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    # Pods are admitted once the namespace's `default` ServiceAccount exists (the controller-manager
    # makes it; applying it too means no wait for that).
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": namespace},
    }
    plane.apply(account, path=f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
    pool = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": {"name": f"pool-{namespace}", "annotations": {T + "is-default-pool": "true"}},
        "spec": {},
    }
    plane.request("POST", "/apis/tensor-fusion.ai/v1/gpupools", pool)
    relay = RelayProcess(root, plane.kubeconfig, tls=pair, args=["--default-pool", pool["metadata"]["name"]])
    webhook = chart_pod_webhook(
        relay.webhook_url, pair.ca_pem, name=f"gpupool-test-{namespace}", namespace=namespace
    )
    try:
        relay.start()
        plane.request("POST", WEBHOOKS, webhook)
        result = Story(plane, relay, pair, namespace)
        # The API server loads a new webhook configuration through its informer: wait until it calls it.
        wait_for(
            "the API server to call the webhook",
            lambda: (
                (answer := result.create(tf_pod("probe"), dry_run=True))[0] == 201
                and answer[1]["spec"].get("schedulerName") == "tensor-fusion-scheduler"
            ),
            timeout=30,
        )
        yield result
    finally:
        relay.stop()
        call(plane, "DELETE", f"{WEBHOOKS}/{webhook['metadata']['name']}")
        call(plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpupools/{pool['metadata']['name']}")
        call(plane, "DELETE", f"/api/v1/namespaces/{namespace}")


def test_a_tensorfusion_pod_is_mutated_by_the_webhook_the_api_server_called(story: Story) -> None:
    status, pod = story.create(tf_pod("worker"))
    assert status == 201, pod
    spec, notes = pod["spec"], pod["metadata"]["annotations"]
    assert spec["schedulerName"] == "tensor-fusion-scheduler"
    assert spec["containers"][0]["resources"]["limits"][T + "index_0"] == "1"
    assert notes[T + "gpupool"] == f"pool-{story.namespace}"  # the default pool the relay watched
    assert (notes[T + "tflops-limit"], notes[T + "vram-limit"]) == ("10", "4Gi")  # limits default to requests
    assert notes[T + "qos"] == "high"  # request == limit
    assert notes[T + "isolation"] == "soft"
    status, burstable = story.create(tf_pod("burstable", {T + "tflops-limit": "20"}))
    assert status == 201, burstable
    assert burstable["metadata"]["annotations"][T + "qos"] == "medium"  # request < limit, no pool default
    stored = story.plane.request("GET", f"{story.pods}/worker")
    assert stored["spec"]["schedulerName"] == "tensor-fusion-scheduler"  # what was stored, not only returned


def test_a_pod_without_the_label_is_not_sent_to_the_webhook(story: Story) -> None:
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
    story: Story, attack: str
) -> None:
    pod, topic = ATTACKS[attack]
    status, answer = story.create(pod)
    assert status in (400, 403), answer
    message = answer["message"]
    assert 'admission webhook "pods.gpupool.tensor-fusion.ai" denied the request' in message, message
    assert topic.lower() in message.lower(), message
    assert call(story.plane, "GET", f"{story.pods}/{pod['metadata']['name']}")[0] == 404


def test_a_webhook_the_ca_bundle_does_not_vouch_for_is_never_trusted(story: Story, tmp_path: Path) -> None:
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


def test_with_the_relay_down_a_tensorfusion_pod_is_refused_not_admitted_unmutated(story: Story) -> None:
    story.relay.stop()
    status, answer = story.create(tf_pod("while-down"))
    assert status >= 500, answer
    assert "failed calling webhook" in answer["message"], answer
    plain = tf_pod("plain-while-down")
    plain["metadata"]["labels"] = {}
    assert story.create(plain)[0] == 201  # only TensorFusion pods depend on the relay
