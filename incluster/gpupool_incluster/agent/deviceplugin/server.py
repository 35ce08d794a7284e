"""Serve the v1beta1 device-plugin API for the 16 index resources and register them with the kubelet.

Role: one gRPC server per resource `tensor-fusion.ai/index_<hex>` on its own unix socket in the
kubelet's device-plugins directory (the API registers one resource per endpoint), each advertising
`devices_per_resource` virtual devices — Healthy while the node has a usable GPU, Unhealthy
otherwise, re-sent on every change through ListAndWatch. Allocate answers with `allocate`'s grant;
a refusal becomes FAILED_PRECONDITION with the reason, which the kubelet reports on the pod.
GetPreferredAllocation prefers the must-include devices, then the lowest IDs. The gRPC method
handlers are written here (typed) over the generated messages.

Must not: decide which pod gets which GPUs (the scheduler did; `allocate` reads its annotation).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from functools import partial
from pathlib import Path
from typing import Any

import grpc

from gpupool.core.model.constants import index_resource
from gpupool.core.model.foreign import Pod
from gpupool_incluster.agent.deviceplugin import api_pb2 as pb
from gpupool_incluster.agent.deviceplugin.allocate import AllocationRefused, resolve_grant

__all__ = ["API_VERSION", "DEFAULT_SOCKET_DIR", "DevicePlugins", "IndexPlugin"]

log = logging.getLogger("gpupool.agent")
API_VERSION = "v1beta1"
DEFAULT_SOCKET_DIR = Path("/var/lib/kubelet/device-plugins")
KUBELET_SOCKET = "kubelet.sock"  # the kubelet's Registration service, in the same directory
HEALTHY, UNHEALTHY = "Healthy", "Unhealthy"


class DevicePlugins:
    """The 16 index plugins, the pods and GPU directory they read, and what they allocated."""

    def __init__(
        self,
        *,
        socket_dir: Path,
        node: str,
        pods: Callable[[], Sequence[Pod]],
        gpus: Callable[[], Mapping[str, str]],
        devices_per_resource: int = 256,
    ) -> None:
        self.socket_dir = socket_dir
        self.node = node
        self.pods = pods
        self.gpus = gpus
        self.allocated: set[str] = set()
        self.lock = threading.Lock()
        self.changed = threading.Condition()
        self.healthy = True
        self.stopping = False
        self.plugins = [IndexPlugin(self, index, devices_per_resource) for index in range(16)]

    def start(self) -> None:
        for plugin in self.plugins:
            plugin.start()

    def register(self, kubelet_socket: Path | None = None) -> None:
        target = kubelet_socket or self.socket_dir / KUBELET_SOCKET
        with grpc.insecure_channel(f"unix://{target}") as channel:
            register = channel.unary_unary(
                "/v1beta1.Registration/Register",
                request_serializer=pb.RegisterRequest.SerializeToString,
                response_deserializer=pb.Empty.FromString,
            )
            for plugin in self.plugins:
                options = pb.DevicePluginOptions(get_preferred_allocation_available=True)
                request = pb.RegisterRequest(
                    version=API_VERSION,
                    endpoint=plugin.endpoint,
                    resource_name=plugin.resource,
                    options=options,
                )
                register(request, timeout=10)
                log.info("registered %s with the kubelet", plugin.resource, extra={"action": "register"})

    def _kubelet_identity(self) -> tuple[int, int] | None:
        try:
            stat = (self.socket_dir / KUBELET_SOCKET).stat()
        except OSError:
            return None
        return stat.st_ino, stat.st_ctime_ns

    def keep_registered(
        self, stop: threading.Event, interval_s: float = 2.0, registered_now: bool = True
    ) -> None:
        """Until `stop`: when the kubelet restarts (its socket is recreated, which also wipes the
        plugins' sockets) or the first registration failed, serve again and re-register. Failures
        are logged and retried."""
        registered = self._kubelet_identity() if registered_now else None
        while not stop.wait(interval_s):
            current = self._kubelet_identity()
            sockets_gone = any(not p.socket_path.exists() for p in self.plugins)
            if current is None or (current == registered and not sockets_gone):
                continue
            log.info("kubelet restarted: serving and registering the device plugins again")
            try:
                for plugin in self.plugins:
                    plugin.stop()
                    plugin.start()
                self.register()
                registered = current
            except (grpc.RpcError, OSError, RuntimeError) as exc:
                log.warning(
                    "device plugin re-registration failed: %s", exc, extra={"action": "register-failed"}
                )

    def set_healthy(self, healthy: bool) -> None:
        with self.changed:
            if healthy != self.healthy:
                self.healthy = healthy
                self.changed.notify_all()

    def stop(self) -> None:
        with self.changed:
            self.stopping = True
            self.changed.notify_all()
        for plugin in self.plugins:
            plugin.stop()


class IndexPlugin:
    """The DevicePlugin service for one index resource."""

    def __init__(self, owner: DevicePlugins, index: int, devices: int) -> None:
        self.owner = owner
        self.resource = index_resource(index)
        self.endpoint = f"gpupool-index_{index:x}.sock"
        self.device_ids = [f"index_{index:x}-{n:03d}" for n in range(devices)]
        self._server: Any = None

    @property
    def socket_path(self) -> Path:
        return self.owner.socket_dir / self.endpoint

    def start(self) -> None:
        self.socket_path.unlink(missing_ok=True)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix=self.endpoint))
        handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
            "GetDevicePluginOptions": grpc.unary_unary_rpc_method_handler(
                self.options, pb.Empty.FromString, pb.DevicePluginOptions.SerializeToString
            ),
            "ListAndWatch": grpc.unary_stream_rpc_method_handler(
                self.list_and_watch, pb.Empty.FromString, pb.ListAndWatchResponse.SerializeToString
            ),
            "GetPreferredAllocation": grpc.unary_unary_rpc_method_handler(
                self.preferred,
                pb.PreferredAllocationRequest.FromString,
                pb.PreferredAllocationResponse.SerializeToString,
            ),
            "Allocate": grpc.unary_unary_rpc_method_handler(
                self.allocate, pb.AllocateRequest.FromString, pb.AllocateResponse.SerializeToString
            ),
            "PreStartContainer": grpc.unary_unary_rpc_method_handler(
                self.pre_start,
                pb.PreStartContainerRequest.FromString,
                pb.PreStartContainerResponse.SerializeToString,
            ),
        }
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("v1beta1.DevicePlugin", handlers),)
        )
        server.add_insecure_port(f"unix://{self.socket_path}")
        server.start()
        self._server = server

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=1).wait(2)
            self._server = None
        self.socket_path.unlink(missing_ok=True)

    # ---- the API ---------------------------------------------------------------------------
    def options(self, request: pb.Empty, context: Any) -> pb.DevicePluginOptions:
        return pb.DevicePluginOptions(get_preferred_allocation_available=True)

    def _devices(self) -> pb.ListAndWatchResponse:
        health = HEALTHY if self.owner.healthy else UNHEALTHY
        return pb.ListAndWatchResponse(devices=[pb.Device(ID=i, health=health) for i in self.device_ids])

    def list_and_watch(self, request: pb.Empty, context: Any) -> Iterator[pb.ListAndWatchResponse]:
        owner = self.owner
        with owner.changed:
            seen = owner.healthy
        yield self._devices()
        while context.is_active():
            with owner.changed:
                owner.changed.wait_for(partial(_changed, owner, seen), timeout=1.0)
                if owner.stopping:
                    return
                if owner.healthy == seen:
                    continue
                seen = owner.healthy
            yield self._devices()

    def preferred(
        self, request: pb.PreferredAllocationRequest, context: Any
    ) -> pb.PreferredAllocationResponse:
        answers = []
        for container in request.container_requests:
            chosen = list(container.must_include_deviceIDs)
            for device in sorted(container.available_deviceIDs):
                if len(chosen) >= container.allocation_size:
                    break
                if device not in chosen:
                    chosen.append(device)
            answers.append(pb.ContainerPreferredAllocationResponse(deviceIDs=chosen))
        return pb.PreferredAllocationResponse(container_responses=answers)

    def allocate(self, request: pb.AllocateRequest, context: Any) -> pb.AllocateResponse:
        owner = self.owner
        responses = []
        with owner.lock:
            pods, gpus = list(owner.pods()), dict(owner.gpus())
            granted: list[str] = []
            for container in request.container_requests:
                try:
                    grant = resolve_grant(
                        resource=self.resource,
                        device_count=len(container.devices_ids),
                        pods=pods,
                        already_allocated=owner.allocated | set(granted),
                        uuid_by_gpu=gpus,
                        node=owner.node,
                    )
                except AllocationRefused as refused:
                    log.warning("Allocate refused: %s", refused, extra={"action": "allocate-refused"})
                    context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(refused))
                    raise  # abort raises; this keeps the type checker aware
                granted.append(grant.pod_uid)
                log.info(
                    "Allocate: %s gets %s",
                    grant.pod,
                    grant.envs["NVIDIA_VISIBLE_DEVICES"],
                    extra={"action": "allocate", "pod": grant.pod},
                )
                responses.append(pb.ContainerAllocateResponse(envs=grant.envs))
            owner.allocated.update(granted)
        return pb.AllocateResponse(container_responses=responses)

    def pre_start(self, request: pb.PreStartContainerRequest, context: Any) -> pb.PreStartContainerResponse:
        return pb.PreStartContainerResponse()


def _changed(owner: DevicePlugins, seen: bool) -> bool:
    return owner.stopping or owner.healthy != seen
