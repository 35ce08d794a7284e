"""`gpupool demo [--cloud aws|alibaba]`: the whole Provisioned story on embedded defaults, as a timeline.

With `--cloud alibaba` the same story runs on the sandbox ECS (`AlibabaSimWorld`) through the FC
handlers (`functions/*/index.py`) and `build_alibaba_deps`; `--prepare-sandbox` / `--join-nodes`
then act on a running sandbox's ECS side (`gpupool.cli.alibaba_sandbox`).

Role: start (in this process) the embedded Kubernetes API server on a simulated clock and an
EC2 account in moto (`gpupool.sandbox.demo.world_aws.SimWorld`); wire the real launch, bind
and compact handlers (`functions/*/app.py`, found as `gpupool invoke` finds them) to the real
service and adapters through `build_aws_deps(world.environ)`, with the world's clock and
repeatable claim-name suffixes; run the scenario (`gpupool.sandbox.demo.story.Simulation`):
a pool with a minimum → launch → instances boot and nodes join → bind → a workload spike
raises capacity to keep the warm reserve → the spike ends → after the 5-minute protection,
compaction trims back to the minimum. Prints the timeline (simulated time, who acted, what
the functions did and why); `--json` prints it as JSON. Exit 0 when every invocation
succeeded, 1 when one reported an error.

Must not: decide anything or re-implement the service (it only wires and prints).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from gpupool.cli.errors import UserError

NAME = "demo"
HELP = "run the Provisioned story locally (embedded API server, moto EC2 or sandbox ECS, simulated clock)"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the timeline and final state as JSON")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show every plan action of every invocation"
    )
    parser.add_argument("--functions-dir", type=Path, metavar="DIR", help="where <FUNCTION>/app.py lives")
    parser.add_argument(
        "--prepare-sandbox",
        type=Path,
        metavar="ENV_FILE",
        help="instead of the story: give a running `gpupool sandbox` (its D/env) the demo's network "
        "and manifests, ready for `gpupool invoke`",
    )
    parser.add_argument(
        "--join-nodes",
        type=Path,
        metavar="ENV_FILE",
        help="instead of the story: one step of the simulated kubelet against a running sandbox: a node "
        "(GPUNode, GPUs) for each running claim instance, none for a terminated one",
    )
    parser.add_argument(
        "--cloud",
        choices=["aws", "alibaba"],
        default="aws",
        help="aws (default: EC2 in moto, Lambda handlers) or alibaba (the sandbox ECS, FC handlers)",
    )
    parser.add_argument(
        "--story",
        choices=["scale", "never-join"],
        default="scale",
        help="scale (default): launch, bind, spike, compaction; never-join: the registration timeout",
    )
    parser.add_argument(
        "--mode",
        choices=["provisioned", "karpenter", "autoselect"],
        default="provisioned",
        help="provisioningMode to play: provisioned (default, the --story), karpenter or autoselect "
        "(with a simulated Karpenter; docs/provisioning-modes.md)",
    )


def _karpenter_story(world: Any, invoke: Any, args: argparse.Namespace) -> int:
    from gpupool.cli.commands.invoke import quiet_handler_output
    from gpupool.sandbox.demo.karpenter_story import MODES, KarpenterStory
    from gpupool.sandbox.demo.report import render_timeline

    story = KarpenterStory(world, invoke, args.mode)
    with quiet_handler_output(verbose=False):
        timeline = story.run()
    errors = [f"{e.summary}: {err}" for e in timeline for err in (e.outcome or {}).get("errors") or []]
    if args.json:
        print(
            json.dumps(
                {"mode": args.mode, "timeline": [e.to_json() for e in timeline]}, indent=2, default=str
            )
        )
        return 1 if errors else 0
    print(f"gpupool demo — {args.mode} mode (embedded API server, simulated Karpenter, simulated clock)")
    print(MODES[args.mode])
    print()
    for line in render_timeline(timeline, start=story.start, verbose=args.verbose):
        print(line)
    print()
    print("final state:")
    for claim in world.objects.list("tensor-fusion.ai", "gpunodeclaims"):
        print(f"  claim {claim['metadata']['name']}: {(claim.get('status') or {}).get('phase')}")
    for nodeclaim in world.objects.list("karpenter.sh", "nodeclaims"):
        status = nodeclaim.get("status") or {}
        print(f"  NodeClaim {nodeclaim['metadata']['name']}: node {status.get('nodeName') or '(none yet)'}")
    pending = [p["metadata"]["name"] for p in world.objects.list("", "pods") if not p["spec"].get("nodeName")]
    if args.mode == "autoselect":
        print(f"  pods still pending: {', '.join(pending) or 'none'}")
    for error in errors:
        print(f"error: {error}")
    return 1 if errors else 0


def _errors(result: Any) -> list[str]:
    found: list[str] = []
    for entry in result.timeline:
        outcome: Mapping[str, Any] = entry.outcome or {}
        found += [f"{entry.summary}: {error}" for error in outcome.get("errors") or []]
        if entry.outcome is not None and outcome.get("status") not in ("handled", "ignored"):
            found.append(f"{entry.summary}: status {outcome.get('status')}")
    return found


_HEADINGS = {
    "aws": "Provisioned mode on AWS (embedded API server + moto EC2, simulated clock)",
    "alibaba": "Provisioned mode on Alibaba Cloud (embedded API server + sandbox ECS, FC, simulated clock)",
}


def _print_text(result: Any, *, story: str, verbose: bool, cloud: str = "aws") -> None:
    from gpupool.sandbox.demo.report import render_timeline
    from gpupool.sandbox.demo.story import STORIES

    print(f"gpupool demo — {_HEADINGS[cloud]}")
    print(f"story {story}: {STORIES[story][0]}")
    print(f"start {result.start.isoformat()}; times below are minutes:seconds after it")
    print()
    for line in render_timeline(result.timeline, start=result.start, verbose=verbose):
        print(line)
    final = result.final
    print()
    print(f"{result.quiet_ticks} schedule tick(s) found nothing to change and are not listed.")
    print("final state:")
    print(f"  pool tensor-fusion-elastic: {final.pool_phase}")
    for name, phase in sorted(final.claims.items()):
        history = " → ".join(result.claim_phases.get(name, [phase]))
        print(f"  claim {name}: {history}")
    for name, history in sorted(result.claim_phases.items()):
        if name not in final.claims:
            print(f"  claim {name}: {' → '.join(history)}")
    for instance_id, info in sorted(final.instances.items()):
        print(f"  instance {instance_id} ({info['type']}, claim {info['claim']}): {info['state']}")
    for node, claim in sorted(final.nodes.items()):
        print(f"  node {node} (claim {claim})")


def _sandbox_clients(env_file: Path) -> tuple[dict[str, str], Any, Any]:
    """The env file's values, a boto3 EC2 client and a Kubernetes ApiClient for that sandbox."""
    import boto3
    from kubernetes import config

    from gpupool.cli.commands.invoke import read_env_file

    env = read_env_file(env_file)
    endpoint, kubeconfig = env.get("AWS_ENDPOINT_URL"), env.get("KUBECONFIG")
    if not endpoint or not kubeconfig:
        raise UserError(
            f"{env_file}: needs AWS_ENDPOINT_URL and KUBECONFIG (the env file `gpupool sandbox up` writes)"
        )
    env.setdefault("AWS_REGION", env.get("AWS_DEFAULT_REGION") or "us-east-1")
    ec2 = boto3.client(
        "ec2",
        region_name=env["AWS_REGION"],
        endpoint_url=endpoint,
        aws_access_key_id=env.get("AWS_ACCESS_KEY_ID", "testing"),
        aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY", "testing"),
    )
    try:
        api_client = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except (OSError, config.ConfigException) as error:
        raise UserError(f"{kubeconfig}: not a usable kubeconfig: {error}") from None
    return env, ec2, api_client


def join_nodes(env_file: Path) -> list[str]:
    """One simulated-kubelet step (no boot delay) against a running sandbox."""
    from botocore.exceptions import BotoCoreError, ClientError
    from urllib3.exceptions import HTTPError

    from gpupool.sandbox.demo.kubelet import KubeletSim, ec2_instances
    from gpupool.sandbox.demo.objects import ClientObjects, ClientObjectsError
    from gpupool.sandbox.kubeapi import SystemClock

    env, ec2, api_client = _sandbox_clients(env_file)
    kubelet = KubeletSim(
        ClientObjects(api_client),
        instances=lambda: ec2_instances(ec2, region=env["AWS_REGION"]),
        clock=SystemClock(),
        boot_delay=timedelta(0),
    )
    try:
        changes = kubelet.step()
    except (BotoCoreError, ClientError, ClientObjectsError, HTTPError, OSError) as error:
        raise UserError(f"cannot simulate the kubelet against {env_file}: {error}") from None
    return [
        f"node {c.node} {'joined for' if c.change == 'joined' else 'left with'} claim {c.claim} "
        f"(instance {c.instance_id})"
        for c in changes
    ] or ["no node to register or remove"]


def prepare_sandbox(env_file: Path) -> list[str]:
    """Create the demo network in the sandbox's EC2 and the demo manifests in its API server."""
    from botocore.exceptions import BotoCoreError, ClientError

    from gpupool.cli.sandbox_objects import create_manifests
    from gpupool.sandbox.demo.world_aws import DEMO_KINDS, create_demo_network, demo_manifests

    env, ec2, api_client = _sandbox_clients(env_file)
    endpoint = env["AWS_ENDPOINT_URL"]
    try:
        created = create_demo_network(ec2)
    except (BotoCoreError, ClientError) as error:
        raise UserError(f"cannot prepare the sandbox's EC2 at {endpoint}: {error}") from None
    done = ["EC2: demo VPC, subnets and security group " + ("created" if created else "already there")]
    done += create_manifests(api_client, demo_manifests(), DEMO_KINDS, kubeconfig=env["KUBECONFIG"])
    return done


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    if args.cloud == "alibaba" and (args.join_nodes is not None or args.prepare_sandbox is not None):
        from gpupool.cli import alibaba_sandbox

        if args.join_nodes is not None:
            print("\n".join(alibaba_sandbox.join_nodes(args.join_nodes)))
            return 0
        print("\n".join(alibaba_sandbox.prepare_sandbox(args.prepare_sandbox)))
        print(
            "next: gpupool invoke launch events/alibaba/fc-timer.json --cloud alibaba "
            f"--env {args.prepare_sandbox}"
        )
        return 0
    if args.join_nodes is not None:
        for line in join_nodes(args.join_nodes):
            print(line)
        return 0
    if args.prepare_sandbox is not None:
        for line in prepare_sandbox(args.prepare_sandbox):
            print(line)
        print(
            "next: gpupool invoke launch events/aws/scheduled-event.json --cloud aws "
            f"--env {args.prepare_sandbox}"
        )
        return 0

    from gpupool.adapters.wiring import build_aws_deps
    from gpupool.adapters.wiring_alibaba import build_alibaba_deps
    from gpupool.cli.commands.invoke import (
        FUNCTIONS,
        call_handler,
        load_function,
        make_handler,
        quiet_handler_output,
    )
    from gpupool.sandbox.demo.story import STORIES, Simulation
    from gpupool.sandbox.demo.world_alibaba import AlibabaSimWorld
    from gpupool.sandbox.demo.world_aws import SimWorld

    alibaba = args.cloud == "alibaba"
    modules = {name: load_function(name, args.functions_dir, cloud=args.cloud) for name in FUNCTIONS}
    with AlibabaSimWorld() if alibaba else SimWorld() as world:
        build = build_alibaba_deps if alibaba else build_aws_deps
        deps = replace(build(world.environ), clock=world.clock, new_suffix=world.new_suffix)
        handlers = {name: make_handler(module, lambda: deps) for name, module in modules.items()}

        def invoke(function: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
            return call_handler(handlers[function], event, as_bytes=alibaba)

        if args.mode != "provisioned":  # Karpenter and AutoSelect: their own story module
            return _karpenter_story(world, invoke, args)

        with quiet_handler_output(verbose=False):
            result = Simulation(world, invoke, STORIES[args.story][1]).run()
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        _print_text(result, story=args.story, verbose=args.verbose, cloud=args.cloud)
    errors = _errors(result)
    if errors and not args.json:
        print()
        print(f"{len(errors)} invocation(s) reported errors:")
        for error in errors:
            print(f"  {error}")
    return 1 if errors else 0
