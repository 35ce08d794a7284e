"""`EmbeddedKubeAPI`: start the in-memory Kubernetes API server on 127.0.0.1 and stop it.

    with EmbeddedKubeAPI() as api:          # or EmbeddedKubeAPI(clock=ManualClock(...))
        api.url, api.kubeconfig_path        # http://127.0.0.1:PORT, a kubeconfig file for it
        api.clock.advance(60)               # when a ManualClock was passed
        api.cluster                         # in-process access (tests, simulations)

At start it installs gpupool's tensor-fusion.ai CRDs (from `gpupool.core.model.crd`,
when that generator exists), Karpenter's CRDs, and any `extra_crds`.

Must not: reach the network beyond 127.0.0.1 or keep state on disk (the kubeconfig aside).
"""

from __future__ import annotations

import copy
import functools
import importlib
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml

from gpupool.sandbox.crds import karpenter_crds
from gpupool.sandbox.kubeapi.clock import Clock, SystemClock
from gpupool.sandbox.kubeapi.handler import KubeHTTPServer
from gpupool.sandbox.kubeapi.operations import ApiOperations

JsonObject = dict[str, Any]
CONTEXT = "gpupool-sandbox"


def gpupool_crds() -> list[JsonObject]:
    """tensor-fusion.ai CRDs from the core's generator; empty until that generator exists."""
    return copy.deepcopy(_generated_crds())


@functools.cache
def _generated_crds() -> list[JsonObject]:
    """Generated once per process: the pydantic schema generation costs ~0.4 s per server."""
    try:
        module = importlib.import_module("gpupool.core.model.crd")
    except ImportError:
        return []
    generate: Callable[[], Iterable[JsonObject]] | None = getattr(module, "generate_crds", None)
    return list(generate()) if generate is not None else []


def kubeconfig(url: str, namespace: str = "default") -> JsonObject:
    """A kubeconfig for `url`: no credentials (the server binds to 127.0.0.1 only)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": url}}],
        "users": [{"name": CONTEXT, "user": {"token": "gpupool-sandbox"}}],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


class EmbeddedKubeAPI:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock | None = None,
        kubeconfig_path: Path | str | None = None,
        install_gpupool_crds: bool = True,
        install_karpenter_crds: bool = True,
        extra_crds: Iterable[JsonObject] = (),
        watch_history: int = 200_000,
        enforce_schemas: bool = True,
    ) -> None:
        """`watch_history`: how many recent changes a watch may resume from (older → 410).
        `enforce_schemas`: prune and validate custom resources against their CRD schemas."""
        self.clock: Clock = clock or SystemClock()
        self.cluster = ApiOperations(self.clock, watch_history=watch_history, enforce_schemas=enforce_schemas)
        self._address = (host, port)
        self._kubeconfig_path = Path(kubeconfig_path) if kubeconfig_path is not None else None
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._server: KubeHTTPServer | None = None
        self._thread: threading.Thread | None = None
        crds = (gpupool_crds() if install_gpupool_crds else []) + (
            karpenter_crds() if install_karpenter_crds else []
        )
        for crd in [*crds, *extra_crds]:
            self.cluster.install_crd(crd)

    # ----- lifecycle -----------------------------------------------------------------------
    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError("the embedded API server is already running")
        self._server = KubeHTTPServer(self._address, self.cluster)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="gpupool-kubeapi", daemon=True
        )
        self._thread.start()
        self.write_kubeconfig(self.kubeconfig_path)
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self.cluster.store.close()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ----- addresses -----------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the embedded API server is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._address[0]}:{self.port}"

    @property
    def kubeconfig_path(self) -> Path:
        if self._kubeconfig_path is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="gpupool-kubeapi-")
            self._kubeconfig_path = Path(self._tempdir.name) / "kubeconfig"
        return self._kubeconfig_path

    def write_kubeconfig(self, path: Path | str) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(kubeconfig(self.url), sort_keys=False))
        return target
