"""The relay metrics the chart's alerts read: per-node allocation gauges (capacity, available,
workers) at scrape time, and pods the extender's filter left without a node, by pool."""

from __future__ import annotations

import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from gpupool_incluster.relay.app import create_app
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.metrics import RelayMetrics

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "contract" / "relay"))
from relay_builders import FakeWriter, gpu_model, pool_model, tf_pod


def scrape(metrics: RelayMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    samples = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def relay() -> tuple[TestClient, SchedulerHub, FakeWriter, RelayMetrics]:
    writer = FakeWriter()
    hub = SchedulerHub(writer)
    hub.apply_pool(pool_model())
    hub.apply_gpu(gpu_model("a-0", "a", available_tflops="100"))
    hub.apply_gpu(gpu_model("b-0", "b", available_tflops="5"))
    metrics = RelayMetrics()
    metrics.watch_allocation(hub)
    return TestClient(create_app(hub, metrics=metrics)), hub, writer, metrics


def node(name: str) -> tuple[tuple[str, str], ...]:
    return (("node", name), ("pool", "shared"))


def test_allocation_gauges_follow_the_allocator() -> None:
    http, _, writer, metrics = relay()
    before = scrape(metrics)
    assert before[("gpupool_node_tflops_capacity", node("b"))] == 100.0
    assert before[("gpupool_node_tflops_available", node("b"))] == 5.0
    assert before[("gpupool_node_vram_capacity_bytes", node("a"))] == 40 * 2**30
    assert before[("gpupool_node_workers", node("a"))] == 0.0
    writer.add(tf_pod("p"))
    bound = {"PodName": "p", "PodNamespace": "team", "PodUID": "uid-p", "Node": "a"}
    assert http.post("/scheduler/bind", json=bound).json() == {"Error": ""}
    after = scrape(metrics)
    assert after[("gpupool_node_workers", node("a"))] == 1.0
    assert after[("gpupool_node_tflops_available", node("a"))] == 90.0  # the pod's 10 TFLOPS
    assert after[("gpupool_node_vram_available_bytes", node("a"))] == 36 * 2**30


def test_a_pod_no_node_fits_counts_as_an_allocation_failure_of_its_pool_and_the_stage_it_failed() -> None:
    http, _, _, metrics = relay()
    key = ("gpupool_relay_allocation_failures_total", (("pool", "shared"), ("reason", "resources")))
    fits = http.post("/scheduler/filter", json={"Pod": tf_pod("p"), "NodeNames": ["a", "b"]}).json()
    assert fits["NodeNames"] == ["a"] and key not in scrape(metrics)
    too_big = {"Pod": tf_pod("q", tflops="500"), "NodeNames": ["a", "b"]}
    assert http.post("/scheduler/filter", json=too_big).json()["NodeNames"] == []
    assert scrape(metrics)[key] == 1.0
    # a body the relay cannot read is an error, not an allocation failure
    http.post("/scheduler/filter", content=b"{not json")
    assert scrape(metrics)[key] == 1.0
