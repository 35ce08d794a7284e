"""In-memory implementations of the service ports (Compute, Cluster, Clock, KarpenterApi, DeliveryLedger).

Role: `MemoryCompute`, `MemoryCluster`, `MemoryKarpenter`, `MemoryDeliveryLedger` and `MemoryClock`
behave as the contract tests hold the real adapters to (resourceVersions, finalizers, evictions,
aggregated events, leases, tagged instances, delivery records), fast enough to replay days of
demand: `gpupool simulate capacity` runs the real services on them, and the service tests use
them (`tests/service/fakes.py` re-exports them).

Must not: decide anything; import the adapters or any SDK.
"""

from gpupool.testing.memory_ports.cluster import MemoryCluster
from gpupool.testing.memory_ports.compute import MemoryCompute
from gpupool.testing.memory_ports.deliveries import MemoryDeliveryLedger
from gpupool.testing.memory_ports.karpenter import MemoryKarpenter
from gpupool.testing.memory_ports.recorder import START, CallRecorder, Crash, MemoryClock

__all__ = [
    "START",
    "CallRecorder",
    "Crash",
    "MemoryClock",
    "MemoryCluster",
    "MemoryCompute",
    "MemoryDeliveryLedger",
    "MemoryKarpenter",
]
