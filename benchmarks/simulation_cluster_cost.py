"""Benchmark: what one launch / bind-sweep / compact invocation costs on the embedded API server
against the in-memory Cluster port — why `gpupool simulate capacity` runs on the latter.

Builds the capacity simulation's pool (`gpupool.simulation.capacity.pool_spec`) with a warm reserve of
N one-GPU nodes, lets one launch fill it with N claims, then times `--rounds` invocations of each
function (the clock moved one second between them) twice: on `MemoryCluster`, and through the
real `KubeCluster` adapter on `EmbeddedKubeAPI` (HTTP on loopback). Prints the median per
function for both and the ratio. Multiply by a run's `invocations` (`simulate capacity --json`)
for what the API server would add to it.

Run: .venv/bin/python benchmarks/simulation_cluster_cost.py [--claims 40] [--rounds 10]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

FUNCTIONS = ("launch", "bind", "compact")


def _deps(cluster: Any, clock: Any, compute: Any, spec: Any) -> Any:
    from gpupool.service.deps import Deps, Settings
    from gpupool.simulation.capacity.pool_spec import CLUSTER, pool_offerings

    names = itertools.count(1)
    return Deps(
        compute=compute,
        cluster=cluster,
        clock=clock,
        settings=Settings(cluster_name=CLUSTER, region=spec.region),
        offerings=pool_offerings(spec),
        new_suffix=lambda: f"{next(names):05d}",
        sleep=lambda _seconds: None,
        holder="benchmark",
    )


def _medians(deps: Any, clock: Any, rounds: int) -> dict[str, float]:
    """Milliseconds, the median of `rounds` invocations per function, after one filling launch."""
    from gpupool.core.intake.causes import Compact, Reconcile, Sweep
    from gpupool.service.bind import handle_bind
    from gpupool.service.compact import handle_compact
    from gpupool.service.launch import handle_launch

    handle_launch(Reconcile(trigger="schedule", event_id="fill"), deps)
    calls: dict[str, Callable[[int], object]] = {
        "launch": lambda i: handle_launch(Reconcile(trigger="schedule", event_id=f"l{i}"), deps),
        "bind": lambda i: handle_bind(Sweep(event_id=f"b{i}"), deps),
        "compact": lambda i: handle_compact(Compact(event_id=f"c{i}"), deps),
    }
    medians = {}
    for name in FUNCTIONS:
        times = []
        for i in range(rounds):
            clock.advance(timedelta(seconds=1))
            started = time.perf_counter()
            calls[name](i)
            times.append(time.perf_counter() - started)
        medians[name] = statistics.median(times) * 1000
    return medians


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--claims", type=int, default=40, help="warm reserve in one-GPU nodes (default 40)")
    parser.add_argument("--rounds", type=int, default=10, help="invocations timed per function (default 10)")
    args = parser.parse_args(argv)
    if args.claims < 1 or args.rounds < 1:
        parser.error("--claims and --rounds must be at least 1")

    from gpupool.adapters.kube.auth import KubeAccess, build_api_client
    from gpupool.adapters.kube.cluster import KubeCluster
    from gpupool.core.model.base import ObjectMeta
    from gpupool.core.model.nodeclass import GPUNodeClass
    from gpupool.sandbox.demo.objects import KubeObjects
    from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
    from gpupool.simulation.capacity.pool_spec import CLUSTER, NODE_CLASS, PoolSpec, gpupool_pool
    from gpupool.testing.memory_ports import MemoryClock, MemoryCluster, MemoryCompute

    spec = PoolSpec(warm_tflops=Decimal(65 * args.claims), warm_vram=Decimal(16 * args.claims))
    pool = gpupool_pool(spec)

    clock = MemoryClock()
    memory = MemoryCluster(clock)
    memory.add(GPUNodeClass(metadata=ObjectMeta(name=NODE_CLASS)), pool)
    in_memory = _medians(
        _deps(memory, clock, MemoryCompute(clock, cluster=CLUSTER), spec), clock, args.rounds
    )

    with EmbeddedKubeAPI() as api:
        objects = KubeObjects(api.cluster)
        node_class = {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUNodeClass",
            "metadata": {"name": NODE_CLASS},
        }
        objects.create("tensor-fusion.ai", "gpunodeclasses", {**node_class, "spec": {}})
        objects.create(
            "tensor-fusion.ai", "gpupools", pool.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        access = KubeAccess(mode="kubeconfig", kubeconfig_path=str(api.kubeconfig_path))
        clock = MemoryClock()
        kube = KubeCluster(build_api_client(access), now=clock.now)
        compute = MemoryCompute(clock, cluster=CLUSTER)
        embedded = _medians(_deps(kube, clock, compute, spec), clock, args.rounds)
        claims = len(objects.list("tensor-fusion.ai", "gpunodeclaims"))

    print(f"pool with {claims} claims; median of {args.rounds} invocations per function")
    print(f"{'function':<10}{'memory ms':>12}{'embedded ms':>14}{'ratio':>8}")
    for name in FUNCTIONS:
        ratio = embedded[name] / in_memory[name] if in_memory[name] else float("inf")
        print(f"{name:<10}{in_memory[name]:>12.1f}{embedded[name]:>14.1f}{ratio:>7.0f}x")


if __name__ == "__main__":
    main()
