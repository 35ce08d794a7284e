"""The chart installed as the install guides install it, on a real kube-apiserver (issue 31, story 1).

For each guide (docs/install-eks.md, docs/install-ack.md) the values come the guide's way:
`gpupool values` over the fixtures of what `aws cloudformation describe-stacks` and `s info -o json`
print (tests/fixtures/install), ACK's `gpupool-base.yaml` read from the guide's own heredoc; the
guide's last `helm upgrade --install` line is run as `helm template` (same release, namespace,
values files and `--set`s, the CRDs included, the API server's version) with the built helm. Every
object is applied server-side to a fresh etcd + kube-apiserver (the CRDs first, until Established).
Covers: every object accepted by the real server; every container and init container image of
every workload taken from the values (`image.repository`, or the kube-scheduler image); the chart's
ValidatingAdmissionPolicy (the pod guard) evaluated by the real server — a pod it must refuse is
refused with its message, a pod it must allow is allowed, and the relay's ServiceAccount may write
the scheduler-owned annotations that a tenant may not.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupool.sandbox.cluster.build import KUBERNETES_VERSION, binary
from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.programs import require_built
from tests.real.relay_process import CHART, ROOT, call, wait_for

T = "tensor-fusion.ai/"
FIXTURES = ROOT / "tests" / "fixtures" / "install"
GUIDES = {"eks": ROOT / "docs" / "install-eks.md", "ack": ROOT / "docs" / "install-ack.md"}
IMAGE_REPOSITORY = "registry.example.invalid/gpupool/relay"
GUIDE_VARIABLES = {"RELEASE": "gpupool", "NAMESPACE": "gpupool-system", "IMAGE_REPOSITORY": IMAGE_REPOSITORY}
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob"}


def _guide_values(guide: str, directory: Path) -> None:
    """Write the values files the guide's helm line reads, made the guide's way."""
    gpupool = [sys.executable, "-m", "gpupool.cli.main", "values"]
    if guide == "eks":
        argv = ["--stack-description", str(FIXTURES / "describe-stacks.json")]
        argv += ["--release", GUIDE_VARIABLES["RELEASE"], "--namespace", GUIDE_VARIABLES["NAMESPACE"]]
    else:
        argv = ["--s-info", str(FIXTURES / "s-info.json")]
        text = GUIDES["ack"].read_text()
        base = re.search(r"cat > gpupool-base\.yaml <<'EOF'\n(.*?)\nEOF\n", text, re.S)
        assert base, "docs/install-ack.md no longer writes gpupool-base.yaml"
        (directory / "gpupool-base.yaml").write_text(base.group(1) + "\n")
    done = subprocess.run(
        [*gpupool, *argv], capture_output=True, text=True, cwd=ROOT, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    (directory / "gpupool-values.yaml").write_text(done.stdout)


def _helm_template(guide: str, directory: Path) -> list[dict[str, Any]]:
    """The guide's last `helm upgrade --install` line, run as `helm template` by the built helm."""
    lines = [
        line for line in GUIDES[guide].read_text().splitlines() if line.startswith("helm upgrade --install ")
    ]
    words = shlex.split(re.sub(r'"?\$(\w+)"?', lambda m: GUIDE_VARIABLES[m.group(1)], lines[-1]))
    assert words[:3] == ["helm", "upgrade", "--install"], words
    argv = [w for w in words[3:] if w != "--create-namespace"]
    argv = [str(CHART) if w == "incluster/chart" else w for w in argv]
    command = [
        str(binary("helm")),
        "template",
        *argv,
        "--include-crds",
        f"--kube-version={KUBERNETES_VERSION}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=directory, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _path(document: dict[str, Any], plurals: dict[tuple[str, str], tuple[str, bool]]) -> str:
    """The object's URL, from the API server's discovery
    (`plurals`: (apiVersion, kind) → (plural, namespaced))."""
    version, kind, meta = document["apiVersion"], document["kind"], document["metadata"]
    plural, namespaced = plurals[(version, kind)]
    base = f"/api/{version}" if "/" not in version else f"/apis/{version}"
    where = f"/namespaces/{meta.get('namespace') or GUIDE_VARIABLES['NAMESPACE']}" if namespaced else ""
    return f"{base}{where}/{plural}/{meta['name']}"


def _discover(plane: ControlPlane) -> dict[tuple[str, str], tuple[str, bool]]:
    found: dict[tuple[str, str], tuple[str, bool]] = {}
    versions = ["v1"]
    for group in plane.request("GET", "/apis")["groups"]:
        versions += [v["groupVersion"] for v in group["versions"]]
    for version in versions:
        listing = plane.request("GET", f"/api/{version}" if version == "v1" else f"/apis/{version}")
        for resource in listing["resources"]:
            if "/" not in resource["name"]:
                found[(version, resource["kind"])] = (resource["name"], resource["namespaced"])
    return found


class Installed:
    def __init__(
        self, plane: ControlPlane, documents: list[dict[str, Any]], answers: list[dict[str, Any]]
    ) -> None:
        self.plane, self.documents, self.answers = plane, documents, answers


def _install(plane: ControlPlane, documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Server-side apply: the CRDs first (until Established), the namespace, then the rest."""
    answers = []
    crds = [d for d in documents if d["kind"] == "CustomResourceDefinition"]
    base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for crd in crds:
        answers.append(plane.apply(crd, path=f"{base}/{crd['metadata']['name']}"))
    for crd in crds:
        wait_for(
            f"{crd['metadata']['name']} to be Established",
            lambda crd=crd: any(  # type: ignore[misc]
                c["type"] == "Established" and c["status"] == "True"
                for c in plane.request("GET", f"{base}/{crd['metadata']['name']}")
                .get("status", {})
                .get("conditions")
                or []
            ),
            timeout=60,
        )
    namespace = GUIDE_VARIABLES["NAMESPACE"]
    plane.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        path=f"/api/v1/namespaces/{namespace}",
    )
    plurals = _discover(plane)
    for document in documents:
        if document["kind"] == "CustomResourceDefinition":
            continue
        assert (document["apiVersion"], document["kind"]) in plurals, (
            f"the chart renders a {document['kind']} ({document['apiVersion']}) the API server does not serve"
        )
        answers.append(plane.apply(document, path=_path(document, plurals)))
    return answers


@pytest.fixture(scope="module")
def bare_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd and kube-apiserver alone: no gpupool CRDs before the chart's own, and the chart's
    cluster-wide pod guard and webhook kept away from the session's control plane."""
    require_built("etcd", "kube-apiserver", "helm")
    plane = ControlPlane(tmp_path_factory.mktemp("chart-real"), components=("etcd", "kube-apiserver"))
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="module", params=sorted(GUIDES))
def installed(
    request: pytest.FixtureRequest, bare_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Installed:
    directory = tmp_path_factory.mktemp(f"guide-{request.param}")
    _guide_values(request.param, directory)
    documents = _helm_template(request.param, directory)
    return Installed(bare_plane, documents, _install(bare_plane, documents))


def test_every_object_the_guides_install_is_accepted(installed: Installed) -> None:
    kinds = {d["kind"] for d in installed.documents}
    assert {"CustomResourceDefinition", "Deployment", "DaemonSet", "MutatingWebhookConfiguration"} <= kinds
    assert {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= kinds
    assert len(installed.answers) == len(installed.documents)
    for document, answer in zip(
        [d for d in installed.documents if d["kind"] == "CustomResourceDefinition"]
        + [d for d in installed.documents if d["kind"] != "CustomResourceDefinition"],
        installed.answers,
        strict=True,
    ):
        assert (
            answer["kind"] == document["kind"] and answer["metadata"]["name"] == document["metadata"]["name"]
        )
        assert answer["metadata"].get("uid"), answer


def test_every_image_comes_from_the_values(installed: Installed) -> None:
    images = []
    for document in installed.documents:
        if document["kind"] not in WORKLOADS:
            continue
        template = document["spec"]["template"]["spec"]
        for container in template.get("initContainers", []) + template["containers"]:
            images.append((document["metadata"]["name"], container["name"], container["image"]))
    assert images
    for workload, container, image in images:
        allowed = image.startswith((IMAGE_REPOSITORY + ":", "registry.k8s.io/kube-scheduler:"))
        assert allowed, f"{workload}/{container}: {image} is not taken from the values"


def _pod(
    name: str, *, annotations: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "containers": [
                {"name": "main", "image": "example.invalid/app:1", "resources": {"limits": limits or {}}}
            ]
        },
    }


def test_the_pod_guard_is_evaluated_by_the_real_server(installed: Installed) -> None:
    plane = installed.plane
    namespace = f"tenant-{uuid.uuid4().hex[:6]}"
    plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    # No controller-manager on this plane: the ServiceAccount admission wants `default` to exist.
    plane.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "default"}}
    )
    pods = f"/api/v1/namespaces/{namespace}/pods"
    squatter = _pod("squatter", limits={T + "index_0": "1"})  # GPU shares around tensor-fusion-scheduler
    refused = wait_for(
        "the API server to load the pod guard",
        lambda: (answer := call(plane, "POST", pods, squatter))[0] in (403, 422) and answer,
        timeout=30,
    )
    message = refused[1]["message"]
    assert "ValidatingAdmissionPolicy 'gpupool-pod-guard'" in message, message
    assert "placed by tensor-fusion-scheduler" in message, message
    forged = _pod("forged", annotations={T + "gpu-ids": "gpu-victim-0"})
    status, answer = call(plane, "POST", pods, forged)
    assert status in (403, 422) and "written by" in answer["message"], answer
    status, answer = call(plane, "POST", pods, _pod("plain"))
    assert status == 201, answer
    relay = f"system:serviceaccount:{GUIDE_VARIABLES['NAMESPACE']}:{GUIDE_VARIABLES['RELEASE']}-scheduler"
    owned = {"metadata": {"annotations": {T + "gpu-ids": "gpu-a-0"}}}
    status, answer = _as(
        plane, "PATCH", f"{pods}/plain", owned, user="system:serviceaccount:" + namespace + ":default"
    )
    assert status in (403, 422) and "written by" in answer["message"], answer
    status, answer = _as(plane, "PATCH", f"{pods}/plain", owned, user=relay)
    assert status == 200, answer
    call(plane, "DELETE", f"/api/v1/namespaces/{namespace}")


def _as(plane: ControlPlane, method: str, path: str, body: Any, *, user: str) -> tuple[int, Any]:
    """The admin impersonating `user` (with cluster-admin granted to it, so only the guard decides)."""
    import ssl
    import urllib.error
    import urllib.request

    binding = (
        f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/test-all-{re.sub(r'[^a-z0-9-]', '-', user)}"
    )
    plane.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": binding.rsplit("/", 1)[1]},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
        path=binding,
    )
    time.sleep(0.5)  # RBAC's authorizer reads bindings through an informer
    headers = {
        "Authorization": f"Bearer {plane.token}",
        "Content-Type": "application/merge-patch+json",
        "Impersonate-User": user,
        "Impersonate-Group": "system:authenticated",
    }
    request = urllib.request.Request(
        plane.url + path, data=json.dumps(body).encode(), method=method, headers=headers
    )
    context = ssl.create_default_context(cafile=str(plane.pki.ca_cert))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return int(answer.status), json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")
