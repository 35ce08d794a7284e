"""`gpupool agent run`: build the agent from its options and run it until SIGTERM or SIGINT.

Role: choose the NVML adapter (`real`, or `fake:FILE`), build the Kubernetes client (a kubeconfig,
or the pod's service account), start the device plugin (unless disabled) and the metrics
endpoint — by default (`metrics_auth="token"`) only for bearer tokens a TokenReview authenticates
(for `metrics_audiences`, or the API server's own when None) and a SubjectAccessReview allows
`get /metrics`, answers cached `METRICS_REVIEW_TTL_S` — run the loops, and on SIGTERM / SIGINT
stop them, which resumes every stopped process.

Must not: parse command-line text (the CLI module does) or hold any decision.
"""

from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from gpupool_incluster.agent.nvml import Nvml, NvmlError
from gpupool_incluster.agent.procs import CgroupLocator
from gpupool_incluster.agent.runner import Agent, AgentOptions

__all__ = [
    "METRICS_AUTH_MODES",
    "METRICS_REVIEW_TTL_S",
    "ServeOptions",
    "StartupError",
    "build_nvml",
    "serve",
]

log = logging.getLogger("gpupool.agent")
METRICS_AUTH_MODES = ("token", "none")
# How long a scraper's reviewed token is trusted: the kubelet caches authentication answers 2 min.
METRICS_REVIEW_TTL_S = 120.0


class StartupError(Exception):
    """The agent cannot start: no NVML, no cluster credentials. The message says which."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    agent: AgentOptions
    nvml: str = "real"  # "real" or "fake:FILE"
    kubeconfig: str | None = None
    proc_root: Path = Path("/proc")
    metrics_host: str = "0.0.0.0"
    metrics_port: int | None = 9400
    metrics_auth: str = "token"  # "token" (TokenReview + SubjectAccessReview) or "none"
    metrics_audiences: tuple[str, ...] | None = None  # None: tokens for the API server (Prometheus's own)
    device_plugin_dir: Path | None = None  # None: no device plugin


def build_nvml(spec: str) -> Nvml:
    """The NVML adapter a `--nvml` value names (raises NvmlError when it cannot start)."""
    if spec.startswith("fake:"):
        from gpupool_incluster.agent.nvml_fake import FakeNvml

        return FakeNvml(Path(spec.removeprefix("fake:")))
    from gpupool_incluster.agent.nvml_real import RealNvml

    return RealNvml()


def _api_client(kubeconfig: str | None) -> Any:
    import kubernetes

    client: Any = kubernetes.client
    config: Any = kubernetes.config
    try:
        if kubeconfig is None:
            config.load_incluster_config()
            return client.ApiClient()
        return config.new_client_from_config(config_file=kubeconfig)
    except config.ConfigException as exc:
        where = kubeconfig or "the in-cluster service account (pass --kubeconfig outside a pod)"
        raise StartupError(f"cannot reach the cluster with {where}: {exc}") from None


def serve(options: ServeOptions) -> None:
    """Block running the agent until SIGTERM / SIGINT."""
    from gpupool_incluster.agent.kube import KubeAgentCluster

    try:
        nvml = build_nvml(options.nvml)
    except NvmlError as exc:
        raise StartupError(str(exc)) from None
    if options.metrics_auth not in METRICS_AUTH_MODES:
        raise StartupError(
            f"metrics auth {options.metrics_auth!r} is not one of {', '.join(METRICS_AUTH_MODES)}"
        )
    api = _api_client(options.kubeconfig)
    cluster = KubeAgentCluster(api)
    agent = Agent(options.agent, nvml=nvml, cluster=cluster, locator=CgroupLocator(options.proc_root))
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        log.info("signal %s: resuming every throttled process and exiting", signum)
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if options.metrics_port is not None:
        try:
            access = None
            if options.metrics_auth == "token":
                from gpupool.adapters.kube.token_access import TokenAccess

                access = TokenAccess(api, audiences=options.metrics_audiences, ttl=METRICS_REVIEW_TTL_S)
            agent.metrics.serve(options.metrics_host, options.metrics_port, access=access)
        except OSError as exc:
            agent.close()
            raise StartupError(
                f"cannot serve /metrics on {options.metrics_host}:{options.metrics_port}: {exc}"
            ) from None
    try:
        agent.run_slow_once()  # discover before the device plugin answers Allocate
    except Exception as exc:  # the loop retries; the plugin refuses until the GPUs are known
        log.error("first discovery failed: %s", exc, extra={"action": "discovery-failed"})
    plugins = None
    if options.device_plugin_dir is not None:
        import grpc

        from gpupool_incluster.agent.deviceplugin.server import DevicePlugins

        node = options.agent.node
        plugins = DevicePlugins(
            socket_dir=options.device_plugin_dir,
            node=node,
            pods=lambda: cluster.node_pods(node),
            gpus=agent.publisher.usable_gpus,
        )
        agent.on_discovery.append(lambda usable: plugins.set_healthy(bool(usable)))
        plugins.start()
        registered = True
        try:
            plugins.register()
        except grpc.RpcError as exc:  # the kubelet is not up yet: keep_registered retries
            log.warning(
                "device plugin registration failed, will retry: %s", exc, extra={"action": "register-failed"}
            )
            registered = False
        threading.Thread(
            target=plugins.keep_registered,
            args=(stop, 2.0, registered),
            name="gpupool-device-plugin-registration",
            daemon=True,
        ).start()
    try:
        agent.run(stop)
    finally:
        if plugins is not None:
            plugins.stop()
