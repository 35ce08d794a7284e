"""What the real-tier relay stories share (issue 31's, and issue 33's tenant replays): TLS material
from a CA of the test's own, kubeconfigs for a bearer token or a ServiceAccount's TokenRequest, the
chart rendered as the guides render it, and `gpupool relay serve` run as a process on loopback.

`pod_webhook_harness` is the whole webhook setup in one call: a namespace of its own, a default
GPUPool, the relay serving a pair from a fresh CA, and the chart's MutatingWebhookConfiguration
pointed at it (narrowed to that namespace), waited for until the API server calls it; replay a
tenant's pods through `harness.create(pod)`.

A `RelayProcess` is started with `start_new_session`, so its PID leads its own process group;
`stop()` terminates that group (SIGTERM, then SIGKILL) and `kill()` SIGKILLs it at once. The
`relay` context manager stops it on the way out, even when the test failed.

Must not: listen anywhere but 127.0.0.1, or leave a process it started running.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gpupool.sandbox.cluster.controlplane import ControlPlane, free_port, process_alive, terminate
from tests.real import waiting

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "incluster" / "chart"
RELEASE = "gp"
NAMESPACE = "gpupool-system"


# -- TLS -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServingPair:
    """A CA and a serving certificate it signed for 127.0.0.1 and localhost."""

    ca: Path
    cert: Path
    key: Path

    @property
    def ca_pem(self) -> bytes:
        return self.ca.read_bytes()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def serving_pair(directory: Path, *, common_name: str = "gpupool-relay") -> ServingPair:
    """Write `ca.crt`, `tls.crt` and `tls.key` under `directory`: a fresh CA (not the control
    plane's) and a serving certificate it signed, valid for one day."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("gpupool-test-webhook-ca"))
        .issuer_name(_name("gpupool-test-webhook-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    pair = ServingPair(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
    pair.ca.write_bytes(ca.public_bytes(pem))
    pair.cert.write_bytes(cert.public_bytes(pem))
    pair.key.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    pair.key.chmod(0o600)
    return pair


# -- identities ------------------------------------------------------------------------------------


def token_kubeconfig(plane: ControlPlane, token: str, path: Path, *, user: str = "user") -> Path:
    """A kubeconfig for `plane` that authenticates with `token` and verifies the plane's CA."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "real",
                "cluster": {"server": plane.url, "certificate-authority": str(plane.pki.ca_cert)},
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "real", "context": {"cluster": "real", "user": user}}],
        "current-context": "real",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def service_account_kubeconfig(plane: ControlPlane, namespace: str, name: str, path: Path) -> Path:
    """A kubeconfig for the ServiceAccount `namespace/name` (which must exist), with a one-hour
    token from the TokenRequest API, as the kubelet mounts one into a pod."""
    answer = plane.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    return token_kubeconfig(plane, answer["status"]["token"], path, user=f"{namespace}-{name}")


# -- the chart -------------------------------------------------------------------------------------


def render_chart(
    values: dict[str, Any], *, release: str = RELEASE, namespace: str = NAMESPACE
) -> list[dict[str, Any]]:
    """Every object the chart renders for `values` (templates only; the CRDs are in `chart_crds`)."""
    import helm_python as helm

    rendered = helm.Chart.load(CHART).render(values, name=release, namespace=namespace)
    documents: list[dict[str, Any]] = []
    for template, text in sorted(rendered.items()):
        if template.endswith(".yaml"):
            documents += [d for d in yaml.safe_load_all(text) if d]
    return documents


def chart_crds() -> list[dict[str, Any]]:
    return [yaml.safe_load(path.read_text()) for path in sorted((CHART / "crds").glob("*.yaml"))]


def chart_scheduler_config(*, extender_port: int, namespace: str) -> dict[str, Any]:
    """tensor-fusion-scheduler's KubeSchedulerConfiguration as the chart's ConfigMap carries it."""
    documents = render_chart({"scheduler": {"extenderPort": extender_port}}, namespace=namespace)
    config_map = next(
        d
        for d in documents
        if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-scheduler-config")
    )
    loaded: dict[str, Any] = yaml.safe_load(config_map["data"]["scheduler-config.yaml"])
    return loaded


def chart_pod_webhook(url: str, ca_pem: bytes, *, name: str, namespace: str) -> dict[str, Any]:
    """The chart's MutatingWebhookConfiguration, pointed at `url` (the relay outside the cluster)
    instead of the Service, and narrowed to pods of `namespace` so no other test's pod reaches it."""
    import base64

    documents = render_chart({})
    webhook = next(d for d in documents if d["kind"] == "MutatingWebhookConfiguration")
    webhook["metadata"] = {"name": name}
    for hook in webhook["webhooks"]:
        hook["clientConfig"] = {"url": url, "caBundle": base64.b64encode(ca_pem).decode()}
        hook["namespaceSelector"] = {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace]}
            ]
        }
    return webhook


RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def _rbac_path(document: dict[str, Any]) -> str:
    kind, meta = document["kind"], document["metadata"]
    if kind == "ServiceAccount":
        return f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{meta['name']}"
    plural = kind.lower() + "s"
    where = "" if kind.startswith("Cluster") else f"/namespaces/{meta['namespace']}"
    return f"/apis/rbac.authorization.k8s.io/v1{where}/{plural}/{meta['name']}"


@dataclass(frozen=True)
class ChartIdentities:
    """Kubeconfigs for the scheduling pod's two ServiceAccounts, as the chart makes them."""

    relay: Path
    kube_scheduler: Path


@contextlib.contextmanager
def chart_relay_identity(plane: ControlPlane, root: Path, *, namespace: str) -> Iterator[ChartIdentities]:
    """The scheduling pod's identities as the chart makes them — the relay's ServiceAccount
    `<release>-scheduler` with its ClusterRole and Lease Role, kube-scheduler's
    `<release>-kube-scheduler` with its bindings and Lease Role — in `namespace` (which must
    exist), under a release name of its own; yields a kubeconfig with a TokenRequest token for each,
    so only the chart's RBAC lets the relay and kube-scheduler work. The cluster-wide objects are
    deleted on the way out."""
    release = f"tf{uuid.uuid4().hex[:6]}"
    accounts = (f"{release}-scheduler", f"{release}-kube-scheduler")
    rbac = [
        d
        for d in render_chart({}, release=release, namespace=namespace)
        if d["kind"] in RBAC_KINDS and any(account in json.dumps(d) for account in accounts)
    ]
    try:
        for document in rbac:
            plane.apply(document, path=_rbac_path(document))
        yield ChartIdentities(
            *(service_account_kubeconfig(plane, namespace, a, root / f"{a}.kubeconfig") for a in accounts)
        )
    finally:
        for document in rbac:
            if document["kind"].startswith("Cluster"):
                call(plane, "DELETE", _rbac_path(document))


# -- the relay as a process ------------------------------------------------------------------------


@dataclass
class RelayProcess:
    """`gpupool relay serve` against a real API server: the webhook on `listen_port` (TLS with
    `tls`, else the relay's own self-signed pair), the extender on `extender_port` (plain HTTP)."""

    root: Path
    kubeconfig: Path
    name: str = "relay"
    tls: ServingPair | None = None
    args: Sequence[str] = ()
    listen_port: int = field(default_factory=free_port)
    extender_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.root / f"{self.name}.log"

    @property
    def webhook_url(self) -> str:
        return f"https://127.0.0.1:{self.listen_port}/mutate-pod"

    @property
    def extender_url(self) -> str:
        return f"http://127.0.0.1:{self.extender_port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def command(self) -> list[str]:
        command = [
            sys.executable,
            "-m",
            "gpupool.cli.main",
            "relay",
            "serve",
            "--kubeconfig",
            str(self.kubeconfig),
            "--listen",
            f"127.0.0.1:{self.listen_port}",
            "--extender-listen",
            f"127.0.0.1:{self.extender_port}",
        ]
        if self.tls is not None:
            command += ["--tls-cert", str(self.tls.cert), "--tls-key", str(self.tls.key)]
        return command + list(self.args)

    def start(self, *, timeout: float = 90.0) -> RelayProcess:
        """Spawn it and wait until every watch has listed (`/readyz` on the extender port)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited with {self.process.returncode}: {self.tail()}")
            if self.get("/readyz") == 200:
                return self
            time.sleep(0.3)
        self.stop()
        raise AssertionError(f"{self.name} was not ready within {timeout:.0f} s: {self.tail()}")

    def get(self, path: str) -> int | None:
        """The status of GET `path` on the extender port; None when nothing answers."""
        try:
            with urllib.request.urlopen(self.extender_url + path, timeout=3) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return None

    def metric(self, name: str) -> float | None:
        """One unlabelled series of `/metrics` on the extender port."""
        try:
            with urllib.request.urlopen(self.extender_url + "/metrics", timeout=3) as answer:
                text = answer.read().decode()
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and process_alive(self.pid)

    def kill(self) -> None:
        """SIGKILL its process group: no graceful step-down, no Lease release."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        assert self.process is not None
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None:
            return
        terminate(self.pid, timeout=10)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


@contextlib.contextmanager
def relay(**options: Any) -> Iterator[RelayProcess]:
    """A started `RelayProcess`, stopped on the way out whatever happened."""
    process = RelayProcess(**options)
    try:
        yield process.start()
    finally:
        process.stop()


# -- the pod webhook, registered with the real API server ------------------------------------------

WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
PROBE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "probe",
        "labels": {"tensor-fusion.ai/enabled": "true"},
        "annotations": {"tensor-fusion.ai/tflops-request": "1", "tensor-fusion.ai/vram-request": "1Gi"},
    },
    "spec": {"containers": [{"name": "main", "image": "example.invalid/probe:1"}]},
}


@dataclass
class WebhookHarness:
    plane: ControlPlane
    relay: RelayProcess
    pair: ServingPair
    namespace: str
    pool: str

    @property
    def webhook_name(self) -> str:
        return f"gpupool-test-{self.namespace}"

    @property
    def pods(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    def create(
        self, pod: dict[str, Any], *, dry_run: bool = False, token: str | None = None
    ) -> tuple[int, Any]:
        """POST `pod` into the harness's namespace (as the admin, or with `token`)."""
        return call(self.plane, "POST", self.pods + ("?dryRun=All" if dry_run else ""), pod, token=token)


@contextlib.contextmanager
def pod_webhook_harness(
    plane: ControlPlane, root: Path, *, kubeconfig: Path | None = None, relay_args: Sequence[str] = ()
) -> Iterator[WebhookHarness]:
    """The relay's pod webhook called by `plane` over TLS for pods of a fresh namespace; everything
    it made (the webhook configuration, the pool, the namespace) removed and the relay stopped on
    the way out."""
    namespace = f"tenant-{uuid.uuid4().hex[:6]}"
    pool = f"pool-{namespace}"
    pair = serving_pair(root / "tls")
    relay = RelayProcess(
        root, kubeconfig or plane.kubeconfig, tls=pair, args=["--default-pool", pool, *relay_args]
    )
    harness = WebhookHarness(plane, relay, pair, namespace, pool)
    webhook = chart_pod_webhook(
        relay.webhook_url, pair.ca_pem, name=harness.webhook_name, namespace=namespace
    )
    try:
        plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
        # Pods are admitted once the namespace's `default` ServiceAccount exists; the controller-manager
        # makes it, applying it too means no wait for that.
        account = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": namespace},
        }
        plane.apply(account, path=f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
        plane.request(
            "POST",
            "/apis/tensor-fusion.ai/v1/gpupools",
            {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool", "metadata": {"name": pool}, "spec": {}},
        )
        relay.start()
        plane.request("POST", WEBHOOKS, webhook)
        # The API server loads a new webhook configuration through its informer: wait until it calls it.
        wait_for(
            "the API server to call the webhook",
            lambda: (
                (answer := harness.create(PROBE, dry_run=True))[0] == 201
                and answer[1]["spec"].get("schedulerName") == "tensor-fusion-scheduler"
            ),
            timeout=30,
        )
        yield harness
    finally:
        relay.stop()
        call(plane, "DELETE", f"{WEBHOOKS}/{harness.webhook_name}")
        call(plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpupools/{pool}")
        call(plane, "DELETE", f"/api/v1/namespaces/{namespace}")


# -- calls that may be refused ---------------------------------------------------------------------


def call(
    plane: ControlPlane, method: str, path: str, body: Any = None, *, token: str | None = None
) -> tuple[int, Any]:
    """One call to the API server (as the admin, or with `token`): its status and decoded answer,
    refusals included."""
    import ssl

    headers = {"Authorization": f"Bearer {token or plane.token}", "Content-Type": "application/json"}
    if method == "PATCH":
        headers["Content-Type"] = "application/merge-patch+json"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(plane.url + path, data=data, method=method, headers=headers)
    context = ssl.create_default_context(cafile=str(plane.pki.ca_cert))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return int(answer.status), json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


wait_for = functools.partial(waiting.wait_for, timeout=60.0, every=0.5)
