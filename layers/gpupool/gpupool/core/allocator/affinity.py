"""Does a node's label set satisfy a pod's nodeSelector and required node affinity?

Role: Kubernetes' node selector semantics (terms ORed, expressions ANDed; operators In, NotIn,
Exists, DoesNotExist, Gt, Lt; matchFields on `metadata.name`), with a human-readable reason when
a node fails.

Must not: know about GPUs or hold state.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpupool.core.allocator.request import MatchExpression, NodeConstraints

__all__ = ["node_constraint_failure"]


def _expression_holds(expr: MatchExpression, value: str | None) -> bool:
    operator = expr.operator
    if operator == "In":
        return value is not None and value in expr.values
    if operator == "NotIn":
        return value is None or value not in expr.values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        if value is None or len(expr.values) != 1:
            return False
        try:
            have, bound = int(value), int(expr.values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _describe(expr: MatchExpression) -> str:
    if expr.values:
        return f"{expr.key} {expr.operator} [{', '.join(expr.values)}]"
    return f"{expr.key} {expr.operator}"


def node_constraint_failure(
    constraints: NodeConstraints, node_name: str, labels: Mapping[str, str]
) -> str | None:
    """None when the node satisfies the constraints, else why it does not."""
    for key, wanted in constraints.node_selector:
        have = labels.get(key)
        if have != wanted:
            return f"nodeSelector {key}={wanted} does not match (node has {key}={have})"
    if not constraints.required_terms:
        return None
    failures: list[str] = []
    for term in constraints.required_terms:
        failed = next(
            (e for e in term.match_expressions if not _expression_holds(e, labels.get(e.key))), None
        )
        if failed is None:
            failed = next(
                (
                    e
                    for e in term.match_fields
                    if not _expression_holds(e, node_name if e.key == "metadata.name" else None)
                ),
                None,
            )
        if failed is None:
            return None
        failures.append(_describe(failed))
    return "required node affinity not satisfied: " + "; ".join(failures)
