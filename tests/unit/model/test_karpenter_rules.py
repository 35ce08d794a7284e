"""nodeclaim_problems: what Karpenter's NodeClaim CRD and Kubernetes' label rules refuse, each said
in one line, before gpupool writes a NodeClaim; a NodeClaim the CRD accepts has no problem. The
same rows are refused by the sandbox's copy of the CRD (tests/contract/kube/test_nodeclaims_accepted)
— the two are written apart, from the same facts."""

from __future__ import annotations

from typing import Any

import pytest

from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.karpenter_rules import duration_problem, nodeclaim_problems

REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
TYPE_IN = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}


def nodeclaim(labels: dict[str, str] | None = None, **spec: Any) -> KarpenterNodeClaim:
    body = {"nodeClassRef": REF, "requirements": [TYPE_IN], **spec}
    return KarpenterNodeClaim.model_validate(
        {"metadata": {"name": "n", "labels": labels or {}}, "spec": body}
    )


def requirement(**fields: Any) -> KarpenterNodeClaim:
    return nodeclaim(requirements=[fields])


# (what, NodeClaim, a words the problem says)
REFUSED: list[tuple[str, KarpenterNodeClaim, str]] = [
    ("no nodeClassRef", nodeclaim(nodeClassRef=None), "nodeClassRef is required"),
    ("an empty group", nodeclaim(nodeClassRef={**REF, "group": ""}), "nodeClassRef.group"),
    ("a group with a slash", nodeclaim(nodeClassRef={**REF, "group": "a/b"}), "no '/'"),
    ("an empty kind", nodeclaim(nodeClassRef={**REF, "kind": ""}), "nodeClassRef.kind may not be empty"),
    ("an empty name", nodeclaim(nodeClassRef={**REF, "name": ""}), "nodeClassRef.name may not be empty"),
    ("101 requirements", nodeclaim(requirements=[TYPE_IN] * 101), "at most 100"),
    ("a karpenter.sh key", requirement(key="karpenter.sh/foo", operator="Exists"), 'domain "karpenter.sh"'),
    ("a karpenter.sh subdomain key", requirement(key="x.karpenter.sh/a", operator="Exists"), "restricted"),
    ("the hostname key", requirement(key="kubernetes.io/hostname", operator="Exists"), "hostname"),
    ("a key with a space", requirement(key="bad key", operator="Exists"), "not a label key"),
    ("a key past 316", requirement(key="a" * 317, operator="Exists"), "longer than 316"),
    ("an unknown operator", requirement(key="k", operator="Equals", values=["a"]), "the operator must be"),
    ("In without values", requirement(key="k", operator="In"), "operator In needs at least one value"),
    ("Gt -1", requirement(key="k", operator="Gt", values=["-1"]), "one non-negative integer"),
    ("Lt with two values", requirement(key="k", operator="Lt", values=["1", "2"]), "non-negative integer"),
    ("Gte with a word", requirement(key="k", operator="Gte", values=["four"]), "non-negative integer"),
    ("Lte with none", requirement(key="k", operator="Lte"), "non-negative integer"),
    ("minValues 0", requirement(key="k", operator="In", values=["a"], minValues=0), "minValues must be 1–50"),
    ("minValues past the values", requirement(key="k", operator="In", values=["a"], minValues=2), "at least"),
    ("a value no label carries", requirement(key="k", operator="In", values=["T 4"]), "not a label value"),
    ("expireAfter in days", nodeclaim(expireAfter="30d"), "expireAfter '30d' must be a duration"),
    ("terminationGracePeriod in days", nodeclaim(terminationGracePeriod="1d"), "terminationGracePeriod '1d'"),
    ("terminationGracePeriod Never", nodeclaim(terminationGracePeriod="Never"), "terminationGracePeriod"),
    # Go's regexp `$` is the end of the text: a trailing newline is refused, as the API server does.
    ("expireAfter with a newline", nodeclaim(expireAfter="720h\n"), "expireAfter '720h\\n' must be"),
    ("expireAfter Never, newline", nodeclaim(expireAfter="Never\n"), "expireAfter 'Never\\n' must be"),
    ("terminationGracePeriod, newline", nodeclaim(terminationGracePeriod="1h\n"), "terminationGracePeriod"),
    ("Gt with a newline", requirement(key="k", operator="Gt", values=["5\n"]), "non-negative integer"),
    ("a value with a newline", requirement(key="k", operator="In", values=["g5\n"]), "not a label value"),
    ("a taint key with a space", nodeclaim(taints=[{"key": "a b", "effect": "NoSchedule"}]), "taint 0"),
    ("an unknown taint effect", nodeclaim(taints=[{"key": "gpu", "effect": "Never"}]), "the effect must be"),
    ("a label value past 63", nodeclaim(labels={"tensor-fusion.ai/node-provisioner": "p" * 64}), "63"),
    ("a label key with a space", nodeclaim(labels={"bad key": "v"}), "label key 'bad key'"),
]


@pytest.mark.parametrize(("what", "claim", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_each_rule_the_crd_holds_is_one_clear_problem(
    what: str, claim: KarpenterNodeClaim, words: str
) -> None:
    problems = nodeclaim_problems(claim)
    assert len(problems) == 1 and words in problems[0], problems


def test_what_the_crd_accepts_has_no_problem() -> None:
    requirements = [
        {"key": "a", "operator": "In", "values": ["x", "y"], "minValues": 2},
        {"key": "b", "operator": "NotIn", "values": ["x"]},
        {"key": "c", "operator": "Exists"},
        {"key": "d", "operator": "DoesNotExist"},
        *({"key": f"n{op}", "operator": op, "values": ["0"]} for op in ("Gt", "Lt", "Gte", "Lte")),
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu"]},
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["t4"]},
    ]
    claim = nodeclaim(
        labels={"tensor-fusion.ai/node-provisioner": "p" * 63, "team": "ml"},
        requirements=requirements,
        expireAfter="Never",
        terminationGracePeriod="1h30m",
        taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
    )
    assert nodeclaim_problems(claim) == []


@pytest.mark.parametrize(
    ("value", "never", "ok"),
    [
        ("720h", True, True),
        ("Never", True, True),
        ("1h30m", False, True),
        ("Never", False, False),
        ("1d", True, False),
        ("", True, False),
        (None, False, True),
    ],
)
def test_durations_are_karpenters(value: str | None, never: bool, ok: bool) -> None:
    assert (duration_problem("f", value, never=never) is None) is ok
