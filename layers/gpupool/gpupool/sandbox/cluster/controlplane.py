"""The real control plane as processes on 127.0.0.1: start in order, wait until each answers, stop by PID.

Role: etcd → kube-apiserver (RBAC, admission webhooks and ValidatingAdmissionPolicy on, service-account
keys) → CRDs (gpupool's tensor-fusion.ai CRDs, Karpenter's and KWOKNodeClass from Karpenter's module) →
kube-controller-manager → kube-scheduler → KWOK (KWOK's own node and pod stages) → Karpenter's
controller with its KWOK provider (NodeOverlay on, instance types from gpupool's catalog). Each
process writes `<root>/logs/<name>.log` and `<root>/pids/<name>.pid`; `<root>/kubeconfig` is the
admin's. Everything listens on 127.0.0.1 only, on free ports picked at start — except Karpenter's
metrics and health probe, which its operator binds on every interface (`:PORT`; it has no bind-address
option): they get free ports too, and nothing else is served there.

A component that exits, or does not answer within its deadline, stops the start: everything already
started is stopped, and the error names the component and its log with the log's last line.

Must not: touch anything outside `root`, or leave a process running after `stop()` or a failed start.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpupool.sandbox.cluster.build import BuildError, assets_dir, binary
from gpupool.sandbox.cluster.pki import Pki, create_pki

# Karpenter's KWOK provider makes nodes with this annotation; KWOK manages only those, so nodes a
# test registers itself (a simulated kubelet, Provisioned mode's joins) can carry it too.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_VALUE = "fake"
REGION = "us-east-1"
COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "crds",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "karpenter",
)


class ControlPlaneError(Exception):
    """A component that could not start; one line naming it and its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except FileNotFoundError:
        return "(no log)"
    return lines[-1][:300] if lines else "(empty log)"


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[-1].split()[0] != "Z"
    return True


@dataclass(frozen=True)
class Ports:
    etcd: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int
    karpenter_metrics: int
    karpenter_health: int

    @classmethod
    def pick(cls) -> Ports:
        return cls(*(free_port() for _ in range(8)))


class ControlPlane:
    """One real control plane under `root`; `start()` then `stop()`, or use it as a context manager."""

    def __init__(
        self,
        root: Path,
        *,
        components: Sequence[str] = COMPONENTS,
        say: Callable[[str], None] = lambda line: None,
        ready_timeout: float = 60.0,
    ) -> None:
        unknown = [name for name in components if name not in COMPONENTS]
        if unknown:
            raise ControlPlaneError(f"unknown component {', '.join(unknown)}; known: {', '.join(COMPONENTS)}")
        self.root = root.resolve()
        self.components = tuple(name for name in COMPONENTS if name in components)
        self.say = say
        self.ready_timeout = ready_timeout
        self.ports = Ports.pick()
        self.pki = Pki(self.root / "pki")
        self._processes: dict[str, subprocess.Popen[bytes]] = {}

    # -- where things are -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    def log(self, name: str) -> Path:
        return self.root / "logs" / f"{name}.log"

    def _pid_file(self, name: str) -> Path:
        return self.root / "pids" / f"{name}.pid"

    @property
    def token(self) -> str:
        return self.pki.token("admin")

    def pids(self) -> dict[str, int]:
        return {name: process.pid for name, process in self._processes.items()}

    # -- start ------------------------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> None:
        for folder in ("logs", "pids", "kubeconfigs"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        try:
            create_pki(self.pki.root)
            for name in ("admin", "kube-controller-manager", "kube-scheduler", "kwok", "karpenter"):
                self._write_kubeconfig(name)
            steps: dict[str, Callable[[], None]] = {
                "etcd": self._start_etcd,
                "kube-apiserver": self._start_apiserver,
                "crds": self._apply_crds,
                "kube-controller-manager": self._start_controller_manager,
                "kube-scheduler": self._start_scheduler,
                "kwok": self._start_kwok,
                "karpenter": self._start_karpenter,
            }
            for name in self.components:
                step_started = time.monotonic()
                steps[name]()
                self.say(f"{name}: ready in {time.monotonic() - step_started:.1f} s")
        except BuildError as error:
            self.stop()
            raise ControlPlaneError(str(error)) from error
        except BaseException:
            self.stop()
            raise
        self._write_state()
        self.say(f"control plane ready in {time.monotonic() - started:.1f} s at {self.url}")

    def _write_state(self) -> None:
        state = {"url": self.url, "kubeconfig": str(self.kubeconfig), "pids": self.pids()}
        (self.root / "state.json").write_text(json.dumps(state, indent=2) + "\n")

    def _kubeconfig_for(self, identity: str) -> Path:
        return (
            self.kubeconfig if identity == "admin" else self.root / "kubeconfigs" / f"{identity}.kubeconfig"
        )

    def _write_kubeconfig(self, identity: str) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "gpupool-real",
                    "cluster": {"server": self.url, "certificate-authority": str(self.pki.ca_cert)},
                }
            ],
            "users": [{"name": identity, "user": {"token": self.pki.token(identity)}}],
            "contexts": [{"name": "gpupool-real", "context": {"cluster": "gpupool-real", "user": identity}}],
            "current-context": "gpupool-real",
        }
        path = self._kubeconfig_for(identity)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        os.chmod(path, 0o600)

    def _spawn(self, name: str, command: Sequence[str], *, env: dict[str, str] | None = None) -> None:
        log = self.log(name).open("ab")
        try:
            process = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C in the caller's terminal reaches stop(), not each child
                cwd=self.root,
                env={**os.environ, **(env or {})},
            )
        finally:
            log.close()
        self._processes[name] = process
        self._pid_file(name).write_text(f"{process.pid}\n")

    def _wait(self, name: str, ready: Callable[[], bool], *, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.ready_timeout)
        process = self._processes.get(name)
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise ControlPlaneError(
                    f"{name} exited with code {process.returncode} while starting — see {self.log(name)}: "
                    f"{_last_line(self.log(name))}"
                )
            if ready():
                return
            time.sleep(0.2)
        waited = timeout or self.ready_timeout
        raise ControlPlaneError(
            f"{name} did not become ready within {waited:.0f} s — see {self.log(name)}: "
            f"{_last_line(self.log(name))}"
        )

    def _ssl(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.pki.ca_cert))

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> Any:
        """One authenticated call to the API server as the admin; the decoded JSON answer."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type},
        )
        with urllib.request.urlopen(request, context=self._ssl(), timeout=30) as answer:
            payload = answer.read()
        return json.loads(payload) if payload else None

    def _answers(self, url: str, *, tls: bool = False, token: bool = False) -> bool:
        headers = {"Authorization": f"Bearer {self.token}"} if token else {}
        context: ssl.SSLContext | None = None
        if tls:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE  # a component's own self-signed health endpoint
        try:
            with urllib.request.urlopen(
                urllib.request.Request(url, headers=headers), context=context, timeout=2
            ):
                return True
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def _start_etcd(self) -> None:
        client = f"http://127.0.0.1:{self.ports.etcd}"
        peer = f"http://127.0.0.1:{self.ports.etcd_peer}"
        self._spawn(
            "etcd",
            [
                str(binary("etcd")),
                "--name=gpupool-real",
                f"--data-dir={self.root / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=gpupool-real={peer}",
                "--unsafe-no-fsync",  # a throw-away test store: durability is not the point, speed is
                "--log-level=warn",
            ],
        )
        self._wait("etcd", lambda: self._answers(f"{client}/health"))

    def _start_apiserver(self) -> None:
        pki = self.pki
        self._spawn(
            "kube-apiserver",
            [
                str(binary("kube-apiserver")),
                f"--etcd-servers=http://127.0.0.1:{self.ports.etcd}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.ports.apiserver}",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
                f"--token-auth-file={pki.tokens_file}",
                # Also publishes extension-apiserver-authentication, which every component's own
                # authentication reads at start.
                f"--client-ca-file={pki.ca_cert}",
                "--authorization-mode=RBAC",
                f"--service-account-issuer=https://127.0.0.1:{self.ports.apiserver}",
                f"--service-account-key-file={pki.service_account_public_key}",
                f"--service-account-signing-key-file={pki.service_account_key}",
                # Addresses for Services' ClusterIPs: allocated in etcd, never routed or dialled here.
                "--service-cluster-ip-range=10.96.0.0/16",
                "--allow-privileged=true",
                "--profiling=false",
                "--endpoint-reconciler-type=none",
            ],
        )
        self._wait("kube-apiserver", lambda: self._answers(f"{self.url}/readyz", tls=True, token=True))

    def kubectl(
        self, *args: str, input_text: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl as the admin against this control plane."""
        done = subprocess.run(
            [str(binary("kubectl")), f"--kubeconfig={self.kubeconfig}", *args],
            input=input_text,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)}: {done.stderr.strip()[:500]}")
        return done

    def apply(self, document: dict[str, Any], *, path: str) -> Any:
        """Server-side apply `document` at `path` (its object's URL) as the field manager `gpupool`."""
        return self.request(
            "PATCH",
            f"{path}?fieldManager=gpupool&force=true",
            json.dumps(document).encode(),
            content_type="application/apply-patch+yaml",
        )

    def _apply_crds(self) -> None:
        from gpupool.sandbox.cluster.crds import crd_documents

        base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        names = []
        for document in crd_documents():
            name = document["metadata"]["name"]
            self.apply(document, path=f"{base}/{name}")
            names.append(name)

        def established(name: str) -> bool:
            conditions = self.request("GET", f"{base}/{name}").get("status", {}).get("conditions") or []
            return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

        for name in names:
            self._wait("crds", lambda name=name: established(name))  # type: ignore[misc]

    def _start_controller_manager(self) -> None:
        self._spawn(
            "kube-controller-manager",
            [
                str(binary("kube-controller-manager")),
                f"--kubeconfig={self._kubeconfig_for('kube-controller-manager')}",
                f"--authentication-kubeconfig={self._kubeconfig_for('kube-controller-manager')}",
                f"--authorization-kubeconfig={self._kubeconfig_for('kube-controller-manager')}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports.controller_manager}",
                "--leader-elect=false",
                f"--service-account-private-key-file={self.pki.service_account_key}",
                f"--root-ca-file={self.pki.ca_cert}",
                "--use-service-account-credentials=true",
                # No cloud and no real kubelets: the controllers that need them stay off.
                "--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle,-persistentvolume-binder,"
                "-attachdetach,-persistentvolume-expander,-ephemeral-volume,-pv-protection,-pvc-protection",
            ],
        )
        url = f"https://127.0.0.1:{self.ports.controller_manager}/healthz"
        self._wait("kube-controller-manager", lambda: self._answers(url, tls=True))
        # The service-account controller's first act: pods are admitted once `default` exists.
        self._wait(
            "kube-controller-manager",
            lambda: self._exists("/api/v1/namespaces/default/serviceaccounts/default"),
        )

    def _exists(self, path: str) -> bool:
        try:
            self.request("GET", path)
        except urllib.error.HTTPError:
            return False
        except OSError:
            return False
        return True

    def _start_scheduler(self) -> None:
        config = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(self._kubeconfig_for("kube-scheduler"))},
            "leaderElection": {"leaderElect": False},
        }
        path = self.root / "kube-scheduler.yaml"
        path.write_text(yaml.safe_dump(config))
        self._spawn(
            "kube-scheduler",
            [
                str(binary("kube-scheduler")),
                f"--config={path}",
                f"--authentication-kubeconfig={self._kubeconfig_for('kube-scheduler')}",
                f"--authorization-kubeconfig={self._kubeconfig_for('kube-scheduler')}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports.scheduler}",
            ],
        )
        url = f"https://127.0.0.1:{self.ports.scheduler}/healthz"
        self._wait("kube-scheduler", lambda: self._answers(url, tls=True))

    def _start_kwok(self) -> None:
        stages = sorted(assets_dir("kwok").glob("*.yaml"))
        if not stages:
            raise ControlPlaneError(
                f"kwok: no stages in {assets_dir('kwok')} — run `gpupool sandbox build kwok`"
            )
        config = self.root / "kwok.yaml"
        config.write_text("\n---\n".join(stage.read_text() for stage in stages))
        self._spawn(
            "kwok",
            [
                str(binary("kwok")),
                f"--kubeconfig={self._kubeconfig_for('kwok')}",
                f"--config={config}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_VALUE}",
                f"--server-address=127.0.0.1:{self.ports.kwok}",
                "--node-ip=127.0.0.1",
                "--node-lease-duration-seconds=40",
            ],
        )
        self._wait("kwok", lambda: self._answers(f"http://127.0.0.1:{self.ports.kwok}/healthz"))

    def _start_karpenter(self) -> None:
        from gpupool.core.catalog import load_catalog
        from gpupool.sandbox.cluster.instance_types import karpenter_instance_types

        types_file = self.root / "karpenter-instance-types.json"
        types_file.write_text(json.dumps(karpenter_instance_types(load_catalog("aws"), REGION), indent=1))
        self._spawn(
            "karpenter",
            [str(binary("karpenter-kwok"))],
            env={
                "KUBECONFIG": str(self._kubeconfig_for("karpenter")),
                "DISABLE_LEADER_ELECTION": "true",
                "FEATURE_GATES": "NodeOverlay=true",
                "METRICS_PORT": str(self.ports.karpenter_metrics),
                "HEALTH_PROBE_PORT": str(self.ports.karpenter_health),
                "INSTANCE_TYPES_FILE_PATH": str(types_file),
                "SYSTEM_NAMESPACE": "kube-system",
                "LOG_LEVEL": "info",
            },
        )
        url = f"http://127.0.0.1:{self.ports.karpenter_health}/readyz"
        self._wait("karpenter", lambda: self._answers(url))

    # -- stop -------------------------------------------------------------------------------------

    def stop(self, *, timeout: float = 10.0) -> None:
        """SIGTERM every started component in reverse order, SIGKILL what is left; forget their PIDs."""
        for name in reversed(list(self._processes)):
            process = self._processes.pop(name)
            terminate(process.pid, timeout=timeout)
            with contextlib.suppress(ChildProcessError, subprocess.TimeoutExpired):
                process.wait(timeout=1)
            self._pid_file(name).unlink(missing_ok=True)
        (self.root / "state.json").unlink(missing_ok=True)


def terminate(pid: int, *, timeout: float = 10.0) -> None:
    """SIGTERM the process group `pid` leads, then SIGKILL it after `timeout`."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not process_alive(pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def stop_recorded(root: Path) -> list[str]:
    """Stop every component whose PID file is under `root/pids` (a control plane another process
    started, e.g. `gpupool sandbox up --real --background`); the names stopped."""
    stopped = []
    for pid_file in sorted((root / "pids").glob("*.pid")):
        with contextlib.suppress(ValueError, OSError):
            terminate(int(pid_file.read_text().strip()))
            stopped.append(pid_file.stem)
        pid_file.unlink(missing_ok=True)
    return stopped


@contextlib.contextmanager
def running(root: Path, **options: Any) -> Iterator[ControlPlane]:
    plane = ControlPlane(root, **options)
    with plane:
        yield plane
