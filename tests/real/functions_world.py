"""What the function stories on the real control plane share: the functions' environment against
the session's API server and a moto EC2, the real handlers called in-process, a "cloud → node"
joiner that turns running tagged instances into KWOK-managed Nodes, and a node agent that
publishes the GPUNode of a Node Karpenter made (`publish_gpu_node`: its status only; or
`run_node_agent`: what TensorFusion's operator and the agent's own `Publisher` write).

The functions are the deployed ones (`functions/<name>/app.py` through `make_handler`, built by
`build_aws_deps`, the wiring a Lambda uses); only the clock can be moved forward (the wiring's
own `clock=` seam), for the 5-minute protection compaction honours.

Must not: decide anything the functions decide, or write a GPUNodeClaim.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3

from gpupool.adapters.aws.wiring import build_aws_deps
from gpupool.cli.commands.invoke import LocalContext, call_handler, load_function, load_handler
from gpupool.core.catalog import load_catalog
from gpupool.core.model.constants import LABEL_MANAGED_BY, pool_label
from gpupool.sandbox.cluster.controlplane import KWOK_NODE_ANNOTATION, KWOK_NODE_VALUE, ControlPlane
from gpupool.sandbox.demo.clouds import create_demo_network, ec2_instances
from gpupool.sandbox.demo.objects import ClientObjects
from gpupool.sandbox.moto_ec2 import MotoEC2
from gpupool.simulation.cluster.json_store import JsonStore
from gpupool.simulation.cluster.kubelet import Kubelet, NodeRegistration
from tests.real import waiting

REPO = Path(__file__).resolve().parents[2]
SCHEDULE_EVENT: dict[str, Any] = {
    "version": "0",
    "id": "real-plane-tick",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-11-29T16:00:00Z",
    "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/gpupool-reconcile"],
    "detail": {},
}
KWOK_ANNOTATIONS = {KWOK_NODE_ANNOTATION: KWOK_NODE_VALUE}


wait_for = waiting.wait_for


@dataclass
class MovableClock:
    """The wall clock, moved forward by `ahead` (the functions' Clock port)."""

    ahead: timedelta = field(default_factory=timedelta)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.ahead


@dataclass
class FunctionsWorld:
    """The functions of one TensorFusionCluster against the real API server and moto's EC2."""

    plane: ControlPlane
    ec2_url: str
    cluster: str
    clock: MovableClock = field(default_factory=MovableClock)

    @property
    def env(self) -> dict[str, str]:
        return {
            "KUBECONFIG": str(self.plane.kubeconfig),
            "AWS_ENDPOINT_URL": self.ec2_url,
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "GPUPOOL_CLUSTER_NAME": self.cluster,
        }

    def ec2(self) -> Any:
        return boto3.client(
            "ec2",
            region_name="us-east-1",
            endpoint_url=self.ec2_url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def invoke(self, function: str, event: dict[str, Any] | None = None) -> dict[str, Any]:
        """The deployed handler of `function` on `event` (default: the schedule tick)."""
        env = self.env
        handler = load_handler(
            load_function(function),
            lambda: build_aws_deps(env, clock=self.clock),
            environ=env,
        )
        body = call_handler(handler, event or SCHEDULE_EVENT)
        assert body.get("status") != "retry" and not body.get("errors"), body
        return body

    def http(self, function: str, headers: Mapping[str, str], body: bytes) -> tuple[int, str]:
        """The deployed handler of `function` on one POST as its Lambda Function URL passes it
        (payload format 2.0, `authType: NONE`: the handler checks the relay's HMAC itself); the
        HTTP status and body it answered."""
        env = self.env
        handler = load_handler(
            load_function(function),
            lambda: build_aws_deps(env, clock=self.clock),
            environ=env,
        )
        event = {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": "/",
            "rawQueryString": "",
            "headers": {name.lower(): value for name, value in headers.items()},
            "requestContext": {
                "accountId": "anonymous",
                "http": {"method": "POST", "path": "/", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
                "requestId": f"url-{uuid.uuid4().hex[:12]}",
                "routeKey": "$default",
                "stage": "$default",
                "timeEpoch": int(time.time() * 1000),
            },
            "body": body.decode("utf-8", "replace"),
            "isBase64Encoded": False,
        }
        response = handler(event, LocalContext())
        if not isinstance(response, Mapping):
            return 500, ""
        return int(response.get("statusCode", 500)), str(response.get("body") or "")

    def custom(self, plural: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.plane.request("GET", f"/apis/tensor-fusion.ai/v1/{plural}")[
            "items"
        ]
        return items

    def claims(self, pool: str) -> list[dict[str, Any]]:
        return [
            c for c in self.custom("gpunodeclaims") if c["metadata"]["labels"].get(LABEL_MANAGED_BY) == pool
        ]

    def phases(self, pool: str) -> dict[str, str]:
        return {c["metadata"]["name"]: (c.get("status") or {}).get("phase", "") for c in self.claims(pool)}

    def live_instances(self) -> list[Any]:
        return [
            i
            for i in ec2_instances(self.ec2(), region="us-east-1")
            if i.state not in ("shutting-down", "terminated")
        ]

    def store(self) -> JsonStore:
        from kubernetes import config

        client = config.new_client_from_config(config_file=str(self.plane.kubeconfig))  # type: ignore[no-untyped-call]
        return JsonStore(ClientObjects(client))


@contextlib.contextmanager
def function_url(world: FunctionsWorld, function: str, *, lock: threading.Lock) -> Iterator[str]:
    """`function`'s Function URL on 127.0.0.1 (yielded): each POST — the relay's signed
    delivery — goes to the deployed handler (`FunctionsWorld.http`), one at a time under `lock`
    (the caller's schedule ticks take it too: the pool's Lease serialises a pool's invocations on
    AWS, where a second one finds it held and is retried); the handler's status and body are the
    answer.
    Simpler than Lambda: no IAM auth, no concurrency, no payload limit."""

    class Front(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the handler logs each delivery."""

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                status, answer = world.http(function, dict(self.headers.items()), body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.encode())))
            self.end_headers()
            self.wfile.write(answer.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Front)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def user_data_node_labels(ec2: Any, instance_id: str) -> dict[str, str]:
    """The `--node-labels` the instance's userData gives its kubelet (nodeadm's NodeConfig)."""
    import base64

    attribute = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    encoded = (attribute.get("UserData") or {}).get("Value") or ""
    text = base64.b64decode(encoded).decode() if encoded else ""
    labels: dict[str, str] = {}
    for line in text.splitlines():
        flag = line.strip().lstrip("- ").strip()
        if flag.startswith("--node-labels="):
            for pair in flag.removeprefix("--node-labels=").split(","):
                key, _, value = pair.partition("=")
                labels[key] = value
    return labels


@dataclass
class CloudToNode:
    """For each running instance gpupool tagged with a claim, the Node its kubelet would register —
    the labels its userData gives, annotated for KWOK so the real node lifecycle (Ready, heartbeat
    Lease) runs — with the GPUNode its node agent publishes; the Node of an instance that is gone
    is removed, as the cloud controller manager does."""

    world: FunctionsWorld
    joined: dict[str, str] = field(default_factory=dict)  # instance id → node name

    def _kubelet(self) -> Kubelet:
        return Kubelet(self.world.store(), catalog=load_catalog("aws"), clock=self.world.clock)

    def step(self) -> list[str]:
        kubelet = self._kubelet()
        ec2 = self.world.ec2()
        live = {i.instance_id: i for i in self.world.live_instances()}
        changed = []
        for instance in live.values():
            if instance.state != "running" or not instance.claim_name or instance.instance_id in self.joined:
                continue
            labels = user_data_node_labels(ec2, instance.instance_id)
            pool = None
            for found in self.world.custom("gpunodeclaims"):
                if found["metadata"]["name"] == instance.claim_name:
                    pool = found["metadata"]["labels"].get(LABEL_MANAGED_BY)
            kubelet.register(
                NodeRegistration(
                    name=instance.private_dns,
                    instance_type=instance.instance_type,
                    zone=instance.zone,
                    region="us-east-1",
                    provider_id=f"aws:///{instance.zone}/{instance.instance_id}",
                    instance_id=instance.instance_id,
                    claim=instance.claim_name,
                    pool=pool,
                    labels=labels,
                    annotations=KWOK_ANNOTATIONS,
                )
            )
            self.joined[instance.instance_id] = instance.private_dns
            changed.append(instance.private_dns)
        for instance_id, node in list(self.joined.items()):
            if instance_id not in live:
                kubelet.deregister(node)
                del self.joined[instance_id]
                changed.append(node)
        return changed

    def report_usage(self, node: str, free: Decimal) -> None:
        """The node agent's book-keeping: every GPU of `node` has `free` of itself free."""
        kubelet = self._kubelet()
        spec = load_catalog("aws").instance_type(self.node_type(node))
        kubelet.report_usage(node, [free] * (spec.gpu_count if spec else 1))

    def node_type(self, node: str) -> str:
        found = self.world.plane.request("GET", f"/api/v1/nodes/{node}")
        return str(found["metadata"]["labels"]["node.kubernetes.io/instance-type"])


def publish_gpu_node(world: FunctionsWorld, node: dict[str, Any], *, pool: str) -> None:
    """What TensorFusion's node agent publishes once it runs on `node`: its GPUNode, Running, with
    the catalog's TFLOPS and VRAM for the node's instance type (no GPU objects: the functions read
    a node's GPUs from its GPUNode)."""
    from fractions import Fraction

    from gpupool.core.model.base import ObjectMeta
    from gpupool.core.model.node import GPUNode, GPUNodeSpec, GPUNodeStatus
    from gpupool.core.quantity import Quantity

    name = node["metadata"]["name"]
    spec = load_catalog("aws").instance_type(node["metadata"]["labels"]["node.kubernetes.io/instance-type"])
    assert spec is not None
    tflops = Quantity.from_number(Fraction(spec.tflops))
    vram = Quantity.from_number(Fraction(spec.vram_gib) * 2**30, binary=True)
    world.store().create(
        GPUNode(
            metadata=ObjectMeta(name=name, labels={pool_label(pool): "true"}),
            spec=GPUNodeSpec(manage_mode="Provisioned"),
            status=GPUNodeStatus(
                phase="Running",
                total_tflops=tflops,
                total_vram=vram,
                available_tflops=tflops,
                available_vram=vram,
                total_gpus=spec.gpu_count,
                managed_gpus=spec.gpu_count,
            ),
        )
    )


def run_node_agent(plane: ControlPlane, node: dict[str, Any], *, pool: str, nvml_file: Path) -> list[str]:
    """What TensorFusion's operator and node agent do once `node` runs, with no agent process: the
    GPUNode labelled with the pool whose nodeSelector selects the node (the operator's part), then
    the agent's own `Publisher` over a fake NVML listing the GPUs the catalog gives the node's
    instance type (model, count, memory), which writes the GPU objects and the GPUNode status.
    Returns the GPU objects' names."""
    with NodeAgents(plane, pool=pool, root=nvml_file.parent) as agents:
        return agents.start(node, nvml_file=nvml_file)


class NodeAgents:
    """The node agent's discovery on each node it was started on, with no agent process: `start`
    is `run_node_agent`; each `round` then does what the agent's slow loop does before enforcing —
    its node's workers read from the node's pods by the agent's own `worker_from_pod` (the relay's
    allocation record), published by the same `Publisher`, so the GPU objects' and the GPUNode's
    available capacity follow the pods placed, as on a cluster. Simpler than the agent: no
    enforcement, no device plugin, rounds when the caller calls."""

    def __init__(self, plane: ControlPlane, *, pool: str, root: Path) -> None:
        from kubernetes import config

        from gpupool_incluster.agent.kube import KubeAgentCluster

        self.plane, self.pool, self.root = plane, pool, root
        self.api = config.new_client_from_config(config_file=str(plane.kubeconfig))  # type: ignore[no-untyped-call]
        self.cluster = KubeAgentCluster(self.api)
        self.publishers: dict[str, Any] = {}
        self.started: list[str] = []  # every node started, gone or not (for the clean-up)

    def __enter__(self) -> NodeAgents:
        return self

    def __exit__(self, *_: object) -> None:
        self.api.close()

    def start(self, node: dict[str, Any], *, nvml_file: Path | None = None) -> list[str]:
        import json
        import uuid

        from gpupool_incluster.agent.discovery import gpu_object_name
        from gpupool_incluster.agent.nvml_fake import FakeNvml
        from gpupool_incluster.agent.publish import Publisher

        name = node["metadata"]["name"]
        kind = node["metadata"]["labels"]["node.kubernetes.io/instance-type"]
        spec = load_catalog("aws").instance_type(kind)
        assert spec is not None
        gpu_node = {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUNode",
            "metadata": {"name": name, "labels": {pool_label(self.pool): "true"}},
            "spec": {"manageMode": "AutoSelect"},
        }
        self.plane.request("POST", "/apis/tensor-fusion.ai/v1/gpunodes", gpu_node)
        uuids = [f"GPU-{uuid.uuid4()}" for _ in range(spec.gpu_count)]
        devices = [
            {
                "uuid": u,
                "name": f"NVIDIA {spec.gpu_model}",
                "memoryBytes": spec.vram_gib * 2**30,
                "numaNode": 0,
            }
            for u in uuids
        ]
        nvml_file = nvml_file or self.root / f"{name}-nvml.json"
        nvml_file.write_text(json.dumps({"driverVersion": "550.54.15", "gpus": devices, "processes": []}))
        publisher = Publisher(name, FakeNvml(nvml_file), self.cluster)
        publisher.publish([], datetime.now(UTC))
        self.publishers[name] = publisher
        self.started.append(name)
        return [gpu_object_name(u) for u in uuids]

    def round(self) -> None:
        """One discovery round on every started node that still exists."""
        from gpupool_incluster.agent.workers import worker_from_pod

        for name, publisher in list(self.publishers.items()):
            if not self.plane._exists(f"/api/v1/nodes/{name}"):
                del self.publishers[name]
                continue
            workers = [w for pod in self.cluster.node_pods(name) if (w := worker_from_pod(pod, name)[0])]
            publisher.publish(workers, datetime.now(UTC))


@contextlib.contextmanager
def functions_world(
    plane: ControlPlane, *, cluster: str, manifests: list[dict[str, Any]]
) -> Iterator[FunctionsWorld]:
    """moto's EC2 with the demo's tagged network, `manifests` applied, the world yielded; moto
    stopped after."""
    with MotoEC2() as moto:
        world = FunctionsWorld(plane, moto.url, cluster)
        create_demo_network(world.ec2())
        for manifest in manifests:
            plural = {
                "TensorFusionCluster": "tensorfusionclusters",
                "GPUNodeClass": "gpunodeclasses",
                "GPUPool": "gpupools",
            }[manifest["kind"]]
            plane.apply(manifest, path=f"/apis/tensor-fusion.ai/v1/{plural}/{manifest['metadata']['name']}")
        yield world
