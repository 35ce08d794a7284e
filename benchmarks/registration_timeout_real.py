"""Karpenter mode on the real Karpenter: a node that never registers, told apart by its reason.

Role: the one acceptance line of issue 34 that takes longer than the test suite may wait. Karpenter
gives a launched NodeClaim whose node never registers 15 minutes (`registrationTimeout`, an
unexported constant in `pkg/controllers/nodeclaim/lifecycle/liveness.go` of
kubernetes-sigs/karpenter; no flag, setting or option shortens it), then deletes it. This script
runs that on the real control plane and the real Karpenter (its KWOK provider) built by
`gpupool sandbox build`, and prints what gpupool made of it:

1. a Karpenter-mode pool whose `karpenterNodeClassRef` is a KWOKNodeClass with
   `spec.nodeRegistrationDelay` longer than the timeout (KWOK's own field for an instance whose
   node registers late: here, never within the run);
2. the deployed `launch` handler records a GPUNodeClaim and creates its NodeClaim; the real
   Karpenter launches it; the node never joins;
3. `bind` runs every minute, as its schedule does, until Karpenter deletes the NodeClaim — and
   once more after; gpupool's own registration timeout is the same 15 minutes, so whichever side
   acts first, the claim must fail with reason `RegistrationTimeout`;
4. `launch` runs again: the refill asks for the same offering, because only a capacity failure
   marks an offering unavailable (`gpupool.io/unavailable-offerings` stays unset).

It prints a line per step with the time since launch, and exits 1 if any of the three outcomes
differs (reason, no unavailable mark, refill on the same offering). It takes about 17 minutes,
too long for the suite (`tests/real/test_karpenter_mode_real.py` covers the taint and the grace
period there; `tests/service/test_karpenter_mode.py` reads each deletion reason against a double).

Run: `python -m benchmarks.registration_timeout_real` (after `gpupool sandbox build`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpupool.cli.commands.invoke import quiet_handler_output
from gpupool.core.model.constants import LABEL_NODE_PROVISIONER
from gpupool.core.planning.unavailable import ANNOTATION_UNAVAILABLE_OFFERINGS
from gpupool.handlers import common as _handler_logging  # noqa: F401  (its logger, to quiet)
from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.real.functions_world import FunctionsWorld, functions_world
from tests.real.karpenter_builders import KWOK_NODE_CLASS_REF, karpenter_mode_spec, pool_manifests

CLUSTER = "regtimeout"
POOL = f"{CLUSTER}-gpus"
NODE_CLASS = "never-registers"
KARPENTER_REGISTRATION_TIMEOUT_S = 15 * 60


def _node_class(delay: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": NODE_CLASS},
        "spec": {"nodeRegistrationDelay": delay},
    }


def _pool_spec() -> dict[str, Any]:
    spec = karpenter_mode_spec(compaction_period_s=60, warm={}, types=("g4dn.xlarge",))
    spec["capacityConfig"] = {"minResources": {"tflops": "65", "vram": "16Gi"}}  # one node, no warm
    provisioner = spec["nodeManagerConfig"]["nodeProvisioner"]
    provisioner["karpenterNodeClassRef"] = {**KWOK_NODE_CLASS_REF, "version": "v1alpha1", "name": NODE_CLASS}
    return spec


def _nodeclaim(world: FunctionsWorld, name: str) -> dict[str, Any] | None:
    for found in world.plane.request("GET", "/apis/karpenter.sh/v1/nodeclaims")["items"]:
        if found["metadata"]["name"] == name:
            return dict(found)
    return None


def _registered(world: FunctionsWorld, claim: str) -> bool:
    selector = f"{LABEL_NODE_PROVISIONER}={claim}"
    return bool(world.plane.request("GET", f"/api/v1/nodes?labelSelector={selector}")["items"])


def _claim(world: FunctionsWorld, name: str) -> dict[str, Any]:
    return next(c for c in world.claims(POOL) if c["metadata"]["name"] == name)


def _wait(what: str, ready: Callable[[], bool], *, timeout: float, every: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def run(plane: ControlPlane, *, delay: str, bind_every_s: float) -> int:
    plane.apply(_node_class(delay), path=f"/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses/{NODE_CLASS}")
    with functions_world(
        plane, cluster=CLUSTER, manifests=pool_manifests(CLUSTER, "gpus", _pool_spec())
    ) as world:
        started = time.monotonic()

        def say(line: str) -> None:
            print(f"[{time.monotonic() - started:6.0f} s] {line}", flush=True)

        world.invoke("launch")
        (claim,) = world.phases(POOL)
        say(f"launch recorded {claim} ({_offering(_claim(world, claim))})")
        _wait(
            "Karpenter to launch the NodeClaim", lambda: bool(_launched(world, claim)), timeout=120, every=2
        )
        say(f"Karpenter launched NodeClaim {claim}; its node registers after {delay}")

        gone_at: float | None = None
        while gone_at is None:
            found = _nodeclaim(world, claim)
            if found is None or found["metadata"].get("deletionTimestamp"):
                gone_at = time.monotonic() - started
                say(f"NodeClaim {claim} deleted (node registered: {_registered(world, claim)})")
                break
            if time.monotonic() - started > KARPENTER_REGISTRATION_TIMEOUT_S + 300:
                raise SystemExit("Karpenter never deleted the NodeClaim")
            world.invoke("bind")
            phase = (_claim(world, claim).get("status") or {}).get("phase")
            if phase == "Failed":
                say(f"bind failed {claim} before Karpenter deleted its NodeClaim")
                break
            time.sleep(bind_every_s)
        world.invoke("bind")
        status = _claim(world, claim).get("status") or {}
        say(f"bind: claim {claim} is {status.get('phase')}/{status.get('reason')}: {status.get('message')}")

        world.invoke("launch")
        refills = [c for c in world.claims(POOL) if c["metadata"]["name"] != claim]
        pool = world.plane.request("GET", f"/apis/tensor-fusion.ai/v1/gpupools/{POOL}")
        marks = (pool["metadata"].get("annotations") or {}).get(ANNOTATION_UNAVAILABLE_OFFERINGS)
        say(f"launch: refills {json.dumps([_offering(c) for c in refills])}; unavailable offerings: {marks}")

        failures = []
        if status.get("phase") != "Failed" or status.get("reason") != "RegistrationTimeout":
            failures.append(
                f"the claim is {status.get('phase')}/{status.get('reason')}, not Failed/RegistrationTimeout"
            )
        if marks:
            failures.append(f"an offering was marked unavailable: {marks}")
        if [_offering(c) for c in refills] != [_offering(_claim(world, claim))]:
            failures.append("the refill did not ask for the same offering")
        for failure in failures:
            print(f"NOT as issue 34 item 3 says: {failure}")
        if not failures:
            print(
                "as issue 34 item 3 says: RegistrationTimeout, no offering marked, the same offering refilled"
            )
        return 1 if failures else 0


def _launched(world: FunctionsWorld, claim: str) -> bool:
    found = _nodeclaim(world, claim)
    conditions = (found or {}).get("status", {}).get("conditions") or []
    return any(c["type"] == "Launched" and c["status"] == "True" for c in conditions)


def _offering(claim: dict[str, Any]) -> str:
    spec = claim["spec"]
    return f"{spec['instanceType']}/{spec['capacityType']}/{spec['zone']}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--registration-delay",
        default="1h",
        help="KWOKNodeClass nodeRegistrationDelay: longer than Karpenter's 15 minutes (default 1h)",
    )
    parser.add_argument(
        "--bind-every", type=float, default=60.0, help="seconds between bind runs (default 60)"
    )
    parser.add_argument("--workdir", type=Path, help="keep the control plane's files here")
    parser.add_argument("--verbose", action="store_true", help="the handlers' logs on stderr")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as scratch:
        root = args.workdir or Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix="regtimeout-")))
        plane = ControlPlane(root / "plane")
        plane.start()
        try:
            with quiet_handler_output(verbose=args.verbose):
                return run(plane, delay=args.registration_delay, bind_every_s=args.bind_every)
        finally:
            plane.stop()


if __name__ == "__main__":
    raise SystemExit(main())
