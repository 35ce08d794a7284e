"""DeferredModel: a model is built on first use, once, and models using it refer to its build."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pydantic._internal._model_construction as construction
import pytest
from pydantic import BaseModel, Field, ValidationError

import gpupool
from gpupool.core.deferred_model import DeferredModel, build_imported_models


def _builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the models pydantic completes from now on, in order."""
    built: list[str] = []
    complete = construction.complete_model_class

    def counting(cls: type[BaseModel], *args: Any, **kwargs: Any) -> bool:
        built.append(cls.__name__)
        return complete(cls, *args, **kwargs)

    monkeypatch.setattr(construction, "complete_model_class", counting)
    return built


def test_a_model_is_not_built_until_first_used() -> None:
    class Leaf(DeferredModel):
        size: int

    assert not Leaf.__pydantic_complete__
    assert Leaf(size=1).size == 1
    assert Leaf.__pydantic_complete__


def test_a_model_another_refers_to_is_built_once_and_referred_to(monkeypatch: pytest.MonkeyPatch) -> None:
    class Leaf(DeferredModel):
        size: int

    class Branch(DeferredModel):
        leaves: list[Leaf]

    class Tree(DeferredModel):
        branches: list[Branch]
        biggest: Leaf | None = None

    built = _builds(monkeypatch)
    tree = Tree.model_validate({"branches": [{"leaves": [{"size": 2}]}], "biggest": {"size": 3}})
    Leaf(size=4)
    Branch(leaves=[])

    assert tree.branches[0].leaves[0].size == 2
    assert sorted(built) == ["Branch", "Leaf", "Tree"]  # each once, none again when used alone
    assert Leaf.__pydantic_complete__ and Branch.__pydantic_complete__


def test_a_deferred_model_still_refuses_bad_input() -> None:
    class Leaf(DeferredModel):
        size: int

    class Branch(DeferredModel):
        leaves: list[Leaf]

    with pytest.raises(ValidationError, match=r"leaves\.0\.size"):
        Branch.model_validate({"leaves": [{"size": "big"}]})


def test_a_model_that_refers_to_itself_builds() -> None:
    class Node(DeferredModel):
        name: str
        children: list[Node] = Field(default_factory=list)

    Node.model_rebuild()
    tree = Node.model_validate({"name": "root", "children": [{"name": "leaf"}]})

    assert tree.children[0].name == "leaf"


def _every_deferred_model() -> list[type[DeferredModel]]:
    for module in pkgutil.walk_packages(gpupool.__path__, prefix="gpupool."):
        if ".sandbox" in module.name or module.name.endswith("__main__"):
            continue
        importlib.import_module(module.name)
    found: list[type[DeferredModel]] = []
    pending: list[type[DeferredModel]] = [DeferredModel]
    while pending:
        for sub in pending.pop().__subclasses__():
            found.append(sub)
            pending.append(sub)
    return [model for model in found if model.__module__.startswith("gpupool.")]


def test_every_gpupool_model_builds() -> None:
    """A deferred model's schema is built when first used, so an error in one would surface in
    a function at run time: build every one here instead."""
    models = _every_deferred_model()
    for model in models:
        model.model_rebuild()
        assert model.__pydantic_complete__, model

    assert len(models) > 100  # the models of every module, not an empty walk


def test_build_imported_models_builds_each_one_not_yet_built() -> None:
    class Unused(DeferredModel):
        size: int

    assert not Unused.__pydantic_complete__
    assert build_imported_models() >= 1
    assert Unused.__pydantic_complete__
    assert build_imported_models() == 0  # nothing left to build
