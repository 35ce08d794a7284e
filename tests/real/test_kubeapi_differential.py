"""The embedded API server measured against the real one: the differential's corpus
(benchmarks/kubeapi_corpus.py) sent to the session's kube-apiserver and to a fresh embedded server,
their answers normalised and compared. Every disagreement must be one docs/sandbox.md lists under
"Measured against kube-apiserver" — a new one fails here, naming the request and where the answers
part — and the agreement may not fall below the figure recorded there."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.kubeapi_corpus import CORPUS
from benchmarks.kubeapi_differential import Target, differential
from gpupool.sandbox.cluster.controlplane import ControlPlane

DOC = Path(__file__).resolve().parents[2] / "docs" / "sandbox.md"
SECTION = "## Measured against kube-apiserver"


def listed_divergences() -> tuple[set[str], int]:
    """The request names docs/sandbox.md lists as disagreeing, and the agreement it records."""
    text = DOC.read_text()
    assert SECTION in text, f"{DOC} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE))
    recorded = re.search(r"corpus: (\d+) requests; (\d+) of \1 agree", section)
    assert recorded is not None, "the section records the printed figures"
    return names, int(recorded.group(2))


def test_every_disagreement_with_kube_apiserver_is_a_listed_one(control_plane: ControlPlane) -> None:
    listed, recorded_agree = listed_divergences()
    assert listed <= {request.name for request in CORPUS}, "docs name requests the corpus has"
    report = differential(Target.from_kubeconfig(control_plane.kubeconfig))
    printed = "\n".join(report.lines("kube-apiserver", "embedded"))
    new = [item.name for item in report.disagreements if item.name not in listed]
    assert not new, f"disagreements docs/sandbox.md does not list: {new}\n{printed}"
    assert report.agree >= recorded_agree, printed
