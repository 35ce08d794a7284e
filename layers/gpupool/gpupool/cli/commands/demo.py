"""`gpupool demo [--cloud aws|alibaba]`: the whole Provisioned story on embedded defaults, as a timeline.

Role: start (in this process) the embedded Kubernetes API server on a simulated clock over the
cloud (`gpupool.sandbox.demo.world.DemoWorld`: an EC2 account in moto, or with `--cloud alibaba`
the sandbox ECS); wire the real launch, bind and compact handlers (`functions/*/app.py`, or the
FC ones `functions/*/index.py`, found as `gpupool invoke` finds them) to the real service and
adapters through `build_aws_deps` / `build_alibaba_deps(world.environ)`, with the world's clock
and repeatable claim-name suffixes (`_wire`, the one place the service meets the world); run the
story (`gpupool.sandbox.demo.provisioned_story`): a pool with a minimum → launch → instances
boot and nodes join → bind → a workload spike raises capacity to keep the warm reserve → the
spike ends → after the 5-minute protection, compaction trims back to the minimum (or `--story
never-join`; `--mode karpenter|autoselect` plays `gpupool.sandbox.demo.karpenter_story`, on AWS).
Prints the timeline (simulated time, who acted, what the functions did and why, through
`gpupool.cli.report`); `--json` prints it as JSON. Exit 0 when every invocation succeeded, 1
when one reported an error. `--prepare-sandbox` / `--join-nodes` act on a running sandbox
instead (`gpupool.cli.demo_sandbox`). A flag that does not apply to what runs is an error, not
ignored (`--story` outside provisioned mode, `--mode karpenter|autoselect` off AWS, the story's
flags with a sandbox step, both sandbox steps at once, `--verbose` with `--json`).

Must not: decide anything or re-implement the service (it only wires and prints).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpupool.cli.errors import UserError
from gpupool.core.catalog import CLOUDS

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
        choices=CLOUDS,
        default="aws",
        help="aws (default: EC2 in moto, Lambda handlers) or alibaba (the sandbox ECS, FC handlers)",
    )
    parser.add_argument(
        "--story",
        choices=["scale", "never-join"],
        help="scale (default): launch, bind, spike, compaction; never-join: the registration timeout "
        "(provisioned mode only)",
    )
    parser.add_argument(
        "--mode",
        choices=["provisioned", "karpenter", "autoselect"],
        help="provisioningMode to play: provisioned (default, the --story), karpenter or autoselect "
        "(with a simulated Karpenter; docs/provisioning-modes.md)",
    )


def _karpenter_story(world: Any, invoke: Any, args: argparse.Namespace) -> int:
    from gpupool.cli.commands.invoke import quiet_handler_output
    from gpupool.cli.report import render_timeline
    from gpupool.sandbox.demo.karpenter_story import MODES, KarpenterStory

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
    from gpupool.cli.report import render_timeline
    from gpupool.sandbox.demo.provisioned_story import STORIES

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


def _wire(world: Any, functions_dir: Path | None) -> Any:
    """`invoke(function, event)`: the real handlers of the world's cloud on the real service and
    adapters, built from the world's environment, on its clock and claim-name suffixes."""
    from dataclasses import replace

    from gpupool.adapters.alibaba.wiring import build_alibaba_deps
    from gpupool.adapters.aws.wiring import build_aws_deps
    from gpupool.cli.commands.invoke import call_handler, load_function, load_handler
    from gpupool.core.intake.routing import FUNCTIONS

    cloud = world.cloud_name
    modules = {name: load_function(name, functions_dir, cloud=cloud) for name in FUNCTIONS}
    build = build_alibaba_deps if cloud == "alibaba" else build_aws_deps
    # The world's clock also stamps the Events, so `kubectl get events` ages them in simulated time.
    deps = replace(build(world.environ, clock=world.clock), new_suffix=world.new_suffix)
    handlers: dict[str, Any] = {
        name: load_handler(module, lambda: deps, environ=world.environ) for name, module in modules.items()
    }

    def invoke(function: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
        return call_handler(handlers[function], event, as_bytes=cloud == "alibaba")

    return invoke


def _refuse_what_does_not_apply(args: argparse.Namespace) -> None:
    """One line for the first flag that does not apply to what this invocation runs."""
    if args.join_nodes is not None and args.prepare_sandbox is not None:
        raise UserError("--prepare-sandbox and --join-nodes are separate steps: run one at a time")
    step = "--join-nodes" if args.join_nodes is not None else "--prepare-sandbox"
    story_flags = (
        ("--json", args.json),
        ("--verbose", args.verbose),
        ("--story", args.story is not None),
        ("--mode", args.mode is not None),
        ("--functions-dir", args.functions_dir is not None),
    )
    if args.join_nodes is not None or args.prepare_sandbox is not None:
        given = next((flag for flag, present in story_flags if present), None)
        if given is not None:
            raise UserError(f"{given} applies to the story, not to {step}: drop it")
        return
    mode = args.mode or "provisioned"
    if args.story is not None and mode != "provisioned":
        raise UserError(
            f"--story plays in provisioned mode; --mode {mode} has a story of its own: drop --story"
        )
    if mode != "provisioned" and args.cloud != "aws":
        raise UserError(f"--mode {mode} plays on AWS only (an EC2NodeClass, g4dn / g5): drop --cloud")
    if args.verbose and args.json:
        raise UserError("--verbose applies to the printed timeline; --json prints every invocation: use one")


def run(args: argparse.Namespace) -> int:
    _refuse_what_does_not_apply(args)
    args.story, args.mode = args.story or "scale", args.mode or "provisioned"
    if args.join_nodes is not None or args.prepare_sandbox is not None:
        from gpupool.cli import demo_sandbox

        if args.join_nodes is not None:
            print("\n".join(demo_sandbox.join_nodes(args.join_nodes, args.cloud)))
            return 0
        print("\n".join(demo_sandbox.prepare_sandbox(args.prepare_sandbox, args.cloud)))
        print(demo_sandbox.next_step(args.prepare_sandbox, args.cloud))
        return 0

    from gpupool.cli.commands.invoke import quiet_handler_output
    from gpupool.sandbox.demo.provisioned_story import STORIES, ProvisionedStory
    from gpupool.sandbox.demo.world import DemoWorld

    with DemoWorld(args.cloud) as world:
        invoke = _wire(world, args.functions_dir)
        if args.mode != "provisioned":  # Karpenter and AutoSelect: their own story module
            return _karpenter_story(world, invoke, args)
        with quiet_handler_output(verbose=False):
            result = ProvisionedStory(world, invoke, STORIES[args.story][1]).run()
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
