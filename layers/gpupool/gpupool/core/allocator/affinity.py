"""Does a node's label set satisfy a pod's nodeSelector and required node affinity?

Role: Kubernetes' node selector semantics (terms ORed, expressions ANDed, each expression read
by the one requirement algebra, `core.model.requirements`; matchFields on `metadata.name`), with
a human-readable reason when a node fails.

Must not: know about GPUs or hold state.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpupool.core.allocator.request import NodeConstraints
from gpupool.core.model.requirements import RequirementLike, failing, holds

__all__ = ["node_constraint_failure"]


def _describe(expr: RequirementLike) -> str:
    if expr.values:
        return f"{expr.key} {expr.operator} [{', '.join(expr.values)}]"
    return f"{expr.key} {expr.operator}"


def node_constraint_failure(
    constraints: NodeConstraints, node_name: str, labels: Mapping[str, str]
) -> str | None:
    """None when the node satisfies the constraints, else why it does not."""
    for key, wanted in constraints.node_selector:
        have = labels.get(key)
        if not holds("In", (wanted,), have):
            return f"nodeSelector {key}={wanted} does not match (node has {key}={have})"
    if not constraints.required_terms:
        return None
    failures: list[str] = []
    for term in constraints.required_terms:
        failed = failing(term.match_expressions, labels) or failing(
            term.match_fields, {"metadata.name": node_name}
        )
        if failed is None:
            return None
        failures.append(_describe(failed))
    return "required node affinity not satisfied: " + "; ".join(failures)
