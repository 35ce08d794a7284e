"""In-memory fakes of the service ports for service tests, and builders of a pool world.

The ports themselves live in the package (`gpupool.testing.memory_ports`, which
`gpupool simulate capacity` runs the real services on); this module re-exports them under
the names the tests use (FakeClock, FakeCompute, FakeCluster) and keeps the test builders:
`OFFERINGS`, `make_pool`, `World` (a clock, both fakes, a node class and `Deps` wired to them).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.quantity import Quantity
from gpupool.testing.memory_ports import START, CallRecorder, Crash, MemoryClock, MemoryCluster, MemoryCompute

__all__ = [
    "OFFERINGS",
    "START",
    "Crash",
    "FakeClock",
    "FakeCluster",
    "FakeCompute",
    "World",
    "make_pool",
]

FakeClock = MemoryClock
FakeCompute = MemoryCompute
FakeCluster = MemoryCluster
_Recorder = CallRecorder


# ---- builders: a pool world with overrides -----------------------------------------------

OFFERINGS = (
    OfferingRef(
        instance_type="g4dn.xlarge",
        zone="us-east-1a",
        tflops=Quantity.parse("65"),
        vram=Quantity.parse("16Gi"),
        gpu_count=1,
        hourly_price="0.526",
    ),
    OfferingRef(
        instance_type="g6.xlarge",
        zone="us-east-1a",
        tflops=Quantity.parse("121"),
        vram=Quantity.parse("24Gi"),
        gpu_count=1,
        hourly_price="0.805",
    ),
    OfferingRef(
        instance_type="g5.xlarge",
        zone="us-east-1a",
        tflops=Quantity.parse("125"),
        vram=Quantity.parse("24Gi"),
        gpu_count=1,
        hourly_price="1.006",
    ),
)


def make_pool(
    name: str = "pool-a",
    *,
    min_tflops: str | None = "130",
    min_vram: str | None = "32Gi",
    warm_tflops: str | None = None,
    warm_vram: str | None = None,
    max_tflops: str | None = None,
    max_vram: str | None = None,
    mode: str = "Provisioned",
    node_class: str = "gpu-class",
    requirements: list[dict[str, Any]] | None = None,
    period: str = "5m",
) -> GPUPool:
    def amount(tflops: str | None, vram: str | None) -> dict[str, str] | None:
        if tflops is None and vram is None:
            return None
        return {k: v for k, v in (("tflops", tflops), ("vram", vram)) if v is not None}

    capacity = {
        key: value
        for key, value in (
            ("minResources", amount(min_tflops, min_vram)),
            ("warmResources", amount(warm_tflops, warm_vram)),
            ("maxResources", amount(max_tflops, max_vram)),
        )
        if value is not None
    }
    return GPUPool.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "capacityConfig": capacity,
                "nodeManagerConfig": {
                    "provisioningMode": mode,
                    "nodeProvisioner": {"nodeClass": node_class, "gpuRequirements": requirements or []},
                    "nodeCompaction": {"period": period},
                },
            },
        }
    )


class World:
    """A clock, both fakes, a node class and `Deps` wired to them."""

    def __init__(
        self, *pools: GPUPool, offerings: Sequence[OfferingRef] = OFFERINGS, **settings: Any
    ) -> None:
        from gpupool.service.deps import Deps, Settings

        self.clock = FakeClock()
        self.compute = FakeCompute(self.clock)
        self.cluster = FakeCluster(self.clock)
        self.cluster.add(GPUNodeClass(metadata=ObjectMeta(name="gpu-class")), *pools)
        counter = itertools.count(1)
        self._suffix_lock = threading.Lock()

        def suffix() -> str:
            with self._suffix_lock:
                return f"{next(counter):04d}"

        self.deps = Deps(
            compute=self.compute,
            cluster=self.cluster,
            clock=self.clock,
            settings=Settings(cluster_name="demo", **settings),
            offerings=tuple(offerings),
            new_suffix=suffix,
            sleep=lambda seconds: self.clock.advance(timedelta(seconds=seconds)),
        )

    def with_holder(self, holder: str) -> Any:
        from dataclasses import replace

        return replace(self.deps, holder=holder)

    def claims(self, *, live_only: bool = False) -> list[GPUNodeClaim]:
        claims: list[GPUNodeClaim] = self.cluster.all("GPUNodeClaim")
        if live_only:
            claims = [
                c
                for c in claims
                if c.metadata.deletion_timestamp is None and (c.status is None or c.status.phase != "Failed")
            ]
        return claims

    def claim(self, name: str) -> GPUNodeClaim:
        claim: GPUNodeClaim = self.cluster.get("GPUNodeClaim", name)
        return claim

    def pool(self, name: str = "pool-a") -> GPUPool:
        pool: GPUPool = self.cluster.get("GPUPool", name)
        return pool
