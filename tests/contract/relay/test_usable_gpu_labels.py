"""The relay's usable-GPUs label keeper, with an in-memory labeller: it follows the hub's GPUs,
reads what the Node watch shows, retries a failed write, and writes nothing before the first sync.

The real kube-scheduler retrying because of the label is shown on the real control plane
(tests/real/test_scheduler_extender_real.py).
"""

from __future__ import annotations

import threading

from gpupool.core.allocator.records import GpuInfo
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.usable_gpus import UsableGpuLabels


class _Labeller:
    def __init__(self, fail_first: bool = False) -> None:
        self.calls: list[tuple[str, str | None]] = []
        self.fail = fail_first

    def set_usable_gpus(self, node: str, value: str | None) -> None:
        self.calls.append((node, value))
        if self.fail:
            self.fail = False
            raise RuntimeError("503 Service Unavailable")


class _Writer:
    def annotate_pod(self, *_: object) -> None: ...
    def bind_pod(self, *_: object) -> None: ...
    def read_pod(self, *_: object) -> dict[str, object]:
        return {}


def _gpu(name: str, node: str) -> GpuInfo:
    return GpuInfo(name=name, node=node, pool="p", tflops_capacity=1, vram_capacity=1)


def test_the_label_follows_the_hubs_gpus_and_a_failed_write_is_retried() -> None:
    labeller = _Labeller(fail_first=True)
    hub = SchedulerHub(_Writer(), labeller=labeller)
    keeper = hub.gpu_labels
    assert isinstance(keeper, UsableGpuLabels)
    keeper.observe_node("a", value=None)
    keeper.observe_node("b", value="1")  # stale: b has no GPU now
    hub.allocator.state.upsert_gpu(_gpu("a0", "a"))
    keeper.reconcile_once()
    assert keeper.failures == {"a": "503 Service Unavailable"} and keeper.labelled == {}
    keeper.reconcile_once()
    assert keeper.failures == {} and keeper.labelled == {"a": "1"}
    hub.allocator.state.upsert_gpu(_gpu("a1", "a"))
    keeper.reconcile_once()
    keeper.reconcile_once()  # converged: nothing more
    assert labeller.calls == [("a", "1"), ("b", None), ("a", "1"), ("a", "2")]


def test_a_deleted_node_is_forgotten_and_a_node_not_seen_is_never_written() -> None:
    labeller = _Labeller()
    keeper = UsableGpuLabels(
        labeller, lock=threading.RLock(), allocator=_hub().allocator, synced=threading.Event()
    )
    keeper.allocator.state.upsert_gpu(_gpu("z0", "z"))  # z's Node never listed
    keeper.observe_node("a", value="1")
    keeper.observe_node("a", value=None, deleted=True)
    assert keeper.reconcile_once() == {} and labeller.calls == []


def test_nothing_is_written_before_the_first_listing() -> None:
    labeller = _Labeller()
    hub = SchedulerHub(_Writer(), labeller=labeller)
    assert hub.gpu_labels is not None
    hub.gpu_labels.observe_node("a", value=None)
    hub.allocator.state.upsert_gpu(_gpu("a0", "a"))
    stop = threading.Event()
    thread = hub.gpu_labels.start(stop)
    thread.join(0.5)
    assert labeller.calls == []  # not synced yet
    hub.synced.set()
    hub.gpu_labels.wake()
    for _ in range(50):
        if labeller.calls:
            break
        thread.join(0.05)
    stop.set()
    thread.join(2)
    assert labeller.calls == [("a", "1")]


def _hub() -> SchedulerHub:
    return SchedulerHub(_Writer())
