"""The shared placement rule: shares on the fullest GPU that fits, whole GPUs entirely free on one
node, the most used node first, pods of a lost node pending again, GPU time counted."""

from __future__ import annotations

from decimal import Decimal

from gpupool.simulation.capacity.demand_trace import Demand
from gpupool.simulation.capacity.placement import NodeShape, Placement

ONE_GPU = NodeShape(gpus=1, tflops_per_gpu=Decimal(65), vram_per_gpu=Decimal(16))
FOUR_GPUS = NodeShape(gpus=4, tflops_per_gpu=Decimal(65), vram_per_gpu=Decimal(16))


def _pod(name: str, gpus: str, arrival: float = 0.0, departure: float = 1e9) -> Demand:
    return Demand(arrival=arrival, departure=departure, name=name, gpus=Decimal(gpus))


def test_an_arriving_pod_takes_free_capacity_at_once_or_waits() -> None:
    placement = Placement()
    assert placement.arrive(_pod("a", "0.5"), 0) is None  # no node yet
    placement.sync_nodes({"n1": ONE_GPU}, 10)
    assert placement.place_pending(10) == [("a", "n1")]
    assert placement.arrive(_pod("b", "0.5"), 11) == "n1"
    assert placement.arrive(_pod("c", "0.1"), 12) is None  # n1 is full
    assert list(placement.pending) == ["c"]


def test_shares_go_to_the_most_used_node_and_the_fullest_gpu() -> None:
    placement = Placement()
    placement.sync_nodes({"a-empty": ONE_GPU, "b-used": FOUR_GPUS}, 0)
    assert placement.arrive(_pod("p1", "0.5"), 0) == "a-empty"  # both empty: by free share, a-empty has less
    assert placement.arrive(_pod("p2", "0.3"), 0) == "a-empty"  # the used node first
    node = placement.nodes["a-empty"]
    assert node.free == [Decimal("0.2")]
    assert placement.arrive(_pod("p3", "0.3"), 0) == "b-used"


def test_whole_gpus_need_entirely_free_gpus_on_one_node() -> None:
    placement = Placement()
    placement.sync_nodes({"n4": FOUR_GPUS, "n1": ONE_GPU}, 0)
    assert placement.arrive(_pod("share", "0.1"), 0) == "n1"
    assert placement.arrive(_pod("two", "2"), 0) == "n4"
    assert placement.arrive(_pod("three", "3"), 0) is None  # only 2 whole GPUs left on n4, none elsewhere
    assert placement.arrive(_pod("one", "1"), 0) == "n4"


def test_pods_of_a_lost_node_are_pending_again_and_gpu_time_is_counted() -> None:
    placement = Placement()
    placement.sync_nodes({"n1": ONE_GPU}, 0)
    placement.arrive(_pod("a", "0.5"), 0)
    assert placement.sync_nodes({}, 100) == ["a"]
    assert list(placement.pending) == ["a"] and not placement.placed
    assert placement.gpu_seconds == 50.0  # 0.5 GPU × 100 s
    placement.sync_nodes({"n2": ONE_GPU}, 200)
    assert placement.place_pending(200) == [("a", "n2")]
    assert placement.depart("a", 300) == "n2"
    assert placement.gpu_seconds == 100.0
    assert placement.nodes["n2"].free == [Decimal(1)]


def test_a_pending_pod_that_leaves_was_never_placed() -> None:
    placement = Placement()
    placement.arrive(_pod("a", "1"), 0)
    assert placement.depart("a", 5) is None
    assert not placement.pending and placement.gpu_seconds == 0.0
