"""Applying DrainNode: evict through the eviction API, then wait until the evicted pods are gone.

Role: `apply_drain(deps, action)` evicts every pod `core.decisions.drain.evictable` names
(PodDisruptionBudgets honoured: a blocked eviction is a retryable Throttled), then polls the
node's pods every `DRAIN_POLL_SECONDS` until `still_running` is empty or
`settings.drain_timeout` has passed. Past the deadline it raises Throttled naming the pods still
terminating, so the executor skips the claim's later actions (the instance is not terminated
under running pods) and the next invocation drains again. Waiting uses the `sleep` the deps
carry (real time in a function; the fake clock in tests).

Must not: decide which pods go (the core does), or terminate anything.
"""

from __future__ import annotations

from gpupool.core.decisions.drain import evictable, pod_key, still_running
from gpupool.core.planning.plan import DrainNode
from gpupool.service.deps import Deps
from gpupool.service.errors import NotFound, Throttled

__all__ = ["DRAIN_POLL_SECONDS", "apply_drain"]

DRAIN_POLL_SECONDS = 2.0


def apply_drain(deps: Deps, action: DrainNode) -> str:
    cluster, node = deps.cluster, action.node
    evicted, blocked = [], []
    for pod in cluster.list_pods(node_name=node):
        if not evictable(pod):
            continue
        try:
            cluster.evict_pod(pod.metadata.namespace or "default", pod.name)
            evicted.append(pod_key(pod))
        except NotFound:
            continue
        except Throttled:
            blocked.append(pod_key(pod))
    if blocked:
        raise Throttled(f"evicted {len(evicted)}; blocked by a disruption budget: {', '.join(blocked)}")
    timeout = deps.settings.drain_timeout
    deadline = deps.clock.now() + timeout
    while True:
        left = still_running(cluster.list_pods(node_name=node))
        if not left:
            return f"evicted {len(evicted)} pod(s); node drained"
        remaining = (deadline - deps.clock.now()).total_seconds()
        if remaining <= 0:
            still = f"{len(left)} pod(s) still terminating after {timeout}: {', '.join(left)}"
            raise Throttled(f"evicted {len(evicted)}; {still}")
        deps.sleep(min(DRAIN_POLL_SECONDS, remaining))
