"""The API server differential (benchmarks/kubeapi_differential.py) itself: its corpus covers what
issue 31 asks for, it reads a kubeconfig as kubectl does, its normal form hides only what a server
chooses, and two embedded servers answer the whole corpus alike — so a disagreement it reports
against kube-apiserver is the embedded server's, not the script's."""

from __future__ import annotations

import base64
from pathlib import Path

from benchmarks.kubeapi_corpus import CORPUS, METADATA_LIST, TABLE
from benchmarks.kubeapi_differential import Answer, Target, compare, differential, embedded_target
from benchmarks.kubeapi_differential import _normal as normal


def test_the_corpus_covers_what_the_issue_asks_for() -> None:
    paths = " ".join(f"{r.method} {r.path}" for r in CORPUS)
    assert "tensor-fusion.ai" in paths and "karpenter.sh/v1/nodeclaims" in paths and "nodepools" in paths
    assert sum(1 for r in CORPUS if r.name.startswith("NodeClaim refused")) >= 15
    assert any(r.method == "PUT" for r in CORPUS) and any("/status" in r.path for r in CORPUS)
    watches = [r for r in CORPUS if r.watch]
    assert any("resourceVersion={rv[" in r.path for r in watches) and any("%3Dx" in r.path for r in watches)
    assert any("fieldSelector" in r.path for r in CORPUS)
    assert {TABLE, METADATA_LIST} <= {r.accept for r in CORPUS}
    assert any("/events" in r.path and r.method == "POST" for r in CORPUS)
    assert len({r.name for r in CORPUS}) == len(CORPUS), "names identify answers"


def test_two_embedded_servers_agree_on_every_request() -> None:
    with embedded_target("reference") as reference:
        report = differential(reference, run="selftest")
    assert report.size == sum(1 for request in CORPUS if not request.setup)
    assert report.agree == report.size, "\n".join(report.lines("reference", "embedded"))


def test_what_a_server_chooses_is_compared_for_presence_only() -> None:
    one = {"metadata": {"uid": "a", "resourceVersion": "7", "creationTimestamp": "t1", "managedFields": [1]}}
    two = {"metadata": {"uid": "b", "resourceVersion": "9", "creationTimestamp": "t2"}}
    assert normal(one) == normal(two)
    assert normal({"metadata": {"uid": "a"}}) != normal({"metadata": {}})
    table = {
        "kind": "Table",
        "columnDefinitions": [{"name": "Name"}, {"name": "Age"}],
        "rows": [{"cells": ["x", "3s"]}],
    }
    assert normal(table)["rows"][0]["cells"] == ["x", "<age>"]


def test_a_disagreement_names_the_request_and_where_the_answers_part() -> None:
    name = CORPUS[0].name
    report = compare({name: Answer(201, {"a": 1})}, {name: Answer(422, {"a": 2})}, CORPUS[:1])
    assert report.agree == 0
    (item,) = report.disagreements
    assert item.name == name and "code: reference 201 | embedded 422" in item.differences
    assert "body.a: reference 1 | embedded 2" in item.differences


def test_a_kubeconfig_is_read_as_kubectl_reads_it(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443/',"
        " insecure-skip-tls-verify: true}}]\n"
        f"users: [{{name: u, user: {{token: {base64.b64encode(b'x').decode()}}}}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    target = Target.from_kubeconfig(config)
    assert target.url == "https://127.0.0.1:6443" and target.token == "eA=="
    assert target.context is not None and not target.context.check_hostname


def test_a_refusals_causes_are_compared_in_any_order() -> None:
    """Upstream lists the causes of two fields in Go map order, either way round."""

    def refusal(*fields: str) -> dict[str, object]:
        causes = [{"field": f, "message": "Required value", "reason": "FieldValueRequired"} for f in fields]
        listed = ", ".join(f"{f}: Required value" for f in fields)
        return {"kind": "Status", "message": f'X "x" is invalid: [{listed}]', "details": {"causes": causes}}

    assert normal(refusal("a", "b")) == normal(refusal("b", "a"))
    assert normal(refusal("a", "b")) != normal(refusal("a", "c"))
