"""The vocabulary is defined once: a scan of the product's source (its string literals, docstrings
left out) finds the scheduler name, the relay's CloudEvents type prefix and each relay event
type's name exactly once, in their home module, and no second table of them (no other module
assigns a name the vocabulary's tables use). Product code: `layers/gpupool/gpupool`,
`incluster/gpupool_incluster` and `functions`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpupool.core.model.constants import SCHEDULER_NAME
from gpupool.core.vocabulary.events import RELAY_EVENT_TYPES, TYPE_PREFIX

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = (
    ROOT / "layers" / "gpupool" / "gpupool",
    ROOT / "incluster" / "gpupool_incluster",
    ROOT / "functions",
)
CONSTANTS = "layers/gpupool/gpupool/core/model/constants.py"
EVENTS = "layers/gpupool/gpupool/core/vocabulary/events.py"
# Module-level names of the vocabulary's definitions (and of the copies it replaced).
TABLE_NAMES = {
    "SCHEDULER_NAME": CONSTANTS,
    "TF_SCHEDULER": None,
    "TYPE_PREFIX": EVENTS,
    "RELAY_TYPE_PREFIX": None,
    "RELAY_TYPES": EVENTS,
    "RELAY_EVENT_TYPES": EVENTS,
    "FUNCTION_OF": None,
    "COALESCED": None,
}


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for root in PRODUCT:
        for path in sorted(root.rglob("*.py")):
            yield str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"))


def _docstrings(tree: ast.Module) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _literals() -> list[tuple[str, int, str]]:
    """(file, line, text) of every string literal in the product that is not a docstring."""
    found = []
    for name, tree in _sources():
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                found.append((name, node.lineno, node.value))
    return found


LITERALS = _literals()
WORDS = [
    (SCHEDULER_NAME, CONSTANTS),
    (TYPE_PREFIX, EVENTS),
    *[(event_type.name, EVENTS) for event_type in RELAY_EVENT_TYPES],
]


def test_the_scan_sees_the_product() -> None:
    files = {name for name, _, _ in LITERALS}
    for expected in (
        CONSTANTS,
        EVENTS,
        "incluster/gpupool_incluster/relay/changes.py",
        "functions/bind/app.py",
    ):
        assert expected in files, expected
    assert len(files) > 100


@pytest.mark.parametrize(("word", "home"), WORDS, ids=[w for w, _ in WORDS])
def test_each_word_of_the_vocabulary_is_written_once_in_its_home(word: str, home: str) -> None:
    places = [(name, line) for name, line, text in LITERALS if word in text]
    assert [name for name, _ in places] == [home], places


def test_no_module_but_the_home_one_assigns_a_vocabulary_table() -> None:
    assigned = []
    for name, tree in _sources():
        for node in tree.body:
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            else:
                continue
            assigned += [(t.id, name) for t in targets if isinstance(t, ast.Name) and t.id in TABLE_NAMES]
    assert sorted(assigned) == sorted((table, home) for table, home in TABLE_NAMES.items() if home), assigned
