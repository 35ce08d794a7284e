"""Nodes for the instances a simulated cloud reports: they join once booted, leave when gone.

Role: `InstanceNodes(kubelet, instances=…, clock=…, fates=…).step()` reads the managed instances
a cloud reports (`SimInstance`s: EC2 in moto, the sandbox ECS, or a running sandbox's, each
listed by its caller), and for each that runs with a claim tag registers its node through the
`Kubelet` once its fate's join delay has passed since it was first seen running (the n-th
instance seen running takes `fates.fate(n, …).join_seconds`): named by its private DNS name,
`spec.providerID aws:///<zone>/<instance id>` (that form for ECS instances too: gpupool reads
nodes by their claim label, not by providerID), labelled for its claim and GPUNode / GPUs for
the claim's pool, and annotated with `node_annotations` (on the real control plane, KWOK's
`kwok.x-k8s.io/node: fake`, so KWOK keeps the node Ready with a heartbeat Lease as a kubelet
would). When an instance is gone (shutting-down, terminated, no longer reported) its node is
deregistered, as the cloud controller manager does. `never_join(claim)` makes a claim's
instance boot without its node ever registering (the registration-timeout story).

Must not: decide anything about claims, pools or instances, read the wall clock, or write a claim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from gpupool.core.model.constants import LABEL_MANAGED_BY, LABEL_NODE_PROVISIONER
from gpupool.core.model.foreign import Node
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.service.ports import Clock
from gpupool.simulation.cluster.fates import CloudFates
from gpupool.simulation.cluster.kubelet import Kubelet, NodeRegistration

__all__ = ["InstanceNodes", "NodeChange", "SimInstance"]

_GONE = ("shutting-down", "terminated")
_PROVIDER = "aws:///"


@dataclass(frozen=True)
class SimInstance:
    """What the simulated kubelet needs to know about one cloud instance (state in EC2's words)."""

    instance_id: str
    state: str
    claim_name: str | None
    instance_type: str
    zone: str
    region: str
    private_dns: str


@dataclass(frozen=True)
class NodeChange:
    """One thing the simulated cluster did: a node joined, or a node left with its instance."""

    change: Literal["joined", "left"]
    node: str
    claim: str | None
    instance_id: str


class InstanceNodes:
    """Registers and removes nodes for managed instances; call `step()` after time moves."""

    def __init__(
        self,
        kubelet: Kubelet,
        *,
        instances: Callable[[], Sequence[SimInstance]],
        clock: Clock,
        fates: CloudFates,
        node_annotations: Mapping[str, str] | None = None,
    ) -> None:
        self._kubelet = kubelet
        self._node_annotations = dict(node_annotations or {})
        self._store = kubelet.store
        self._instances = instances
        self._clock = clock
        self._fates = fates
        self._join_after: dict[str, tuple[datetime, timedelta]] = {}  # first seen running, delay
        self._seen_running = 0
        self._never_join: set[str] = set()

    def never_join(self, claim_name: str) -> None:
        """The instance launched for `claim_name` boots, but its node never registers."""
        self._never_join.add(claim_name)

    def step(self) -> list[NodeChange]:
        """Join the nodes whose delay has passed; remove those whose instance is gone."""
        now = self._clock.now()
        changes: list[NodeChange] = []
        live: set[str] = set()
        for instance in list(self._instances()):
            if instance.state in _GONE:
                continue
            live.add(instance.instance_id)
            if instance.state != "running" or not instance.claim_name:
                continue
            if instance.instance_id not in self._join_after:
                fate = self._fates.fate(self._seen_running, "OnDemand")
                self._seen_running += 1
                self._join_after[instance.instance_id] = (now, timedelta(seconds=fate.join_seconds))
            first, delay = self._join_after[instance.instance_id]
            if now - first < delay or instance.claim_name in self._never_join:
                continue
            if self._kubelet.register(self._registration(instance)):
                changes.append(
                    NodeChange("joined", instance.private_dns, instance.claim_name, instance.instance_id)
                )
        changes.extend(self._remove_departed(live))
        return changes

    def _registration(self, instance: SimInstance) -> NodeRegistration:
        claim = self._store.get(GPUNodeClaim, instance.claim_name or "")
        pool = None if claim is None else claim.metadata.labels.get(LABEL_MANAGED_BY)
        return NodeRegistration(
            name=instance.private_dns,
            instance_type=instance.instance_type,
            zone=instance.zone,
            region=instance.region,
            provider_id=f"{_PROVIDER}{instance.zone}/{instance.instance_id}",
            instance_id=instance.instance_id,
            claim=instance.claim_name,
            pool=pool,
            annotations=self._node_annotations,
        )

    def _remove_departed(self, live: set[str]) -> list[NodeChange]:
        changes: list[NodeChange] = []
        for node in self._store.list(Node):
            provider = node.spec.provider_id or ""
            labels = node.metadata.labels
            if not provider.startswith(_PROVIDER) or LABEL_NODE_PROVISIONER not in labels:
                continue  # only nodes provisioned for claims are ours to remove
            instance_id = provider.rsplit("/", 1)[-1]
            if instance_id in live:
                continue
            self._kubelet.deregister(node.name)
            self._join_after.pop(instance_id, None)
            changes.append(NodeChange("left", node.name, labels.get(LABEL_NODE_PROVISIONER), instance_id))
        return changes
