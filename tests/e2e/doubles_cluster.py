"""The doubles both install guides share: docker (the relay image) and the cluster side of helm
(`helm upgrade --install` / `uninstall`: the chart rendered by the real `helm template`, then
applied with kubectl to the sandbox). `helm lint` and `helm template` are the real helm itself
(install_doubles.py). Rules: install_doubles.py.

Must not: reach a network beyond 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml
from doubles_base import ROOT, Refused, flags_of, state_path

STDIN: dict[str, str] = {}  # standard input, read before the state is locked (install_doubles.main)


# ---- docker ------------------------------------------------------------------------------------
def docker(argv: list[str], state: dict[str, Any]) -> str:
    if argv[:2] == ["buildx", "create"]:
        flags, _ = flags_of(argv[2:], boolean=("--use",))
        if not flags.get("--use"):
            raise Refused("the guide builds with the builder it creates (--use)")
        state["buildx_builder"] = flags.get("--name", "builder")
        return state["buildx_builder"] + "\n"
    if argv[:1] == ["login"]:
        flags, positional = flags_of(argv[1:], boolean=("--password-stdin",))
        if not flags.get("--password-stdin") or not STDIN.get("text", "").strip():
            raise Refused("Error: Cannot perform an interactive login from a non TTY device")
        state.setdefault("registries", []).extend(positional)
        return "Login Succeeded\n"
    if argv[:2] == ["buildx", "build"]:
        flags, positional = flags_of(argv[2:], repeated=("-t", "--tag"), boolean=("--push", "--load"))
        if not state.get("buildx_builder"):
            raise Refused(
                "ERROR: Multi-platform build is not supported for the docker driver (create a buildx builder)"
            )
        (context,) = positional
        platforms = set(flags.get("--platform", "").split(","))
        if not {"linux/amd64", "linux/arm64"} <= platforms:
            raise Refused(f"the image must be built for linux/amd64 and linux/arm64, not {sorted(platforms)}")
        dockerfile = Path(flags.get("-f") or flags.get("--file") or "Dockerfile")
        if (
            dockerfile.resolve() != (ROOT / "incluster" / "Dockerfile").resolve()
            or not (Path(context) / "pyproject.toml").exists()
        ):
            raise Refused(
                "the relay image is built from incluster/Dockerfile with the repository root as context"
            )
        if not flags.get("--push"):
            raise Refused("a multi-platform image must be pushed (--push)")
        for tag in flags.get("-t", []) + flags.get("--tag", []):
            repository, _, _ = tag.rpartition(":")
            if ".dkr.ecr." in repository and repository not in state.get("ecr", {}):
                raise Refused(
                    f"ERROR: failed to push {tag}: repository does not exist"
                )  # ECR: create it first
            if repository.split("/", 1)[0] not in state.get("registries", []):
                raise Refused(f"ERROR: failed to push {tag}: no basic auth credentials")
            state.setdefault("pushed", []).append(tag)
        return "pushed\n"
    raise Refused(f"the docker double knows no `docker {' '.join(argv[:2])}`")


# ---- helm --------------------------------------------------------------------------------------
def kubectl(*args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [os.environ["GPUPOOL_KUBECTL"], *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if result.returncode != 0:
        raise Refused(f"Error: kubectl {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def _chart(reference: str, version: str | None) -> Path:
    local = ROOT / "incluster" / "chart"
    published = "oci://ghcr.io/gpupool/charts/gpupool"
    chart_version = yaml.safe_load((local / "Chart.yaml").read_text())["version"]
    if reference == published:
        if version != chart_version:
            raise Refused(
                f"Error: {published}:{version}: not found (the release workflow publishes {chart_version})"
            )
        return local
    path = Path(reference)
    if not (path / "Chart.yaml").exists() or path.resolve() != local.resolve():
        raise Refused(f"Error: path {reference!r} not found")
    return path


def _helm_template(
    release: str, chart: Path, namespace: str, kube_version: str, flags: dict[str, Any]
) -> list[dict[str, Any]]:
    """The real `helm template` of the release, for the cluster's version (.Capabilities.KubeVersion)."""
    command = [os.environ["GPUPOOL_REAL_HELM"], "template", release, str(chart), "--namespace", namespace]
    command += ["--kube-version", f"v{kube_version}"]
    for path in flags.get("-f", []) + flags.get("--values", []):
        command += ["--values", path]
    for expression in flags.get("--set", []):
        command += ["--set", expression]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Refused(done.stderr.strip())
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def helm(argv: list[str], state: dict[str, Any]) -> str:
    import kubernetes_validate

    command = argv[0] if argv else ""
    flags, positional = flags_of(
        argv[1:],
        repeated=("-f", "--values", "--set"),
        boolean=("--install", "--create-namespace", "--wait", "--atomic"),
    )
    namespace = flags.get("--namespace") or flags.get("-n") or "default"
    releases = state.setdefault("releases", {})
    if command == "uninstall":
        (release,) = positional
        found = releases.pop(release, None)
        if found is None or found["namespace"] != namespace:
            raise Refused(f"Error: uninstall: Release not loaded: {release}: release: not found")
        kubectl("delete", "--ignore-not-found", "-f", found["manifest"])
        return f'release "{release}" uninstalled\n'
    if command not in ("install", "upgrade") or (
        command == "upgrade" and not flags.get("--install") and positional[0] not in releases
    ):
        raise Refused(f"the helm double knows no `helm {command}` here")
    release, reference = positional
    chart = _chart(reference, flags.get("--version"))
    kube_version = state["kube_version"]
    documents = _helm_template(release, chart, namespace, kube_version, flags)
    for document in documents:
        if document["kind"] not in ("Certificate", "Issuer"):
            kubernetes_validate.validate(document, kube_version, strict=True)
    manifest = state_path().parent / f"helm-{release}.yaml"
    manifest.write_text(yaml.safe_dump_all(documents))
    for image in sorted(
        {
            c["image"]
            for d in documents
            if d["kind"] in ("Deployment", "DaemonSet")
            for kind in ("initContainers", "containers")
            for c in d["spec"]["template"]["spec"].get(kind, [])
        }
    ):
        if not image.startswith("registry.k8s.io/") and image not in state.get("pushed", []):
            raise Refused(f"image {image} was never pushed: the pods could not start")
    if f"namespace/{namespace}" not in kubectl("get", "namespaces", "-o", "name").split():
        if not flags.get("--create-namespace"):
            raise Refused(
                f'Error: INSTALLATION FAILED: create: failed to create: namespaces "{namespace}" not found'
            )
        kubectl("create", "namespace", namespace)
    if release not in releases:
        kubectl("apply", "-f", str(chart / "crds"))  # Helm installs crds/ once, never upgrades them
    kubectl("apply", "-f", str(manifest))
    for document in documents:  # the token controller's part: it fills a service-account-token Secret
        if document["kind"] == "Secret" and document.get("type") == "kubernetes.io/service-account-token":
            token = base64.b64encode(f"token-of-{document['metadata']['name']}".encode()).decode()
            patch = json.dumps({"data": {"token": base64.b64encode(token.encode()).decode()}})
            kubectl(
                "-n",
                namespace,
                "patch",
                "secret",
                document["metadata"]["name"],
                "--type",
                "merge",
                "-p",
                patch,
            )
    releases[release] = {"namespace": namespace, "manifest": str(manifest)}
    return f'Release "{release}" has been upgraded. Happy Helming!\nNAMESPACE: {namespace}\n'
