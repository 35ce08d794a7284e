"""The install guides (docs/install-eks.md, docs/install-ack.md, docs/install-self-managed.md), walked so
they cannot drift from the code.

Read statically (everywhere): every fenced `sh` block, run or not, uses only known tools; every
`gpupool` command in it parses with gpupool's own parser; nothing is used before the guide made it —
each file a command reads comes from the repository or an earlier command, each variable from an
earlier assignment (the order has no cycle); the published chart and image the guides name are where
the release workflow publishes.

Run: every `sh` block not marked "not run by the test" runs in order, in one bash session (`set -euo
pipefail`), from a directory holding the repository's files, against one real control plane the module's
walks share (etcd, kube-apiserver, the controller manager, kube-scheduler, and KWOK, whose two nodes — a
system node and a labelled, tainted GPU node — run the chart's pods without running their containers),
with the real tools: `sam validate --lint` and `sam build` (aws-sam-cli), `s config add` (Serverless
Devs), and `helm` and `kubectl` for every command that names them — `helm upgrade --install --wait` must
see every Deployment available and the node agent ready on the GPU node, and `helm uninstall` removes
the release —, all from `gpupool sandbox build`'s cache (a missing one fails the test with the command
that makes it, never skips it). Only the cloud side is doubled (tests/e2e/install_doubles.py: each
refuses what the real tool would; `sam deploy` reads what the real build made and creates the stack in
moto's CloudFormation, where the real `gpupool values --stack` reads it; `docker buildx build --push`
records the image, and every container of every pod the release runs must run a pushed image). Each walk
leaves the control plane as it found it. Before the "Uninstall" section, the relay is started from the
arguments of the release's manifest (listeners on loopback, the installed TLS pair, the files of the
Secrets the pod mounts, the Function URLs pointed at a receiver) and must deliver a signed `node.joined`
for a provisioned node. For EKS and the self-managed cluster the receiver verifies SigV4 as the Function
URLs would. For ACK it is Function Compute as `s deploy` left it (tests/e2e/doubles_fc.py): FC's gateway
checks the relay's ACS3 signature with the AccessKey RAM issued and that key's user's right to invoke
the function, then the real bind handler runs with s.yaml's environment, reading its kubeconfig from the
KMS secret the guide stored (only as the functions' role, with s.yaml's policy, may) and answering the
relay. After the uninstall nothing the guide made may be left. The self-managed walk starts from the
account such a cluster has (its VPC and control-plane security group in moto, Karpenter's node role) and
checks the issuer's documents in its bucket (as the API server serves them), the functions' kubeconfig
in Secrets Manager, the relay's role trusting the cluster's own issuer for the chart's ServiceAccount
and its web-identity token in the chart. The ACK walk is also run on the guide broken on purpose — the
relay given a wrong AccessKey secret, the KMS secret step left out, the relay's policy never attached,
the chart given an image nobody pushed — and must stop at each with the refusal that names it."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gpupool.sandbox.cluster.controlplane import ControlPlane

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT / "tests" / "contract" / "kubeapi"))
import walk_cluster  # noqa: E402
from install_doubles import REAL, TOOLS, load_state  # noqa: E402

GUIDES = {
    "eks": ROOT / "docs" / "install-eks.md",
    "ack": ROOT / "docs" / "install-ack.md",
    "self-managed": ROOT / "docs" / "install-self-managed.md",
}
NOT_RUN = "<!-- not run by the test"
# Commands a guide may run, beyond the doubled cloud tools.
LOCAL_TOOLS = {
    "helm",  # the real one, always
    ".venv/bin/pip",
    "printf",
    "kubectl",
    "gpupool",
    "cat",
    "fill",
    "export",
    "for",
    "do",
    "done",
    "python3",
    "git",
    "openssl",
    "rm",
    "cd",
    "json",
    "sleep",
}
# Tools a guide may name only in blocks the walk does not run (nothing here doubles them).
NOT_RUN_TOOLS = {"buildah"}
SHELL_WORDS = {"then", "fi", "if", "else", "while", "{", "}"}
STANDARD_VARIABLES = {"PATH", "PWD", "HOME"}
# What the reader sets in the guides' "your secrets" blocks (not run): the walk's stand-ins.
USER_INPUTS = {
    "ALIBABA_CLOUD_ACCESS_KEY_ID": "walk-ak",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "walk-sk",
    "ACR_USERNAME": "walk-registry-user",
    "ACR_PASSWORD": "walk-registry-password",
}


@dataclass(frozen=True)
class Block:
    line: int
    text: str
    run: bool
    section: str


def blocks(guide: Path, text: str | None = None) -> list[Block]:
    """The guide's ```sh blocks in order, each with whether the walk runs it and its section heading
    (`text`: the guide's text instead of the file's)."""
    found: list[Block] = []
    lines = (guide.read_text() if text is None else text).splitlines()
    section, previous, at = "", "", 0
    while at < len(lines):
        line = lines[at]
        if line.startswith("## "):
            section = line[3:]
        if line.startswith("```"):
            language, start, body = line[3:].strip(), at + 1, []
            at += 1
            while not lines[at].startswith("```"):
                body.append(lines[at])
                at += 1
            if language == "sh":
                found.append(Block(start, "\n".join(body) + "\n", not previous.startswith(NOT_RUN), section))
        if line.strip():
            previous = line.strip()
        at += 1
    return found


def commands(block: Block) -> Iterator[list[str]]:
    """Each simple command of a block as words (heredoc bodies skipped, `|`, `&&` and `;` split)."""
    lines = iter(block.text.splitlines())
    for line in lines:
        heredoc = re.search(r"<<'?(\w+)'?", line)
        if heredoc:
            for body in lines:
                if body == heredoc.group(1):
                    break
        words = shlex.split(line.split(" #")[0] if not line.lstrip().startswith("#") else "", posix=True)
        current: list[str] = []
        for word in words:
            if word in ("|", "&&", ";", "||"):
                if current:
                    yield current
                current = []
            elif word.endswith(";") and word != ";":
                current.append(word[:-1])
                yield current
                current = []
            else:
                current.append(word)
        if current:
            yield current


def _program(words: list[str]) -> str:
    first = words[0]
    while "=" in first and not first.startswith("-") and len(words) > 1 and first != "export":
        words = words[1:]
        first = words[0]
    return first.removesuffix("()")


# ---- static ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(GUIDES))
def test_every_command_is_a_known_tool(name: str) -> None:
    found = blocks(GUIDES[name])
    assert sum(b.run for b in found) >= 10, "the walk would run almost nothing of this guide"
    for block in found:
        for words in commands(block):
            program = _program(words)
            if program.startswith(("$", "(")) or "=" in program or program in SHELL_WORDS:
                continue
            known = set(TOOLS) | LOCAL_TOOLS | (set() if block.run else NOT_RUN_TOOLS)
            assert program in known, f"{name} line {block.line}: unknown tool {program!r}"


@pytest.mark.parametrize("name", sorted(GUIDES))
def test_every_gpupool_command_parses(name: str) -> None:
    from gpupool.cli.main import build_parser

    parser = build_parser()
    seen = 0
    for block in blocks(GUIDES[name]):
        for words in commands(block):
            if _program(words) != "gpupool":
                continue
            argv = words[1:]
            argv = argv[: next((i for i, w in enumerate(argv) if w.startswith((">", "<"))), len(argv))]
            args = parser.parse_args([re.sub(r"\$\{?(\w+)\}?", "x", word) for word in argv])
            assert getattr(args, "_run", None), f"{name} line {block.line}: {shlex.join(words)}"
            seen += 1
    assert seen >= 2


@pytest.mark.parametrize("name", sorted(GUIDES))
def test_every_helm_install_waits_for_its_pods(name: str) -> None:
    """The guides wait with helm itself, not with a `rollout status` naming one Deployment."""
    installs = [
        w for b in blocks(GUIDES[name]) for w in commands(b) if w[:3] == ["helm", "upgrade", "--install"]
    ]
    assert installs
    for words in installs:
        assert "--wait" in words and "--timeout" in words, shlex.join(words)
    assert "rollout status" not in GUIDES[name].read_text()


def _assigned(block: Block) -> set[str]:
    return set(re.findall(r"(?:^|\s|export\s+)([A-Z_][A-Z0-9_]*)=", block.text, re.M)) | set(
        re.findall(r"\bfor (\w+) in\b", block.text)
    )


@pytest.mark.parametrize("name", sorted(GUIDES))
def test_nothing_is_used_before_the_guide_made_it(name: str) -> None:
    """Files read come from the repository or an earlier command; variables from earlier assignments."""
    made: set[str] = set()
    assigned = set(STANDARD_VARIABLES)
    for block in blocks(GUIDES[name]):
        text = re.sub(r"<<'?(\w+)'?\n.*?\n\1\n", "\n", block.text, flags=re.S)  # heredoc bodies are data
        for used in re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)\}?", block.text):
            assert used in assigned | _assigned(block), f"{name} line {block.line}: ${used} before it is set"
        for produced in re.findall(r"(?:^|\s)(?:>|--output-file)\s*([\w./-]+\.(?:yaml|json|txt))", text):
            made.add(produced)
        for consumed in re.findall(
            r"(?:(?:^|\s)(?:-f|--values|<)\s+|file://)([\w./-]+\.(?:yaml|json))", text
        ):
            assert consumed in made or (ROOT / consumed).exists(), (
                f"{name} line {block.line}: {consumed} before it exists"
            )
        made |= set(re.findall(r"cat > ([\w./-]+) <<", block.text))
        assigned |= _assigned(block)


@pytest.mark.parametrize("name", sorted(GUIDES))
def test_the_published_chart_and_image_named_are_where_the_release_workflow_publishes(name: str) -> None:
    release = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())["env"]
    text = GUIDES[name].read_text()
    for chart in re.findall(r"oci://[\w./-]+", text):
        assert chart == release["CHART_REPOSITORY"] + "/gpupool", chart
    for image in re.findall(r"ghcr\.io/[\w./-]+", text):
        assert image in (
            release["IMAGE_REPOSITORY"],
            release["CHART_REPOSITORY"].removeprefix("oci://") + "/gpupool",
        )


# ---- the walk ----------------------------------------------------------------------------------
# The real `sam build` installs the layer's dependencies for arm64 with pip: minutes on 2 busy cores.
WALK_TIMEOUT_S = 1500


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@dataclass
class Walk:
    workdir: Path
    env: dict[str, str]
    kubeconfig: Path

    def run(self, parts: list[Block], *, first: bool) -> None:
        """Run blocks in one bash session; the session's variables and functions carry to the next call."""
        body = ["set -euo pipefail"]
        if not first:
            body += ["source ./.walk-session.sh"]
        for block in parts:
            body += [f"echo {shlex.quote(f'@@ {block.section} (line {block.line})')} >&2", block.text]
        body += ["{ export -p; declare -f; } > ./.walk-session.sh"]
        result = subprocess.run(
            ["bash", "-c", "\n".join(body)],
            cwd=self.workdir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=WALK_TIMEOUT_S - 60,
            check=False,
        )
        assert result.returncode == 0, f"the guide stopped:\n{result.stderr[-6000:]}"

    def session(self) -> dict[str, str]:
        """The exported variables of the session after the last run."""
        result = subprocess.run(
            ["bash", "-c", "source ./.walk-session.sh && env -0"],
            cwd=self.workdir,
            env=self.env,
            capture_output=True,
            timeout=60,
            check=True,
        )
        pairs = (item.partition("=") for item in result.stdout.decode().split("\0") if item)
        return {key: value for key, _, value in pairs}


def _workdir(tmp_path: Path) -> Path:
    workdir = tmp_path / "checkout"
    workdir.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv", ".gpupool", ".aws-sam", ".fc-build"):
            (workdir / entry.name).symlink_to(entry)
    return workdir


def real_tools() -> dict[str, str]:
    """The real sam, s, helm and kubectl (`gpupool sandbox build` installs or builds them; a missing
    one fails the test with the command that makes it)."""
    from tests.programs import real_tool

    return {tool: str(real_tool(tool)) for tool in (*REAL, "helm", "kubectl")}


def _tools(tmp_path: Path) -> Path:
    """A folder for PATH: each tool a guide names. helm and kubectl are the real ones; the offline
    subcommands of sam and s (REAL) exec the real tool, the rest of each is its double
    (install_doubles.py)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    doubles = Path(__file__).parent / "install_doubles.py"
    real = real_tools()
    for tool in TOOLS:
        wrapper = bin_dir / tool
        double = f'exec "{sys.executable}" "{doubles}" {tool} "$@"'
        if tool in REAL:
            offline = "|".join(REAL[tool])
            body = f'case "$1" in\n  {offline}) exec "{real[tool]}" "$@" ;;\nesac\n{double}\n'
        else:
            body = double + "\n"
        wrapper.write_text("#!/bin/sh\n" + body)
        wrapper.chmod(0o755)
    for tool in ("helm", "kubectl"):
        (bin_dir / tool).symlink_to(real[tool])
    return bin_dir


@pytest.fixture(scope="module")
def walk_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """One real control plane for every walk of this module (tests/e2e/walk_cluster.py); each walk
    leaves it as it found it."""
    from tests.programs import require_built

    require_built("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "helm")
    for tool in ("bash", "openssl", "base64"):
        assert shutil.which(tool), f"the walk needs {tool} (apt-get install it)"
    with walk_cluster.started(tmp_path_factory.mktemp("walk-control-plane")) as plane:
        yield plane


@pytest.fixture
def walk(tmp_path: Path, walk_plane: ControlPlane) -> Iterator[Walk]:
    from moto.server import ThreadedMotoServer

    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    moto.start()
    host, port = moto.get_host_and_port()
    # moto's backends are process-wide: start from empty, whatever an earlier test left in them.
    urllib.request.urlopen(
        urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST"), timeout=10
    ).close()
    home = tmp_path / "home"
    home.mkdir()
    kubeconfig = walk_cluster.admin_kubeconfig(walk_plane, tmp_path / "kubeconfig")
    env = {
        "PATH": f"{_tools(tmp_path)}:{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig),
        "SAM_CLI_TELEMETRY": "0",
        "HELM_CACHE_HOME": str(home / ".cache" / "helm"),
        "HELM_CONFIG_HOME": str(home / ".config" / "helm"),
        "HELM_DATA_HOME": str(home / ".local" / "share" / "helm"),
        "GPUPOOL_DOUBLES_STATE": str(tmp_path / "doubles-state.json"),
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "walk-access-key",
        "AWS_SECRET_ACCESS_KEY": "walk-secret-key",
        "AWS_EC2_METADATA_DISABLED": "true",
        **USER_INPUTS,
        "LANG": "C.UTF-8",
    }
    walk = Walk(_workdir(tmp_path), env, kubeconfig)
    try:
        yield walk
    finally:
        try:
            walk_cluster.reset(env)
        finally:
            moto.stop()


def _relay_deployment(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """The Deployment whose pod runs the relay (whatever the chart names it)."""
    (deployment,) = [
        d
        for d in documents
        if d["kind"] == "Deployment"
        and any(c["name"] == "relay" for c in d["spec"]["template"]["spec"]["containers"])
    ]
    return deployment


def _relay_command(
    documents: list[dict[str, Any]], receiver: Any, tmp_path: Path, kubeconfig: Path
) -> tuple[list[str], dict[str, str], str]:
    """The relay container's rendered args, run here: loopback listeners, the rendered TLS pair,
    the Function URLs pointed at `receiver`, the cluster's kubeconfig."""
    deployment = _relay_deployment(documents)
    pod = {**deployment["spec"]["template"]["spec"], "_namespace": deployment["metadata"]["namespace"]}
    (relay,) = [c for c in pod["containers"] if c["name"] == "relay"]
    (tls,) = [d for d in documents if d["kind"] == "Secret" and d.get("type") == "kubernetes.io/tls"]
    files = {"tls.crt": tmp_path / "tls.crt", "tls.key": tmp_path / "tls.key"}
    for key, path in files.items():
        path.write_bytes(base64.b64decode(tls["data"][key]))
    metrics = _free_port()
    args: list[str] = []
    for arg in relay["args"]:
        flag, _, value = arg.partition("=")
        if flag in ("--listen", "--extender-listen"):
            arg = f"{flag}=127.0.0.1:{_free_port()}"
        elif flag == "--metrics-listen":
            arg = f"{flag}=127.0.0.1:{metrics}"
        elif flag in ("--tls-cert", "--tls-key"):
            arg = f"{flag}={files['tls.crt' if flag == '--tls-cert' else 'tls.key']}"
        elif flag == "--forward":
            function = value.split("=", 1)[0]
            arg = f"--forward={function}={receiver.url('/' + function)}"
        elif flag == "--hmac-secret-file":
            folder, key = value.rsplit("/", 1)
            arg = f"{flag}={_mounted_secret(pod, relay, folder, kubeconfig, tmp_path) / key}"
        elif flag == "--fc-credentials-dir":
            arg = f"{flag}={_mounted_secret(pod, relay, value, kubeconfig, tmp_path)}"
        args.append(arg)
    command = [sys.executable, "-m", "gpupool.cli.main", *args, "--kubeconfig", str(kubeconfig)]
    env = {
        **os.environ,
        "POD_NAMESPACE": deployment["metadata"]["namespace"],
        "AWS_ACCESS_KEY_ID": "relay-key",
        "AWS_SECRET_ACCESS_KEY": "relay-secret",
    }
    for name in ("AWS_SESSION_TOKEN", "ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_PROVIDER_ARN"):
        env.pop(name, None)
    return command, env, f"http://127.0.0.1:{metrics}/readyz"


def _mounted_secret(
    pod: dict[str, Any], container: dict[str, Any], folder: str, kubeconfig: Path, tmp_path: Path
) -> Path:
    """The folder `folder` of the container, as the kubelet would mount it: a file per key of the
    Secret whose volume is mounted there, read from the cluster (empty when an `optional` Secret
    does not exist)."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == folder]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    local = tmp_path / f"mounted-{mount['name']}"
    local.mkdir()
    try:
        secret = api.read_namespaced_secret(volume["secret"]["secretName"], pod["_namespace"])
    except ApiException as error:
        if error.status == 404 and volume["secret"].get("optional"):
            return local
        raise
    for key, data in (secret.data or {}).items():
        (local / key).write_bytes(base64.b64decode(data))
    return local


def _relay_delivers_a_signed_node_joined(
    documents: list[dict[str, Any]], receiver: Any, walk: Walk, tmp_path: Path
) -> dict[str, Any]:
    from kubernetes import client, config

    command, env, ready = _relay_command(documents, receiver, tmp_path, walk.kubeconfig)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                if httpx.get(ready, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the relay never became ready"
            time.sleep(0.2)
        api = config.new_client_from_config(config_file=str(walk.kubeconfig))
        client.CoreV1Api(api).create_node(
            {
                "metadata": {
                    "name": "gpu-node-1",
                    "labels": {"tensor-fusion.ai/node-provisioner": "tensor-fusion-first-x1"},
                }
            }
        )
        deadline = time.monotonic() + 60
        while not [r for r in receiver.received if r.event["type"].endswith(".node.joined")]:
            assert not receiver.refused, f"a delivery was refused: {receiver.refused}"
            failed = receiver.failures() if hasattr(receiver, "failures") else []
            assert not failed, f"a function did not handle a delivery: {failed}"
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            assert time.monotonic() < deadline, "no node.joined delivered"
            time.sleep(0.1)
        (joined,) = [r for r in receiver.received if r.event["type"].endswith(".node.joined")]
        assert joined.path == "/bind" and not receiver.refused
        event: dict[str, Any] = joined.event
        return event
    finally:
        process.terminate()
        process.wait(timeout=30)


def _nothing_left(state: dict[str, Any], walk: Walk, *, kept_roles: frozenset[str] = frozenset()) -> None:
    """Nothing the guide made is left (`kept_roles`: roles that were there before it)."""
    state = {
        **state,
        "iam_roles": {k: v for k, v in (state.get("iam_roles") or {}).items() if k not in kept_roles},
    }
    for kind in ("stacks", "eks", "iam_roles", "instance_profiles", "ecr", "ack", "mns_queues"):
        assert not state.get(kind), f"the uninstall left {kind}: {state.get(kind)}"
    assert not state.get("s_deployed")
    assert not walk_cluster.releases(walk.env), "the uninstall left a helm release"
    assert "tensor-fusion.ai" not in walk_cluster.tool(walk.env, "kubectl", "get", "crd", "-o", "name")
    namespaces = walk_cluster.tool(walk.env, "kubectl", "get", "namespaces", "-o", "name").split()
    assert {n.removeprefix("namespace/") for n in namespaces} <= walk_cluster.KEPT_NAMESPACES, namespaces


def _split(guide: Path, text: str | None = None) -> tuple[list[Block], list[Block]]:
    run = [b for b in blocks(guide, text) if b.run]
    install = [b for b in run if "Uninstall" not in b.section]
    return install, [b for b in run if "Uninstall" in b.section]


@pytest.mark.slow
@pytest.mark.timeout(WALK_TIMEOUT_S)
def test_the_eks_guide_installs_and_uninstalls(walk: Walk, tmp_path: Path) -> None:
    from botocore.credentials import Credentials

    from gpupool.testing.relay_receiver import RelayReceiver

    install, uninstall = _split(GUIDES["eks"])
    walk.run(install, first=True)
    state = load_state_at(walk)
    assert state["pushed"] == [f"{walk.session()['IMAGE_REPOSITORY']}:{walk.session()['VERSION']}"]
    walk_cluster.every_workload_runs_a_pushed_image(walk.env, walk.kubeconfig, set(state["pushed"]))
    documents, namespace = walk_cluster.deployed(walk.env)
    (stack,) = state["stacks"].values()
    assert namespace == stack["RelayNamespace"]
    (pod,) = [
        d["spec"]["template"]["spec"]
        for d in documents
        if d["kind"] == "Deployment"
        and any(c["name"] == "relay" for c in d["spec"]["template"]["spec"]["containers"])
    ]
    assert pod["serviceAccountName"] in {
        d["metadata"]["name"] for d in documents if d["kind"] == "ServiceAccount"
    }
    assert (
        pod["serviceAccountName"] == stack["RelayServiceAccount"]
    )  # whom the Pod Identity association trusts
    credentials = Credentials("relay-key", "relay-secret")
    with RelayReceiver(
        auth="sigv4", credentials=credentials, region=walk.session()["AWS_REGION"]
    ) as receiver:
        event = _relay_delivers_a_signed_node_joined(documents, receiver, walk, tmp_path)
    assert event["source"] == f"/gpupool/relay/{stack['ClusterName']}"
    walk.run(uninstall, first=False)
    _nothing_left(load_state_at(walk), walk)


def _ack_walk_to_the_relay(walk: Walk, tmp_path: Path, guide: str) -> tuple[dict[str, Any], Any]:
    """The ACK guide's install blocks (of `guide`, its text), then the relay delivering a signed
    node.joined to bind through Function Compute as deployed; the delivery's handler answer."""
    from doubles_fc import function_compute

    install, _ = _split(GUIDES["ack"], guide)
    walk.run(install, first=True)
    walk_cluster.every_workload_runs_a_pushed_image(
        walk.env, walk.kubeconfig, set(load_state_at(walk).get("pushed") or [])
    )
    documents, _ = walk_cluster.deployed(walk.env)
    with function_compute(lambda: load_state_at(walk), run={"bind"}) as functions:
        event = _relay_delivers_a_signed_node_joined(documents, functions, walk, tmp_path)
        (answer,) = [a for a in functions.function_answers if a[1].endswith(".node.joined")]
    return event, answer


@pytest.mark.slow
@pytest.mark.timeout(WALK_TIMEOUT_S)
def test_the_ack_guide_installs_and_uninstalls(walk: Walk, tmp_path: Path) -> None:
    from kubernetes import client, config

    from gpupool.adapters.kube.deliveries import LABEL_RECORD

    event, (function, _, status, body) = _ack_walk_to_the_relay(walk, tmp_path, GUIDES["ack"].read_text())
    assert event["source"] == "/gpupool/relay/tensor-fusion"
    assert function == "bind" and status == 200 and json.loads(body)["status"] == "handled", body
    state = load_state_at(walk)
    # The relay signs as a RAM user whose only policy is s.yaml's vars.relayInvokePolicy.
    (relay_user,) = state["ram"]["users"].values()
    assert [state["ram"]["policies"][p] for p in relay_user["policies"]] == [
        state["s_deployed"]["relay_invoke_policy"]
    ]
    # The functions' kubeconfig, read from KMS, is the functions' ServiceAccount token, nothing else.
    (stored,) = state["kms"]["secrets"].values()
    (user,) = yaml.safe_load(stored["data"])["users"]
    api = client.CoreV1Api(config.new_client_from_config(config_file=str(walk.kubeconfig)))
    token = api.read_namespaced_secret("gpupool-functions-token", "gpupool-system").data["token"]
    assert user["user"] == {"token": base64.b64decode(token).decode()}
    # bind recorded the delivery in its ledger (a Lease), through that kubeconfig.
    leases = client.CoordinationV1Api(api.api_client).list_namespaced_lease(
        "default", label_selector=LABEL_RECORD
    )
    assert len(leases.items) == 1
    assert not (walk.workdir / "functions-kubeconfig.yaml").exists(), "the token file is left behind"
    _, uninstall = _split(GUIDES["ack"])
    walk.run(uninstall, first=False)
    state = load_state_at(walk)
    _nothing_left(state, walk)
    assert not state["ram"]["users"] and not state["ram"]["policies"]
    assert not state["kms"]["secrets"]
    assert {key["state"] for key in state["kms"]["keys"].values()} == {"PendingDeletion"}


# Each break of the ACK guide, and the refusal the walk must stop at.
BROKEN_ACK_GUIDES = {
    "image-never-pushed": (  # KWOK runs any image: the walk itself must see the chart's is the pushed one
        '-f gpupool-values.yaml --set image.repository="$IMAGE_REPOSITORY" ',
        '-f gpupool-values.yaml --set image.repository="$IMAGE_REPOSITORY-elsewhere" ',
        "which the guide never pushed",
    ),
    "wrong-access-key-secret": (  # the Secret gets another secret than the key's
        """key["AccessKeySecret"])' | kubectl -n "$NAMESPACE" create secret generic """
        "tf-cloud-vendor-credentials --from-env-file=/dev/stdin\n",
        """key["AccessKeySecret"][::-1])' | kubectl -n "$NAMESPACE" create secret generic """
        "tf-cloud-vendor-credentials --from-env-file=/dev/stdin\n",
        "ACS3 signature does not match",
    ),
    "no-kms-secret": (
        "aliyun kms CreateSecret ",
        "true aliyun kms CreateSecret ",
        "GPUPOOL_KUBECONFIG_SECRET=gpupool/kubeconfig: KMS secret gpupool/kubeconfig: cannot read it",
    ),
    "relay-policy-not-attached": (
        "aliyun ram AttachPolicyToUser ",
        "true aliyun ram AttachPolicyToUser ",
        "may not fc:InvokeFunction on acs:fc:cn-hangzhou:",
    ),
}


@pytest.mark.slow
@pytest.mark.timeout(WALK_TIMEOUT_S)
@pytest.mark.parametrize("broken", sorted(BROKEN_ACK_GUIDES))
def test_the_ack_walk_stops_at_a_broken_guide(walk: Walk, tmp_path: Path, broken: str) -> None:
    step, replacement, refusal = BROKEN_ACK_GUIDES[broken]
    text = GUIDES["ack"].read_text()
    assert text.count(step) == 1, f"the guide no longer has {step!r}: update this break"
    with pytest.raises(AssertionError) as stopped:
        _ack_walk_to_the_relay(walk, tmp_path, text.replace(step, replacement))
    assert refusal in str(stopped.value), str(stopped.value)[-3000:]


def load_state_at(walk: Walk) -> dict[str, Any]:
    os.environ["GPUPOOL_DOUBLES_STATE"] = walk.env["GPUPOOL_DOUBLES_STATE"]
    try:
        return load_state()
    finally:
        del os.environ["GPUPOOL_DOUBLES_STATE"]


# ---- the self-managed guide ----------------------------------------------------------------------
SELF_MANAGED_CLUSTER = "gpupool-kubean"  # the guide's CLUSTER
KARPENTER_NODE_ROLE = f"KarpenterNodeRole-{SELF_MANAGED_CLUSTER}"


def _moto(walk: Walk, service: str) -> Any:
    """A client of the walk's moto, with the walk's credentials."""
    import boto3

    return boto3.client(
        service,
        region_name="us-east-1",
        endpoint_url=walk.env["AWS_ENDPOINT_URL"],
        aws_access_key_id=walk.env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=walk.env["AWS_SECRET_ACCESS_KEY"],
    )


def _self_managed_account(walk: Walk) -> None:
    """What the guide starts from, made in the account before it runs: the cluster's VPC (moto)
    with private subnets carrying Karpenter's discovery tag and the control plane's security group,
    Karpenter's node role."""
    ec2 = _moto(walk, "ec2")
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    for index, zone in enumerate("abc"):
        subnet = ec2.create_subnet(
            VpcId=vpc, CidrBlock=f"10.20.{index}.0/24", AvailabilityZone=f"us-east-1{zone}"
        )
        tag = {"Key": "karpenter.sh/discovery", "Value": SELF_MANAGED_CLUSTER}
        ec2.create_tags(Resources=[subnet["Subnet"]["SubnetId"]], Tags=[tag])
    group = ec2.create_security_group(
        GroupName="kubean-control-plane", Description="control plane", VpcId=vpc
    )
    ec2.create_tags(
        Resources=[group["GroupId"]], Tags=[{"Key": "kubernetes.io/role", "Value": "control-plane"}]
    )
    trust = '{"Version": "2012-10-17", "Statement": []}'
    doubles = Path(__file__).parent / "install_doubles.py"
    subprocess.run(
        [sys.executable, str(doubles), "aws", "iam", "create-role", "--role-name", KARPENTER_NODE_ROLE,
         "--assume-role-policy-document", trust],
        env=walk.env, cwd=walk.workdir, check=True, capture_output=True,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(WALK_TIMEOUT_S)
def test_the_self_managed_guide_installs_and_uninstalls(walk: Walk, tmp_path: Path) -> None:
    from botocore.credentials import Credentials

    from gpupool.testing.relay_receiver import RelayReceiver

    _self_managed_account(walk)
    install, uninstall = _split(GUIDES["self-managed"])
    walk.run(install, first=True)
    session = walk.session()
    state = load_state_at(walk)
    (stack,) = state["stacks"].values()
    assert stack["KubeAccess"] == "kubeconfig-secret" and stack["RelayIdentity"] == "none"
    assert stack["RelayPrincipalArn"] == session["RELAY_ROLE_ARN"]
    assert (
        stack["VpcSubnetIds"].count("subnet-") == 3
        and stack["VpcSecurityGroupIds"] == session["FUNCTIONS_SG"]
    )
    # The relay's role trusts the cluster's own issuer for exactly the chart's ServiceAccount.
    (statement,) = state["iam_roles"]["gpupool-relay"]["Trust"]["Statement"]
    issuer = session["ISSUER_HOST"]
    assert statement["Principal"]["Federated"].endswith(f":oidc-provider/{issuer}")
    assert statement["Condition"]["StringEquals"][f"{issuer}:sub"] == (
        f"system:serviceaccount:{session['NAMESPACE']}:{session['RELEASE']}-scheduler"
    )
    providers = _moto(walk, "iam").list_open_id_connect_providers()["OpenIDConnectProviderList"]
    assert [p["Arn"] for p in providers] == [statement["Principal"]["Federated"]]
    # The issuer's two documents in the bucket are the ones the API server serves.
    for key, path in (
        (".well-known/openid-configuration", "/.well-known/openid-configuration"),
        ("openid/v1/jwks", "/openid/v1/jwks"),
    ):
        published = _moto(walk, "s3").get_object(Bucket=f"{SELF_MANAGED_CLUSTER}-oidc", Key=key)
        served = walk_cluster.tool(walk.env, "kubectl", "get", "--raw", path)
        assert json.loads(published["Body"].read()) == json.loads(served), key
    # The functions' kubeconfig, in Secrets Manager under the stack's default name, is the
    # functions' ServiceAccount token for the API server the guide named; no copy is left on disk.
    stored = _moto(walk, "secretsmanager").get_secret_value(SecretId="gpupool/tensor-fusion/kubeconfig")
    kubeconfig = yaml.safe_load(stored["SecretString"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == session["API_SERVER"]
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(config_file=str(walk.kubeconfig)))
    token = api.read_namespaced_secret(f"{session['RELEASE']}-functions-token", session["NAMESPACE"]).data[
        "token"
    ]
    assert kubeconfig["users"][0]["user"] == {"token": base64.b64decode(token).decode()}
    assert not (walk.workdir / "functions-kubeconfig.yaml").exists()
    # The relay gets its role through the mounted web-identity token, and delivers signed events.
    walk_cluster.every_workload_runs_a_pushed_image(walk.env, walk.kubeconfig, set(state["pushed"]))
    documents, _ = walk_cluster.deployed(walk.env)
    deployment = _relay_deployment(documents)
    (relay,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "relay"]
    assert {"name": "AWS_ROLE_ARN", "value": session["RELAY_ROLE_ARN"]} in relay["env"]
    credentials = Credentials("relay-key", "relay-secret")
    with RelayReceiver(auth="sigv4", credentials=credentials, region=session["AWS_REGION"]) as receiver:
        _relay_delivers_a_signed_node_joined(documents, receiver, walk, tmp_path)
    walk.run(uninstall, first=False)
    _nothing_left(load_state_at(walk), walk, kept_roles=frozenset({KARPENTER_NODE_ROLE}))
    assert not _moto(walk, "iam").list_open_id_connect_providers()["OpenIDConnectProviderList"]
    assert not _moto(walk, "secretsmanager").list_secrets()["SecretList"]
    left = _moto(walk, "ec2").describe_security_groups(
        Filters=[{"Name": "group-name", "Values": ["gpupool-functions"]}]
    )["SecurityGroups"]
    assert not left
