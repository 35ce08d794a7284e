"""AutoSelect's packing: pending pods onto the GPUs of expansion nodes, in flight or new.

Role: TensorFusion's expander pre-schedules pending pods onto the GPUs of nodes already in
flight, so pods that share a GPU share a node instead of getting one each. Here:
`template_shape(node, gpus)` — how many GPUs a node like the template has and what each holds
(TFLOPS, VRAM, from its GPU objects; None when it has none yet, and then each pod gets its own
node as before); `share_of(pod, shape)` — what the pod takes of each of how many GPUs, or why it
cannot fit a fresh GPU like the template's at all (the fit check before any node is asked for:
more TFLOPS or VRAM than one GPU holds, more GPUs than the node has, an unreadable request);
`ExpansionBin` — one expansion node's GPUs: `place` puts a share on the fullest GPUs that still
hold it (pods that can share a GPU do), all of a pod's GPUs on the same node.

Must not: perform I/O, read the clock, or decide which NodeClaims are made (`decisions.autoselect`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpupool.core.allocator.build import gpu_info
from gpupool.core.allocator.pod_request import RequestError, request_from_pod
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPU

__all__ = ["ExpansionBin", "GpuShape", "Share", "share_of", "template_shape"]


@dataclass(frozen=True)
class GpuShape:
    """A node like the template: its GPU count and each GPU's TFLOPS (milli) and VRAM (bytes)."""

    count: int
    tflops: int
    vram: int


@dataclass(frozen=True)
class Share:
    """What a pod takes of each of `count` GPUs."""

    count: int
    tflops: int
    vram: int


def template_shape(node: Node, gpus: Sequence[GPU]) -> GpuShape | None:
    """The template node's GPUs as a shape (the smallest GPU's capacity); None without GPU objects."""
    infos = [i for g in gpus if (i := gpu_info(g)) is not None and i.node == node.name]
    if not infos:
        return None
    return GpuShape(
        count=len(infos),
        tflops=min(i.tflops_capacity for i in infos),
        vram=min(i.vram_capacity for i in infos),
    )


def share_of(pod: Pod, shape: GpuShape) -> Share | str:
    """The pod's share of a GPU like the template's, or why no such GPU can serve it."""
    try:
        request = request_from_pod(pod)
    except RequestError as error:
        return f"its GPU request cannot be read: {error}"
    tflops, vram = request.tflops_request, request.vram_request
    if request.compute_percent_request is not None:
        tflops = int(shape.tflops * request.compute_percent_request / 100)
    if request.dedicated or (tflops == 0 and vram == 0):
        tflops, vram = shape.tflops, shape.vram  # a whole GPU
    if request.gpu_count > shape.count:
        return f"it asks for {request.gpu_count} GPUs; a node like the template has {shape.count}"
    if tflops > shape.tflops or vram > shape.vram:
        return (
            f"it asks for {tflops / 1000:g} TFLOPS and {vram} bytes of VRAM per GPU; a GPU like the "
            f"template's has {shape.tflops / 1000:g} TFLOPS and {shape.vram} bytes"
        )
    return Share(count=request.gpu_count, tflops=tflops, vram=vram)


@dataclass
class ExpansionBin:
    """One expansion node's GPUs: what each has left, and how many hold something."""

    name: str
    shape: GpuShape
    gpus: int
    candidate: str = ""
    free: list[list[int]] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.free:
            self.free = [[self.shape.tflops, self.shape.vram] for _ in range(self.gpus)]

    @property
    def used(self) -> int:
        """How many GPUs hold a share (what the NodeClaim asks Karpenter for)."""
        return sum(1 for t, v in self.free if (t, v) != (self.shape.tflops, self.shape.vram))

    def place(self, pod_key: str, share: Share) -> bool:
        """Put `share` on the fullest GPUs that still hold it; False (nothing placed) when
        fewer than `share.count` GPUs of this node can."""
        fitting = [index for index, (t, v) in enumerate(self.free) if t >= share.tflops and v >= share.vram]
        if len(fitting) < share.count:
            return False
        shape = self.shape
        fitting.sort(
            key=lambda index: (
                self.free[index][0] / max(shape.tflops, 1) + self.free[index][1] / max(shape.vram, 1),
                index,
            )
        )
        for index in fitting[: share.count]:
            self.free[index][0] -= share.tflops
            self.free[index][1] -= share.vram
        self.pods.append(pod_key)
        return True
