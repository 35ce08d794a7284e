"""Concurrent filter and bind through the hub: losers get an error and the books stay exact."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from gpupool.scheduler.extender import parse_extender_args
from gpupool_incluster.relay.hub import BindFailed, SchedulerHub

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, gpu_model, pool_model, tf_pod


def test_concurrent_binds_never_oversubscribe_and_losers_leave_no_trace() -> None:
    writer = FakeWriter()
    hub = SchedulerHub(writer)
    hub.apply_pool(pool_model())
    hub.apply_gpu(gpu_model("a-0", "a", tflops="100"))
    pods = [tf_pod(f"p{i}", tflops="30", vram="1Gi") for i in range(12)]
    for pod in pods:
        writer.add(pod)
    start = threading.Barrier(len(pods) + 2)
    wins: list[str] = []
    losses: list[str] = []
    filter_answers: list[list[str]] = []

    def bind(name: str) -> None:
        start.wait()
        try:
            hub.bind("team", name, f"uid-{name}", "a")
            wins.append(name)
        except BindFailed as exc:
            losses.append(str(exc))

    def keep_filtering() -> None:
        start.wait()
        for _ in range(50):
            answer = hub.filter(
                parse_extender_args({"Pod": tf_pod("probe", tflops="30"), "NodeNames": ["a"]})
            )
            filter_answers.append(answer["NodeNames"])

    threads = [threading.Thread(target=bind, args=(p["metadata"]["name"],)) for p in pods]
    threads += [threading.Thread(target=keep_filtering) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(wins) == 3 and len(losses) == 9
    assert all("no longer fits node a" in loss for loss in losses)
    state = hub.allocator.state
    state.ensure_layout()
    slot = state.slot_of["a-0"]
    assert int(state.avail_t[slot]) == 10_000
    assert int(state.workers[slot]) == 3
    assert sorted(state.allocations) == sorted(f"team/{w}" for w in wins)
    bound = [k for k, p in writer.pods.items() if p["spec"].get("nodeName") == "a"]
    assert sorted(bound) == sorted(f"team/{w}" for w in wins)
    assert all(answer in ([], ["a"]) for answer in filter_answers)


def test_second_bind_of_the_same_pod_fails_cleanly() -> None:
    writer = FakeWriter()
    hub = SchedulerHub(writer)
    hub.apply_pool(pool_model())
    hub.apply_gpu(gpu_model("a-0", "a"))
    hub.apply_gpu(gpu_model("b-0", "b"))
    writer.add(tf_pod("p"))
    hub.bind("team", "p", "uid-p", "a")
    try:
        hub.bind("team", "p", "uid-p", "b")
    except BindFailed as exc:
        assert "already holds GPUs a-0 on a" in str(exc)
    else:
        raise AssertionError("a second bind to another node must fail")
    assert list(hub.allocator.state.allocations) == ["team/p"]
    assert writer.pods["team/p"]["spec"]["nodeName"] == "a"
