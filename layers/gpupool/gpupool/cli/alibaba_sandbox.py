"""The Alibaba Cloud side of `gpupool demo` against a running sandbox: prepare it, join nodes.

Role: `prepare_sandbox(env_file)` gives the sandbox's API server the Alibaba demo manifests
(`gpupool/examples/demo-alibaba`: a TensorFusionCluster with `computingVendor.type: alibaba`
and a GPUNodeClass naming the sandbox ECS account's vSwitches, security group and image, which
the ECS endpoint seeds itself); `join_nodes(env_file)` is one step of the simulated kubelet for
the ECS instances the sandbox endpoint reports (read through the real SDK, as an operator would).

Must not: decide anything, or be imported by code that runs in the cloud.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from gpupool.cli.errors import UserError

__all__ = ["join_nodes", "prepare_sandbox"]

_PLURALS = {"TensorFusionCluster": "tensorfusionclusters", "GPUNodeClass": "gpunodeclasses"}


def _clients(env_file: Path) -> tuple[dict[str, str], Any]:
    from kubernetes import config

    from gpupool.cli.commands.invoke import read_env_file

    env = read_env_file(env_file)
    if not env.get("GPUPOOL_ECS_ENDPOINT") or not env.get("KUBECONFIG"):
        raise UserError(
            f"{env_file}: needs GPUPOOL_ECS_ENDPOINT and KUBECONFIG "
            "(the env file `gpupool sandbox up` writes)"
        )
    try:
        api_client = config.new_client_from_config(config_file=env["KUBECONFIG"])  # type: ignore[no-untyped-call]
    except (OSError, config.ConfigException) as error:
        raise UserError(f"{env['KUBECONFIG']}: not a usable kubeconfig: {error}") from None
    return env, api_client


def prepare_sandbox(env_file: Path) -> list[str]:
    """Create the Alibaba demo manifests in the sandbox's API server (existing ones are kept)."""
    from gpupool.cli.sandbox_objects import create_manifests
    from gpupool.sandbox.demo.world_alibaba import alibaba_demo_manifests

    env, api_client = _clients(env_file)
    done = [
        f"ECS: the sandbox endpoint {env['GPUPOOL_ECS_ENDPOINT']} seeds its own vSwitches, "
        "security group and images"
    ]
    done += create_manifests(api_client, alibaba_demo_manifests(), _PLURALS, kubeconfig=env["KUBECONFIG"])
    return done


def join_nodes(env_file: Path) -> list[str]:
    """One simulated-kubelet step (no boot delay) for the sandbox's ECS instances."""
    from urllib3.exceptions import HTTPError

    from gpupool.adapters.wiring import ConfigError
    from gpupool.adapters.wiring_alibaba import build_alibaba_deps
    from gpupool.core.catalog import load_catalog
    from gpupool.sandbox.demo.kubelet import KubeletSim, SimInstance
    from gpupool.sandbox.demo.objects import ClientObjects, ClientObjectsError
    from gpupool.sandbox.kubeapi import SystemClock
    from gpupool.service.errors import DomainError

    env, api_client = _clients(env_file)
    try:
        compute = build_alibaba_deps(env).compute
    except ConfigError as error:
        raise UserError(f"{env_file}: {error}") from None
    region = env.get("ALIBABA_CLOUD_REGION_ID") or "cn-hangzhou"

    def instances() -> list[SimInstance]:
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

    kubelet = KubeletSim(
        ClientObjects(api_client),
        instances=instances,
        clock=SystemClock(),
        boot_delay=timedelta(0),
        catalog=load_catalog("alibaba"),
    )
    try:
        changes = kubelet.step()
    except (DomainError, ClientObjectsError, HTTPError, OSError) as error:
        raise UserError(f"cannot simulate the kubelet against {env_file}: {error}") from None
    return [
        f"node {c.node} {'joined for' if c.change == 'joined' else 'left with'} claim {c.claim} "
        f"(instance {c.instance_id})"
        for c in changes
    ] or ["no node to register or remove"]
