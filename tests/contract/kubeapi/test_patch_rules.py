"""Table tests for the server's pure patch and selector rules (no HTTP): RFC 7386 merge
patch examples, RFC 6902 edge cases, strategic-merge directives, selector parsing."""

from __future__ import annotations

from typing import Any

import pytest

from gpupool.sandbox.kubeapi.errors import ApiError
from gpupool.sandbox.kubeapi.patch import json_patch, merge_patch, strategic_merge_patch
from gpupool.sandbox.kubeapi.selectors import parse_label_selector, selector_from_object


@pytest.mark.parametrize(
    ("original", "patch", "expected"),
    [  # RFC 7386 appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch(original: Any, patch: Any, expected: Any) -> None:
    assert merge_patch(original, patch) == expected


@pytest.mark.parametrize(
    ("operations", "expected"),
    [
        ([{"op": "add", "path": "/list/1", "value": "x"}], {"list": ["a", "x", "b"], "m": {"k": 1}}),
        ([{"op": "remove", "path": "/list/0"}], {"list": ["b"], "m": {"k": 1}}),
        ([{"op": "move", "from": "/m/k", "path": "/k"}], {"list": ["a", "b"], "m": {}, "k": 1}),
        (
            [{"op": "copy", "from": "/list", "path": "/copy"}],
            {"list": ["a", "b"], "m": {"k": 1}, "copy": ["a", "b"]},
        ),
        ([{"op": "replace", "path": "/list/1", "value": "z"}], {"list": ["a", "z"], "m": {"k": 1}}),
    ],
)
def test_json_patch(operations: list[Any], expected: Any) -> None:
    original = {"list": ["a", "b"], "m": {"k": 1}}
    assert json_patch(original, operations) == expected
    assert original == {"list": ["a", "b"], "m": {"k": 1}}  # never mutated


@pytest.mark.parametrize(
    "operations",
    [
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/list/5", "value": 1}],
        [{"op": "test", "path": "/m/k", "value": 2}],
        [{"op": "frobnicate", "path": "/m"}],
        [{"op": "add", "path": "no-slash", "value": 1}],
    ],
)
def test_bad_json_patch_is_refused(operations: list[Any]) -> None:
    with pytest.raises(ApiError) as raised:
        json_patch({"list": ["a", "b"], "m": {"k": 1}}, operations)
    assert raised.value.code == 422


def test_strategic_merge_replace_directive_on_a_map() -> None:
    original = {"metadata": {"labels": {"a": "1", "b": "2"}}}
    patched = strategic_merge_patch(original, {"metadata": {"labels": {"$patch": "replace", "c": "3"}}})
    assert patched == {"metadata": {"labels": {"c": "3"}}}


def test_strategic_merge_owner_references_by_uid() -> None:
    original = {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}}
    patched = strategic_merge_patch(
        original,
        {"metadata": {"ownerReferences": [{"uid": "2", "name": "b2"}, {"uid": "1", "$patch": "delete"}]}},
    )
    assert patched["metadata"]["ownerReferences"] == [{"uid": "2", "name": "b2"}]


def test_strategic_merge_env_by_name_inside_containers() -> None:
    original = {
        "spec": {
            "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]
        }
    }
    patched = strategic_merge_patch(
        original, {"spec": {"containers": [{"name": "c", "env": [{"name": "B", "value": "3"}]}]}}
    )
    assert patched["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
    ]


def test_selector_object_matches_like_its_string_form() -> None:
    compiled = selector_from_object(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}],
        }
    )
    parsed = parse_label_selector("app=web,tier notin (db)")
    for labels in ({"app": "web"}, {"app": "web", "tier": "db"}, {"app": "db"}, {"app": "web", "tier": "x"}):
        assert compiled.matches(labels) == parsed.matches(labels)


def test_selector_values_may_contain_prefixed_keys() -> None:
    selector = parse_label_selector("nvidia.com/gpu.present=true,!node.kubernetes.io/exclude")
    assert selector.matches({"nvidia.com/gpu.present": "true"})
    assert not selector.matches({"nvidia.com/gpu.present": "true", "node.kubernetes.io/exclude": ""})
