"""docs/CONTRIBUTING.md's checklist for a new Kubernetes call, walked for every role of the Cluster port.

Covers: every method of every role (`service.ports.CLUSTER_ROLES`) is implemented, with the
role's signature, by the kube adapter (`KubeCluster`), the per-invocation view
(`InvocationCluster`) and the in-memory double (`MemoryCluster`), one test per implementation,
role and method so a file a new call missed fails by name; what each may leave out is what it
serves another way — the view forwards a method it does not cache to the port it wraps, the
double derives a plain read of one kind (`list_x()` / `get_x(name)`) from the port's types — and
both refuse any name that is not a port method; the file count the checklist states is the count
of implementations walked here; and `Cluster` is all the roles and nothing else.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpupool.adapters.kube.cluster import KubeCluster
from gpupool.core.model.node import GPU
from gpupool.core.model.pool import GPUPool
from gpupool.service.errors import NotFound
from gpupool.service.invocation_cluster import InvocationCluster
from gpupool.service.ports import CLUSTER_METHODS, CLUSTER_ROLES, Cluster
from gpupool.testing.memory_ports import START, MemoryClock, MemoryCluster
from gpupool.testing.memory_ports.cluster import kind_read

IMPLEMENTATIONS: tuple[type, ...] = (KubeCluster, InvocationCluster, MemoryCluster)
CONTRIBUTING = Path(__file__).resolve().parents[2] / "docs" / "CONTRIBUTING.md"

CASES = [
    pytest.param(impl, role, name, id=f"{impl.__name__}-{role.__name__}.{name}")
    for impl in IMPLEMENTATIONS
    for role in CLUSTER_ROLES
    for name, member in vars(role).items()
    if callable(member) and not name.startswith("_")
]


def _signature(function: Any) -> str:
    """The signature as written (annotations are strings under `from __future__ import annotations`)."""
    return str(inspect.signature(function))


def _written(impl: type, name: str) -> bool:
    return any(name in vars(klass) for klass in impl.__mro__ if klass is not object)


@pytest.mark.parametrize(("impl", "role", "name"), CASES)
def test_every_implementation_serves_every_method_of_every_role(impl: type, role: type, name: str) -> None:
    declared = vars(role)[name]
    if _written(impl, name):
        assert _signature(getattr(impl, name)) == _signature(declared), (
            f"{impl.__name__}.{name} differs from {role.__name__}.{name}"
        )
        return
    if impl is InvocationCluster:  # not cached here: the wrapped port's own method
        port = SimpleNamespace(**{method: object() for method in CLUSTER_METHODS})
        assert getattr(InvocationCluster(port), name) is getattr(port, name)  # type: ignore[arg-type]
        return
    assert impl is MemoryCluster, f"{impl.__name__} lacks {role.__name__}.{name}"
    assert kind_read(name) is not None, (
        f"MemoryCluster lacks {role.__name__}.{name}, which is no plain read of one kind: write it out"
    )


def test_a_derived_read_answers_the_stored_objects_and_records_the_call() -> None:
    memory = MemoryCluster(MemoryClock(START))
    memory.add(
        GPU.model_validate({"metadata": {"name": "b"}}), GPU.model_validate({"metadata": {"name": "a"}})
    )
    assert [gpu.name for gpu in memory.list_gpus()] == ["a", "b"]
    with pytest.raises(NotFound):
        memory.get_pool("missing")
    memory.add(GPUPool.model_validate({"metadata": {"name": "pool-a"}, "spec": {}}))
    assert memory.get_pool(name="pool-a").name == "pool-a"
    assert memory.calls == [("list_gpus", ()), ("get_pool", ("missing",)), ("get_pool", ("pool-a",))]


@pytest.mark.parametrize("name", ["list_everything", "patch_anything", "_private", "__deepcopy__"])
def test_a_name_that_is_no_port_method_is_refused(name: str) -> None:
    memory = MemoryCluster(MemoryClock(START))
    for obj in (memory, InvocationCluster(memory)):
        with pytest.raises(AttributeError, match=name):
            getattr(obj, name)


def test_cluster_is_every_role_and_nothing_else() -> None:
    own = {name for name, member in vars(Cluster).items() if callable(member) and not name.startswith("_")}
    assert own == set()
    assert set(Cluster.__mro__) >= set(CLUSTER_ROLES)
    assert len(CLUSTER_METHODS) == sum(
        1
        for role in CLUSTER_ROLES
        for name, member in vars(role).items()
        if callable(member) and name[0] != "_"
    ), "one method in two roles"


def test_the_checklist_states_the_true_count_of_implementations() -> None:
    section = CONTRIBUTING.read_text().split("### Adding a Kubernetes call", 1)[1].split("\n## ", 1)[0]
    stated = {int(n) for n in re.findall(r"\*\*(\d) files\*\*", section)}
    # A plain read of one kind: the port and the kube adapter; any other call: also the double.
    assert stated == {2, 3}
    for impl in IMPLEMENTATIONS:
        assert impl.__name__ in section
