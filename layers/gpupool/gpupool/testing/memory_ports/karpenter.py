"""In-memory `KarpenterApi` port: karpenter.sh/v1 NodeClaims in a dict, on the simulated clock.

Role: `MemoryKarpenter` stores NodeClaims by name (AlreadyExists on a second create), keeps a
deleting NodeClaim until `finish_deletion` (Karpenter's finalizer), knows which node classes
exist, records every call and takes injected errors (`CallRecorder`). The helpers play
Karpenter's controller as it behaves (kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/
lifecycle/launch.go`), in its order (Launched → Registered → Initialized → Ready): `launched`
(what was launched merged into the labels, providerID, Launched=True), `insufficient_capacity`
and `node_class_not_ready` (Karpenter deletes the NodeClaim: no Launched=False is ever written),
`launch_error` (any other error: Launched=Unknown, retried) and `registered` (the node joined).
Service tests (`tests/service/fake_karpenter.py`) and `gpupool simulate capacity --mode
karpenter` use it; the contract test holds the Kubernetes adapter to the same behaviour.

Must not: decide anything (the service does); create Nodes (the caller's cluster does).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from gpupool.core.model.base import Condition
from gpupool.core.model.constants import (
    KEY_CAPACITY_TYPE,
    KEY_INSTANCE_TYPE,
    KEY_ZONE,
    LABEL_NODE_PROVISIONER,
)
from gpupool.core.model.karpenter import (
    KarpenterNodeClaim,
    KarpenterNodeClaimStatus,
    KarpenterNodePool,
    NodeClassReference,
)
from gpupool.service.errors import AlreadyExists, NotFound
from gpupool.testing.memory_ports.recorder import CallRecorder, MemoryClock

__all__ = ["MemoryKarpenter"]


class MemoryKarpenter(CallRecorder):
    """NodeClaims in memory; `node_classes` holds the (group, kind, name) of existing classes."""

    def __init__(self, clock: MemoryClock) -> None:
        super().__init__()
        self.clock = clock
        self.nodeclaims: dict[str, KarpenterNodeClaim] = {}
        self.nodepools: dict[str, KarpenterNodePool] = {}
        self.node_classes: set[tuple[str, str, str]] = {("karpenter.k8s.aws", "EC2NodeClass", "default")}

    # ---- the port ------------------------------------------------------------------------
    def list_nodeclaims(self, *, ours_only: bool = True) -> list[KarpenterNodeClaim]:
        return self._call(
            "list_nodeclaims",
            (ours_only,),
            lambda: [
                n
                for n in self.nodeclaims.values()
                if not ours_only or LABEL_NODE_PROVISIONER in n.metadata.labels
            ],
        )

    def list_nodepools(self) -> list[KarpenterNodePool]:
        return self._call("list_nodepools", (), lambda: list(self.nodepools.values()))

    def get_nodeclaim(self, name: str) -> KarpenterNodeClaim:
        def work() -> KarpenterNodeClaim:
            if name not in self.nodeclaims:
                raise NotFound(f"NodeClaim {name} not found")
            return self.nodeclaims[name]

        return self._call("get_nodeclaim", (name,), work)

    def create_nodeclaim(self, nodeclaim: KarpenterNodeClaim) -> KarpenterNodeClaim:
        def work() -> KarpenterNodeClaim:
            if nodeclaim.name in self.nodeclaims:
                raise AlreadyExists(f"NodeClaim {nodeclaim.name} already exists")
            meta = nodeclaim.metadata.model_copy(
                update={"uid": str(uuid.uuid4()), "creation_timestamp": self.clock.now()}
            )
            stored = nodeclaim.model_copy(update={"metadata": meta, "status": KarpenterNodeClaimStatus()})
            self.nodeclaims[nodeclaim.name] = stored
            return stored

        return self._call("create_nodeclaim", (nodeclaim.name,), work)

    def delete_nodeclaim(self, name: str) -> None:
        def work() -> None:
            current = self.nodeclaims.get(name)
            if current is None:
                raise NotFound(f"NodeClaim {name} not found")
            if current.metadata.deletion_timestamp is None:
                meta = current.metadata.model_copy(update={"deletion_timestamp": self.clock.now()})
                self.nodeclaims[name] = current.model_copy(update={"metadata": meta})

        self._call("delete_nodeclaim", (name,), work)

    def check_access(self) -> None:
        self._call("check_access", (), lambda: None)

    def node_class_exists(self, ref: NodeClassReference) -> bool:
        return self._call(
            "node_class_exists", (ref.name,), lambda: (ref.group, ref.kind, ref.name) in self.node_classes
        )

    # ---- helpers: Karpenter's controller -------------------------------------------------
    def live(self) -> list[KarpenterNodeClaim]:
        """NodeClaims not being deleted."""
        return [n for n in self.nodeclaims.values() if n.metadata.deletion_timestamp is None]

    def deleting(self) -> list[str]:
        """Names of the NodeClaims being deleted (waiting for Karpenter's finalizer)."""
        return [n for n, c in self.nodeclaims.items() if c.metadata.deletion_timestamp is not None]

    def _set(self, name: str, *conditions: tuple[str, str, str], **status: str) -> None:
        with self.lock:
            current = self.nodeclaims[name]
            kept = [c for c in current.status.conditions if c.type not in {t for t, _, _ in conditions}]
            added = [
                Condition(type=t, status=s, reason=r, last_transition_time=self.clock.now())
                for t, s, r in conditions
            ]
            new_status = current.status.model_copy(update={"conditions": [*kept, *added], **status})
            self.nodeclaims[name] = current.model_copy(update={"status": new_status})

    def launched(self, name: str, provider_id: str | None = None, **launched: str) -> None:
        """The cloud accepted the instance: what was launched (`instance_type`, `zone`,
        `capacity_type`; by default each requirement's first `In` value) merged into the labels,
        providerID set, Launched=True."""
        with self.lock:
            current = self.nodeclaims[name]
            pinned = {
                r.key: r.values[0] for r in current.spec.requirements if r.operator == "In" and r.values
            }
            labels = {
                key: launched.get(field) or pinned.get(key, "")
                for field, key in (
                    ("instance_type", KEY_INSTANCE_TYPE),
                    ("zone", KEY_ZONE),
                    ("capacity_type", KEY_CAPACITY_TYPE),
                )
            }
            meta = current.metadata.model_copy(
                update={"labels": {**current.metadata.labels, **{k: v for k, v in labels.items() if v}}}
            )
            self.nodeclaims[name] = current.model_copy(update={"metadata": meta})
        zone = labels[KEY_ZONE] or "us-east-1a"
        self._set(
            name, ("Launched", "True", "Launched"), provider_id=provider_id or f"aws:///{zone}/i-{name}"
        )

    def insufficient_capacity(self, name: str) -> None:
        """Karpenter could not launch it for capacity (or its node class is not ready): it deletes
        the NodeClaim, whose finalizer has no instance to wait for."""
        with self.lock:
            self.nodeclaims.pop(name, None)

    node_class_not_ready = insufficient_capacity

    def launch_error(self, name: str, reason: str = "LaunchFailed") -> None:
        """Any other launch error: Launched=Unknown with `reason`; Karpenter retries."""
        self._set(name, ("Launched", "Unknown", reason))

    def registered(self, name: str, node_name: str) -> None:
        """The node `node_name` joined (Registered, Initialized, Ready); Launched first if it was not."""
        if self.nodeclaims[name].status.provider_id is None:
            self.launched(name)
        self._set(
            name,
            ("Registered", "True", "Registered"),
            ("Initialized", "True", "Initialized"),
            ("Ready", "True", "Ready"),
            node_name=node_name,
        )

    def finish_deletion(self, names: Iterable[str] | None = None) -> None:
        """Karpenter's finalizer: the node and instance are gone, then the NodeClaim (all that
        are being deleted, or only `names` among them)."""
        with self.lock:
            chosen = set(self.deleting()) if names is None else set(names) & set(self.deleting())
            for name in chosen:
                del self.nodeclaims[name]
