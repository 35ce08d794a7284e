"""Three places the embedded server once answered otherwise than kube-apiserver 1.36 does, each
now as upstream's source reads (apiextensions-apiserver, kube-openapi):
- `format: date-time` (and `date`): kube-openapi's reading of RFC 3339, quirks included, a
  violation a TypeInvalid cause (reason FieldValueTypeInvalid) `… in body must be of type
  date-time: "<value>"`, named from inside `status` on a status write;
- a `pattern` and the name/label rules read as Go's regexp reads them: `$` is the end of the
  text, so `expireAfter: "720h\\n"` is refused (the value printed as Go's %q prints it);
- a blocking schema error (a wrong type or format, a required field, an enum, a length or
  count past its maximum) stops the CEL rules, and the one note "some validation rules were
  not checked …" (field `<nil>`) stands in their place; a non-blocking one (a pattern, a
  minimum) leaves them to run. Several causes are listed in brackets in the message.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from kubeapi_builders import status_body
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.kubeapi.errors import go_quote
from gpupool.sandbox.kubeapi.string_formats import is_date, is_date_time

REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
TYPE_IN = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}
NOTE = (
    "Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)
IN_RULE = "requirements with operator 'In' must have a value defined"
_names = itertools.count()


@pytest.fixture(scope="module")
def custom() -> Iterator[client.CustomObjectsApi]:
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        yield client.CustomObjectsApi(api_client)
        api_client.close()


def _nodeclaim(custom: client.CustomObjectsApi, **spec: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": f"claim-{next(_names)}"},
        "spec": {"nodeClassRef": dict(REF), "requirements": [dict(TYPE_IN)], **spec},
    }
    created: dict[str, Any] = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", body)
    return created


def _refusal(call: Any) -> dict[str, Any]:
    with pytest.raises(ApiException) as raised:
        call()
    assert raised.value.status == 422
    return status_body(raised.value)


def _causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


# (text, what kube-openapi's IsDateTime answers)
DATE_TIMES = [
    ("2026-03-01T12:00:00Z", True),
    ("2026-03-01t12:00:00z", True),
    ("2026-03-01T12:00:00.123456+05:30", True),
    ("2026-03-01T12:00:00,5Z", True),  # the fraction's first character is any character
    ("2026-03-01T12:00:00+99:99", True),  # the offset's digits are not checked
    ("2026-03-01T12:00:00ZTanything", True),  # what follows a second `t` is not read
    ("2026-03-01T24:00:00Z", False),
    ("2026-03-01T12:60:00Z", False),
    ("2026-03-01T12:00:60Z", False),
    ("2026-02-30T12:00:00Z", False),
    ("2026-03-01T12:00:00", False),  # no zone
    ("2026-03-01 12:00:00Z", False),
    ("2026-03-01T12:00:00Z\n", False),
    ("2026-3-01T12:00:00Z", False),
    ("yesterday", False),
    ("", False),
]


@pytest.mark.parametrize(("text", "expected"), DATE_TIMES, ids=[repr(t) for t, _ in DATE_TIMES])
def test_date_time_is_read_as_kube_openapi_reads_it(text: str, expected: bool) -> None:
    assert is_date_time(text) is expected


def test_a_date_is_a_calendar_day() -> None:
    assert is_date("2024-02-29") and not is_date("2026-02-29") and not is_date("2026-13-01")


def test_go_quote_prints_as_go_does() -> None:
    assert go_quote('720h\n"x"\\') == '"720h\\n\\"x\\"\\\\"'
    assert go_quote("\x00é") == '"\\x00é"'


def test_a_date_time_violation_is_refused_with_upstreams_cause(custom: client.CustomObjectsApi) -> None:
    name = _nodeclaim(custom)["metadata"]["name"]
    condition = {
        "type": "Launched",
        "status": "True",
        "reason": "Launched",
        "lastTransitionTime": "yesterday",
    }
    body = _refusal(
        lambda: custom.patch_cluster_custom_object_status(
            "karpenter.sh", "v1", "nodeclaims", name, {"status": {"conditions": [condition]}}
        )
    )
    where = "status.conditions[0].lastTransitionTime"
    # A status write validates the status schema alone: the message names the path from inside it.
    named = "conditions[0].lastTransitionTime"
    assert (where, f'Invalid value: "yesterday": {named} in body must be of type date-time: "yesterday"') in (
        _causes(body)
    )
    assert body["details"]["causes"][0]["reason"] == "FieldValueTypeInvalid"


def test_a_duration_with_a_trailing_newline_is_refused(custom: client.CustomObjectsApi) -> None:
    body = _refusal(lambda: _nodeclaim(custom, expireAfter="720h\n"))
    assert _causes(body) == [
        (
            "spec.expireAfter",
            "Invalid value: \"720h\\n\": spec.expireAfter in body should match '^(([0-9]+(s|m|h))+|Never)$'",
        )
    ]


def test_a_label_value_with_a_trailing_newline_is_refused(custom: client.CustomObjectsApi) -> None:
    body = _refusal(
        lambda: custom.create_cluster_custom_object(
            "karpenter.sh",
            "v1",
            "nodeclaims",
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {"name": "newline-label", "labels": {"team": "a\n"}},
                "spec": {"nodeClassRef": dict(REF), "requirements": [dict(TYPE_IN)]},
            },
        )
    )
    assert any(field.startswith("metadata.labels") for field, _ in _causes(body))


def test_a_blocking_error_stops_the_rules_and_leaves_the_note(custom: client.CustomObjectsApi) -> None:
    requirements = [
        {"key": "k", "operator": "Equals", "values": ["a"]},
        {"key": "j", "operator": "In", "values": []},
    ]
    body = _refusal(lambda: _nodeclaim(custom, requirements=requirements))
    causes = _causes(body)
    assert causes[-1] == ("<nil>", NOTE)
    assert not any(IN_RULE in message for _, message in causes), "CEL did not run"
    assert body["details"]["causes"][-1]["reason"] == "FieldValueInvalid"
    assert (
        body["message"].endswith(f"<nil>: {NOTE}]") and ": [spec.requirements[0].operator" in body["message"]
    )


def test_a_non_blocking_error_leaves_the_rules_to_run(custom: client.CustomObjectsApi) -> None:
    body = _refusal(
        lambda: _nodeclaim(
            custom, expireAfter="30d", requirements=[{"key": "j", "operator": "In", "values": []}]
        )
    )
    messages = [message for _, message in _causes(body)]
    assert any("should match" in m for m in messages) and any(IN_RULE in m for m in messages)
    assert not any("some validation rules were not checked" in m for m in messages)


def test_a_wrong_type_is_named_as_json_names_it_and_blocks(custom: client.CustomObjectsApi) -> None:
    body = _refusal(
        lambda: _nodeclaim(custom, expireAfter=5, requirements=[{"key": "j", "operator": "In", "values": []}])
    )
    assert _causes(body) == [
        (
            "spec.expireAfter",
            'Invalid value: "integer": spec.expireAfter in body must be of type string: "integer"',
        ),
        ("<nil>", NOTE),
    ]


def test_a_quantity_of_no_type_it_takes_fails_its_any_of_as_upstream(custom: client.CustomObjectsApi) -> None:
    """gpupool's quantities are int-or-string with `anyOf: [integer, string]`: a boolean fails the
    type (`integer,string`), then the anyOf (filed under the validated root, here `status`), then
    the first branch."""
    pool = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": {"name": "quantities"},
        "spec": {"capacityConfig": {"minResources": {"tflops": "100", "vram": "16Gi"}}},
    }
    custom.create_cluster_custom_object("tensor-fusion.ai", "v1", "gpupools", pool)
    body = _refusal(
        lambda: custom.patch_cluster_custom_object_status(
            "tensor-fusion.ai", "v1", "gpupools", "quantities", {"status": {"totalTFlops": True}}
        )
    )
    assert _causes(body) == [
        (
            "status.totalTFlops",
            'Invalid value: "boolean": totalTFlops in body must be of type integer,string: "boolean"',
        ),
        ("status", 'Invalid value: "": "totalTFlops" must validate at least one schema (anyOf)'),
        (
            "status.totalTFlops",
            'Invalid value: "boolean": totalTFlops in body must be of type integer: "boolean"',
        ),
    ]
    assert [c["reason"] for c in body["details"]["causes"]] == [
        "FieldValueTypeInvalid",
        "FieldValueInvalid",
        "FieldValueTypeInvalid",
    ]
