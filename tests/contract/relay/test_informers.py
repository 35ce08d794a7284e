"""The relay's shared informers (`relay/informers.py`): one stream per resource, many subscribers.

The store half is driven by hand (what a ListWatch hands it: listings and changes): a new
subscriber is replayed the current models, each change is read once and handed to every
subscriber as the same model, a cancelled subscriber hears nothing more, a re-list reports what
vanished as deleted, an unreadable change is reported once and leaves what was last read, and a
subscriber that raises keeps the change from no other. Against the embedded API server: a watch
resumed after its history was compacted (410 Gone) re-lists, counts the restart and reports what
vanished meanwhile as deleted; a resource the cluster lacks (404) is synced and idle.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from gpupool.core.model.base import TopLevel
from gpupool.core.model.foreign import Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPUNode
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.unreadable import UnreadableObject
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool_incluster.relay.informers import SharedInformer, SharedInformers
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.watching import WatchTimings

sys.path.insert(0, str(Path(__file__).parent))
from forward_builders import sample, wait_for
from relay_builders import pool_object

FAST = WatchTimings(watch_seconds=30, first_backoff=0.05, max_backoff=0.2)


class Heard:
    """A subscriber that records (name, deleted, model) for each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bool, TopLevel]] = []

    def __call__(self, obj: TopLevel, /, *, deleted: bool) -> None:
        self.calls.append((obj.name, deleted, obj))

    def names(self) -> list[tuple[str, bool]]:
        return [(name, deleted) for name, deleted, _ in self.calls]


def _pod(name: str, version: str = "1") -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": version}
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def _store(model: type[Any], reports: list[UnreadableObject] | None = None) -> SharedInformer[Any]:
    """An informer never started: the test plays its ListWatch."""

    def no_lister(**_: Any) -> Any:
        raise AssertionError("this informer is not started")

    found = [] if reports is None else reports
    return SharedInformer(
        model, no_lister, stop=threading.Event(), metrics=RelayMetrics(), report=found.append
    )


def test_a_new_subscriber_is_replayed_the_current_models_then_hears_each_change_once() -> None:
    informer = _store(Pod)
    informer.replace([_pod("a"), _pod("b")])
    first = Heard()
    subscription = informer.subscribe(first)
    assert first.names() == [("a", False), ("b", False)]
    informer.change(_pod("a", "2"), False)
    second = Heard()
    informer.subscribe(second)
    assert second.names() == [("a", False), ("b", False)]  # the current state, each as first seen
    assert second.calls[0][2].metadata.resource_version == "2"
    informer.change(_pod("c"), False)
    assert first.calls[-1][2] is second.calls[-1][2], "read once, the same model handed to both"
    subscription.cancel()
    informer.change(_pod("b", "3"), True)
    assert first.names() == [("a", False), ("b", False), ("a", False), ("c", False)]
    assert second.names()[-1] == ("b", True)
    assert sorted(p.name for p in informer.cached()) == ["a", "c"]


def test_a_relisting_reports_what_vanished_as_deleted_with_what_was_last_read() -> None:
    informer = _store(Pod)
    informer.replace([_pod("a", "5"), _pod("b")])
    heard = Heard()
    informer.subscribe(heard)
    informer.replace([_pod("b", "6")])
    assert heard.names()[2:] == [("a", True), ("b", False)]
    assert heard.calls[2][2].metadata.resource_version == "5"
    assert [p.name for p in informer.cached()] == ["b"]


def test_an_unreadable_change_is_reported_once_and_subscribers_keep_what_they_last_read() -> None:
    reports: list[UnreadableObject] = []
    informer = _store(GPUPool, reports)
    informer.replace([pool_object("shared")])
    hub, forwarder = Heard(), Heard()
    informer.subscribe(hub)
    informer.subscribe(forwarder)
    bad = pool_object("shared") | {"spec": {"noSuchField": 1}}
    informer.change(bad, False)
    assert len(hub.calls) == len(forwarder.calls) == 1, "the unreadable change reached nobody"
    assert len(reports) == 1 and "noSuchField" in reports[0].message, "one Warning, not one per subscriber"
    assert [p.name for p in informer.cached()] == ["shared"]
    informer.change(bad, True)  # deleted in its unreadable state: forgotten with what was last read
    assert hub.names()[-1] == forwarder.names()[-1] == ("shared", True)
    assert hub.calls[-1][2] is hub.calls[0][2] and len(reports) == 1
    assert informer.cached() == []


def test_a_subscriber_that_raises_keeps_the_change_from_no_other_and_the_stream_hears_of_it() -> None:
    """A live change re-raises (the stream re-lists); a failing replay is logged, not raised."""
    informer = _store(Pod)

    def broken(obj: Pod, /, *, deleted: bool) -> None:
        raise RuntimeError("a subscriber's bug")

    heard = Heard()
    informer.subscribe(broken)
    informer.subscribe(heard)
    with pytest.raises(RuntimeError, match="a subscriber's bug"):  # the ListWatch re-lists on it
        informer.change(_pod("a"), False)
    assert heard.names() == [("a", False)]
    late = Heard()
    informer.subscribe(broken)  # its replay fails: logged, not raised into the subscribing thread
    informer.subscribe(late)
    assert late.names() == [("a", False)]


def test_an_informer_for_a_kind_the_relay_does_not_watch_is_refused() -> None:
    informers = SharedInformers(object(), metrics=RelayMetrics(), report=lambda _: None)
    with pytest.raises(ValueError, match="does not watch GPUNode"):
        informers.informer(GPUNode)


def _gated(lister: Callable[..., Any], gate: threading.Event, asked: threading.Event) -> Callable[..., Any]:
    """`lister`, except that a watch waits for `gate` first (a network partition, say)."""

    def gated(**kwargs: Any) -> Any:
        if kwargs.get("watch"):
            asked.set()
            gate.wait(15)
        return lister(**kwargs)

    return gated


def test_a_watch_resumed_after_its_history_is_compacted_relists_and_reports_what_vanished() -> None:
    with EmbeddedKubeAPI(watch_history=5) as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        core = client.CoreV1Api(api_client)
        for name in ("a", "b"):
            core.create_namespaced_pod("default", _pod(name) | {"metadata": {"name": name}})
        gate, asked, stop = threading.Event(), threading.Event(), threading.Event()
        metrics = RelayMetrics()
        informer = SharedInformer(
            Pod,
            _gated(core.list_pod_for_all_namespaces, gate, asked),
            stop=stop,
            metrics=metrics,
            report=lambda _: None,
            timings=FAST,
        )
        heard = Heard()
        informer.subscribe(heard)
        informer.start()
        try:
            wait_for(asked.is_set, "the first watch, after the list")
            assert sorted(heard.names()) == [("a", False), ("b", False)]
            core.delete_namespaced_pod("a", "default")
            for i in range(20):  # more changes than the history keeps (it keeps 5 to 10)
                core.create_namespaced_pod("default", _pod(f"c{i}") | {"metadata": {"name": f"c{i}"}})
            gate.set()
            wait_for(lambda: ("a", True) in heard.names(), "a reported deleted by the re-list")
            assert heard.names().index(("a", True)) == 2, (
                "before the listing's items, as a re-list reports it"
            )
            assert sample(metrics, "gpupool_relay_watch_restarts_total", kind="Pod", reason="gone") == 1
            assert sorted(p.name for p in informer.cached()) == ["b", *sorted(f"c{i}" for i in range(20))]
        finally:
            stop.set()
            informer.interrupt()
            api_client.close()


def test_a_resource_the_cluster_lacks_is_synced_and_idle() -> None:
    with EmbeddedKubeAPI(install_karpenter_crds=False) as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        informers = SharedInformers(api_client, metrics=RelayMetrics(), timings=FAST)
        try:
            heard = Heard()
            informer = informers.informer(KarpenterNodeClaim)
            informer.subscribe(heard)
            wait_for(informer.synced.is_set, "the absent NodeClaims to count as synced")
            assert informer.absent and heard.calls == [] and informer.cached() == []
        finally:
            informers.stop()
            api_client.close()
