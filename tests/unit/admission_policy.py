"""A ValidatingAdmissionPolicy evaluated as the API server does, for the chart's policy tests.

Follows admissionregistration.k8s.io/v1 (the ValidatingAdmissionPolicy API reference and
k8s.io/apiserver/pkg/admission/plugin/policy/validating): `matchConstraints.resourceRules` select
the request by API group, version, resource and operation; every `matchConditions` expression must
be true, else the policy does not apply; `variables` are evaluated in order and read as
`variables.<name>`; every `validations` expression must be true, else the request is denied with
that validation's `message`. CEL bindings are `object`, `oldObject` (null on CREATE) and
`request` (operation, userInfo.username, subResource: `pods/status` is resource `pods/status`,
subresource `status`).

Simpler than the real one: CEL is cel-python's standard library, so Kubernetes' extension libraries
(strings, lists, regex, quantity, authorizer) are absent — a policy using them fails to compile
here and its test fails; variables are evaluated eagerly (the API server evaluates them when first
read); `messageExpression`, `params` and the binding's `matchResources` are not modelled (the
chart's bindings have none, which its test checks); objects are untyped JSON maps where the API
server types them by their OpenAPI schema (`has()` on an unset field is false in both).
"""

from __future__ import annotations

from typing import Any

import celpy
from celpy import celtypes

__all__ = ["Verdict", "evaluate"]

Verdict = str | None  # None: allowed; else the denial message


def _matches(policy: dict[str, Any], operation: str, group: str, resource: str) -> bool:
    for rule in policy["spec"]["matchConstraints"]["resourceRules"]:
        if (
            group in rule["apiGroups"]
            and (resource in rule["resources"] or "*" in rule["resources"])
            and (operation in rule["operations"] or "*" in rule["operations"])
        ):
            return True
    return False


def _run(env: celpy.Environment, source: str, activation: dict[str, Any]) -> Any:
    return env.program(env.compile(source)).evaluate(activation)


def evaluate(
    policy: dict[str, Any],
    *,
    operation: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None = None,
    username: str = "system:serviceaccount:tenant-b:default",
    group: str = "",
    resource: str = "pods",
) -> Verdict:
    """The verdict of one policy on one request."""
    if not _matches(policy, operation, group, resource):
        return None
    env = celpy.Environment()
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(obj),
        "oldObject": celtypes.NullType() if old is None else celpy.json_to_cel(old),
        "request": celpy.json_to_cel(
            {
                "operation": operation,
                "userInfo": {"username": username},
                "subResource": resource.partition("/")[2],
            }
        ),
    }
    spec = policy["spec"]
    for condition in spec.get("matchConditions", []):
        if not bool(_run(env, condition["expression"], activation)):
            return None
    variables: dict[str, Any] = {}
    for variable in spec.get("variables", []):
        activation["variables"] = celtypes.MapType(variables)
        variables[celtypes.StringType(variable["name"])] = _run(env, variable["expression"], activation)
    activation["variables"] = celtypes.MapType(variables)
    for validation in spec["validations"]:
        result = _run(env, validation["expression"], activation)
        if not isinstance(result, celtypes.BoolType):
            raise AssertionError(f"validation {validation['expression']!r} gave {result!r}, not a bool")
        if not result:
            return " ".join(str(validation.get("message", "denied")).split())
    return None
