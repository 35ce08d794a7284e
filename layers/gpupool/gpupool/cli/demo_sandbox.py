"""`gpupool demo --prepare-sandbox` / `--join-nodes`: the demo's part against a running sandbox.

Role: `prepare_sandbox(env_file, cloud)` gives a running `gpupool sandbox` (its env file) what the
demo's functions need there — the demo manifests in its API server (each created, or kept when
it exists) and, on AWS, the demo's tagged VPC, subnets and security group in its EC2 (the ECS
endpoint seeds its own vSwitches, security group and images); `join_nodes(env_file, cloud)` is
one step of the simulated cluster's kubelet (`InstanceNodes`, no join delay) for the instances
the sandbox's cloud reports: a node (GPUNode, GPUs) for each running claim instance, none for a
terminated one; on a real sandbox (`up --real`) annotated for KWOK, which then keeps it Ready.
What differs by cloud is one small piece each (`_Aws`, `_Alibaba`): the env file's keys, how the
instances are read (boto3 against moto; the real ECS adapter against the sandbox endpoint, as an
operator would), the errors that mean "cannot reach it", and the next command.
A sandbox plays one cloud: the one its TensorFusionCluster's computingVendor.type names once
prepared. `refuse_unready_sandbox` (also run by `gpupool invoke --env`) says exactly what to run
when nothing answers at the env file's API server (`gpupool sandbox up`) or when the sandbox was
prepared for the other cloud (`gpupool sandbox down`, `up`, `--prepare-sandbox --cloud OTHER`).

Must not: decide anything, or be imported by code that runs in the cloud.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from gpupool.cli.errors import UserError
from gpupool.core.catalog import Cloud

__all__ = ["join_nodes", "next_step", "prepare_sandbox", "refuse_unready_sandbox"]

Instances = Callable[[], list[Any]]  # SimInstance lists (imported lazily, as every heavy module here)


class _SandboxCloud(Protocol):
    required: tuple[str, ...]
    next_event: str

    def prepare(self, env: dict[str, str]) -> list[str]: ...
    def instances(self, env: dict[str, str], env_file: Path) -> Instances: ...
    def errors(self) -> tuple[type[BaseException], ...]: ...


class _Aws:
    required: tuple[str, ...] = ("AWS_ENDPOINT_URL", "KUBECONFIG")
    next_event = "events/aws/scheduled-event.json"

    @staticmethod
    def _ec2(env: dict[str, str]) -> Any:
        import boto3

        return boto3.client(
            "ec2",
            region_name=env["AWS_REGION"],
            endpoint_url=env["AWS_ENDPOINT_URL"],
            aws_access_key_id=env.get("AWS_ACCESS_KEY_ID", "testing"),
            aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY", "testing"),
        )

    def prepare(self, env: dict[str, str]) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        from gpupool.sandbox.demo.clouds import create_demo_network

        try:
            created = create_demo_network(self._ec2(env))
        except (BotoCoreError, ClientError) as error:
            raise UserError(
                f"cannot prepare the sandbox's EC2 at {env['AWS_ENDPOINT_URL']}: {error}"
            ) from None
        return ["EC2: demo VPC, subnets and security group " + ("created" if created else "already there")]

    def instances(self, env: dict[str, str], env_file: Path) -> Instances:
        from gpupool.sandbox.demo.clouds import ec2_instances

        ec2 = self._ec2(env)
        return lambda: list(ec2_instances(ec2, region=env["AWS_REGION"]))

    def errors(self) -> tuple[type[BaseException], ...]:
        from botocore.exceptions import BotoCoreError, ClientError

        return (BotoCoreError, ClientError)


class _Alibaba:
    required: tuple[str, ...] = ("GPUPOOL_ECS_ENDPOINT", "KUBECONFIG")
    next_event = "events/alibaba/fc-timer.json"

    def prepare(self, env: dict[str, str]) -> list[str]:
        return [
            f"ECS: the sandbox endpoint {env['GPUPOOL_ECS_ENDPOINT']} seeds its own vSwitches, "
            "security group and images"
        ]

    def instances(self, env: dict[str, str], env_file: Path) -> Instances:
        from gpupool.adapters.alibaba.wiring import build_alibaba_deps
        from gpupool.adapters.environment import ConfigError
        from gpupool.simulation.cluster.instance_nodes import SimInstance

        try:
            compute = build_alibaba_deps(env).compute
        except ConfigError as error:
            raise UserError(f"{env_file}: {error}") from None
        region = env.get("ALIBABA_CLOUD_REGION_ID") or "cn-hangzhou"

        def listed() -> list[Any]:
            return [
                SimInstance(
                    instance_id=item.instance_id,
                    state=item.state,
                    claim_name=item.claim_name,
                    instance_type=item.instance_type or "",
                    zone=item.zone or "",
                    region=region,
                    private_dns=f"{region}.{item.instance_id}",
                )
                for item in compute.list_managed()
            ]

        return listed

    def errors(self) -> tuple[type[BaseException], ...]:
        from gpupool.service.errors import DomainError

        return (DomainError,)


_CLOUDS: dict[str, _SandboxCloud] = {"aws": _Aws(), "alibaba": _Alibaba()}


def _answers(url: str) -> bool:
    """Whether something accepts connections at the host and port of `url`."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=2):
            return True
    except OSError:
        return False


def _prepared_cloud(kubeconfig: str, cluster: str) -> str | None:
    """The cloud the sandbox's TensorFusionCluster `cluster` is for (None: not prepared yet)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        found: Any = client.CustomObjectsApi(_api_client(kubeconfig)).get_cluster_custom_object(
            "tensor-fusion.ai", "v1", "tensorfusionclusters", cluster, _request_timeout=10
        )
    except (ApiException, HTTPError, OSError):
        return None
    vendor = str(((found.get("spec") or {}).get("computingVendor") or {}).get("type") or "")
    return None if not vendor else "alibaba" if vendor == "alibaba" else "aws"


def refuse_unready_sandbox(env: dict[str, str], env_file: Path, cloud: str) -> None:
    """For a sandbox's env file: UserError saying what to run when nothing answers at its API
    server, or when it was prepared for the other cloud. Any other env file passes."""
    directory = env.get("GPUPOOL_SANDBOX_DIR")
    url = env.get("GPUPOOL_KUBE_API_URL")
    if not directory or not url:
        return
    if not _answers(url):
        raise UserError(
            f"no sandbox answers at {url} ({env_file} is left from one that stopped): run "
            f"`gpupool sandbox up --background --dir {directory}`, then "
            f"`gpupool demo --prepare-sandbox {env_file} --cloud {cloud}`"
        )
    prepared = _prepared_cloud(env["KUBECONFIG"], env.get("GPUPOOL_CLUSTER_NAME") or "tensor-fusion")
    if prepared is not None and prepared != cloud:
        raise UserError(
            f"the sandbox in {directory} is prepared for {prepared} and plays one cloud: use --cloud "
            f"{prepared}, or for {cloud} start a fresh one: `gpupool sandbox down --dir {directory}; "
            f"gpupool sandbox up --background --dir {directory}; "
            f"gpupool demo --prepare-sandbox {env_file} --cloud {cloud}`"
        )


def _env(env_file: Path, cloud: Cloud) -> dict[str, str]:
    from gpupool.cli.env_file import read_env_file

    env = read_env_file(env_file)
    required = _CLOUDS[cloud].required
    if not all(env.get(key) for key in required):
        raise UserError(
            f"{env_file}: needs {' and '.join(required)} (the env file `gpupool sandbox up` writes)"
        )
    env.setdefault("AWS_REGION", env.get("AWS_DEFAULT_REGION") or "us-east-1")
    refuse_unready_sandbox(env, env_file, cloud)
    return env


def _api_client(kubeconfig: str) -> Any:
    from kubernetes import config

    try:
        return config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except (OSError, config.ConfigException) as error:
        raise UserError(f"{kubeconfig}: not a usable kubeconfig: {error}") from None


def _create_manifests(api_client: Any, cloud: Cloud, *, kubeconfig: str) -> list[str]:
    """One line per demo manifest: created or already there. UserError when refused or unreachable."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    from gpupool.sandbox.demo.world import DEMO_KINDS, demo_manifests

    done: list[str] = []
    custom = client.CustomObjectsApi(api_client)
    try:
        for manifest in demo_manifests(cloud):
            what = f"{manifest['kind']}/{manifest['metadata']['name']}"
            try:
                custom.create_cluster_custom_object(
                    "tensor-fusion.ai", "v1", DEMO_KINDS[manifest["kind"]], manifest
                )
                done.append(f"Kubernetes: {what} created")
            except ApiException as error:
                if error.status != 409:
                    raise UserError(f"cannot create {what}: {error.status} {error.reason}") from None
                done.append(f"Kubernetes: {what} already there")
    except (HTTPError, OSError) as error:
        raise UserError(f"cannot reach the sandbox's API server ({kubeconfig}): {error}") from None
    return done


def prepare_sandbox(env_file: Path, cloud: Cloud) -> list[str]:
    """The demo's cloud side and manifests in a running sandbox (what exists is kept)."""
    env = _env(env_file, cloud)
    api_client = _api_client(env["KUBECONFIG"])
    done = _CLOUDS[cloud].prepare(env)
    return done + _create_manifests(api_client, cloud, kubeconfig=env["KUBECONFIG"])


def next_step(env_file: Path, cloud: Cloud) -> str:
    """What to run after `--prepare-sandbox`."""
    return f"next: gpupool invoke launch {_CLOUDS[cloud].next_event} --cloud {cloud} --env {env_file}"


def _node_annotations(env: dict[str, str]) -> dict[str, str]:
    """On a real sandbox (`up --real`), KWOK's annotation: KWOK then plays the nodes' kubelets
    (Ready, heartbeat Lease) — without it the node controller marks them NotReady and taints them
    unreachable within a minute. The embedded API server has no node controller: nothing to add."""
    from gpupool.sandbox.files import SandboxFiles

    directory = env.get("GPUPOOL_SANDBOX_DIR")
    state = SandboxFiles.at(directory).read_state() if directory else None
    if not state or not state.get("real"):
        return {}
    from gpupool.sandbox.cluster.controlplane import KWOK_NODE_ANNOTATION, KWOK_NODE_VALUE

    return {KWOK_NODE_ANNOTATION: KWOK_NODE_VALUE}


def join_nodes(env_file: Path, cloud: Cloud) -> list[str]:
    """One simulated-kubelet step (no join delay) against a running sandbox."""
    from urllib3.exceptions import HTTPError

    from gpupool.core.catalog import load_catalog
    from gpupool.sandbox.demo.objects import ClientObjects, ClientObjectsError
    from gpupool.sandbox.kubeapi import SystemClock
    from gpupool.simulation.cluster.fates import CloudFates, FatesConfig
    from gpupool.simulation.cluster.instance_nodes import InstanceNodes
    from gpupool.simulation.cluster.json_store import JsonStore
    from gpupool.simulation.cluster.kubelet import Kubelet

    env = _env(env_file, cloud)
    api_client = _api_client(env["KUBECONFIG"])
    piece = _CLOUDS[cloud]
    clock = SystemClock()
    store = JsonStore(ClientObjects(api_client))
    nodes = InstanceNodes(
        Kubelet(store, catalog=load_catalog(cloud), clock=clock),
        instances=piece.instances(env, env_file),
        clock=clock,
        fates=CloudFates(FatesConfig.fixed()),
        node_annotations=_node_annotations(env),
    )
    unreachable: tuple[type[BaseException], ...] = (
        *piece.errors(),
        ClientObjectsError,
        HTTPError,
        OSError,
        ValueError,  # an object the API server holds that does not validate
    )
    try:
        changes = nodes.step()
    except unreachable as error:
        raise UserError(f"cannot simulate the kubelet against {env_file}: {error}") from None
    return [
        f"node {c.node} {'joined for' if c.change == 'joined' else 'left with'} claim {c.claim} "
        f"(instance {c.instance_id})"
        for c in changes
    ] or ["no node to register or remove"]
