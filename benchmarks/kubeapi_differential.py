"""The embedded Kubernetes API server measured against a real one: one corpus, two servers, a count.

Role: `CORPUS` is one sequence of HTTP requests — tensor-fusion.ai manifests (gpupool's CRDs) and
Karpenter NodeClaims and NodePools, valid and not; updates, patches and the status subresource;
lists and watches with resourceVersion, label and field selectors; Table and
PartialObjectMetadataList answers; core/v1 and events.k8s.io Events; a few built-in kinds. It is
sent, in order, to each of two API servers (any server: a URL with a bearer token or client
certificate, read from a kubeconfig, or a fresh embedded server); every answer is normalised
(uids, timestamps, resourceVersions, managedFields, continue tokens, ages: values a server
chooses) and the two are compared. It prints the corpus size, how many answers agree, and each
disagreement with the JSON paths where the answers part.

    .venv/bin/python benchmarks/kubeapi_differential.py --real KUBECONFIG [--install-crds DIR]
    .venv/bin/python benchmarks/kubeapi_differential.py            # embedded against embedded

`--real` names the reference server (kube-apiserver); the other side is always a fresh embedded
server. Without `--real` both sides are embedded (a check of the script itself: all agree).
`--install-crds DIR` first applies gpupool's CRDs and every CRD YAML in DIR (Karpenter's own,
from its module) to the reference server and waits until they are Established. Every object the
corpus writes carries the label `gpupool.dev/differential=<run>` and lives in the namespace
`diff-<run>` or has a name holding `<run>`; all are deleted at the end.

Must not: change anything on a server but what its own corpus creates; reach anything but
the two servers (loopback in practice).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import secrets
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.request
from base64 import b64decode
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `benchmarks.*` when run as a script
from benchmarks.kubeapi_corpus import APPLY, CORPUS, TEARDOWN, Request

__all__ = [
    "CORPUS",
    "Answer",
    "Disagreement",
    "Report",
    "Request",
    "Target",
    "compare",
    "install_crds",
    "main",
    "run_corpus",
]

# Values a server chooses: compared for presence, not value.
_CHOSEN = frozenset(
    {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "continue", "selfLink"}
)
_DROPPED = frozenset({"managedFields"})


# --- the servers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One API server: its URL and how to authenticate (bearer token or TLS client certificate)."""

    name: str
    url: str
    token: str | None = None
    context: ssl.SSLContext | None = None

    @classmethod
    def from_kubeconfig(cls, path: Path, name: str = "real") -> Target:
        """The current context's server and user of a kubeconfig (token, client certificate
        data or files, CA data or file, or insecure-skip-tls-verify)."""
        config = yaml.safe_load(path.read_text())
        current = config.get("current-context") or config["contexts"][0]["name"]
        context = next(c["context"] for c in config["contexts"] if c["name"] == current)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        users: list[dict[str, Any]] = config.get("users") or []
        user: dict[str, Any] = next((u["user"] for u in users if u["name"] == context.get("user")), {})
        url = str(cluster["server"]).rstrip("/")
        token = user.get("token")
        if token is None and user.get("tokenFile"):
            token = Path(user["tokenFile"]).read_text().strip()
        tls = _tls_context(cluster, user, base=path.parent) if url.startswith("https") else None
        return cls(name=name, url=url, token=token, context=tls)


def _data_or_file(entry: Mapping[str, Any], key: str, base: Path) -> bytes | None:
    if entry.get(f"{key}-data"):
        return b64decode(entry[f"{key}-data"])
    if entry.get(key):
        return (base / str(entry[key])).read_bytes()
    return None


def _tls_context(cluster: Mapping[str, Any], user: Mapping[str, Any], *, base: Path) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif (authority := _data_or_file(cluster, "certificate-authority", base)) is not None:
        context.load_verify_locations(cadata=authority.decode())
    cert = _data_or_file(user, "client-certificate", base)
    key = _data_or_file(user, "client-key", base)
    if cert is not None and key is not None:
        with tempfile.TemporaryDirectory() as folder:  # ssl reads a chain from files only
            (Path(folder) / "cert").write_bytes(cert)
            (Path(folder) / "key").write_bytes(key)
            context.load_cert_chain(str(Path(folder) / "cert"), str(Path(folder) / "key"))
    return context


@dataclass(frozen=True)
class Raw:
    code: int
    body: bytes
    warnings: tuple[str, ...]


def send(
    target: Target,
    method: str,
    path: str,
    body: Any = None,
    *,
    content_type: str = "application/json",
    accept: str = "application/json",
    timeout: float = 30.0,
) -> Raw:
    """One request; any HTTP status is an answer (never raises for 4xx/5xx)."""
    data = None
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    headers = {"Accept": accept, "User-Agent": "gpupool-differential"}
    if data is not None:
        headers["Content-Type"] = content_type
    if target.token:
        headers["Authorization"] = f"Bearer {target.token}"
    request = urllib.request.Request(target.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=target.context) as response:
            return Raw(response.status, response.read(), tuple(response.headers.get_all("Warning") or ()))
    except urllib.error.HTTPError as error:
        return Raw(error.code, error.read(), tuple(error.headers.get_all("Warning") or ()))


# --- answers and their normal form ---------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A server's answer, normalised: the status code, the body, the warnings."""

    code: int
    body: Any
    warnings: tuple[str, ...] = ()


def _fill(value: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        return value.format_map(values) if "{" in value else value
    if isinstance(value, list):
        return [_fill(item, values) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, values) for key, item in value.items()}
    return value


def _normal(value: Any, columns: list[str] | None = None) -> Any:
    """`value` with what a server chooses replaced (see `_CHOSEN`); `columns` are the Table
    columns a watch announced in its first event (later events carry rows only)."""
    if isinstance(value, list):
        return [_normal(item, columns) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in _DROPPED:
            continue
        out[key] = "<set>" if key in _CHOSEN and item not in (None, "") else _normal(item, columns)
    if out.get("kind") == "Table":
        _normal_table(out, columns)
    if out.get("kind") == "Status":
        _normal_causes(out)
    return out


def _normal_causes(status: dict[str, Any]) -> None:
    """A 422's causes in a stable order: kube-openapi walks an object's properties in Go map
    order, so upstream lists the causes of two fields either way round. The message, which
    aggregates them in that order, keeps only what precedes them."""
    details = status.get("details")
    if not isinstance(details, dict):
        return
    causes = details.get("causes")
    if not isinstance(causes, list) or len(causes) < 2:
        return
    details["causes"] = sorted(causes, key=lambda c: json.dumps(c, sort_keys=True))
    message = str(status.get("message") or "")
    if " is invalid: [" in message:
        status["message"] = message.split(" is invalid: [", 1)[0] + " is invalid: [the causes]"


def _normal_watch(events: list[Any]) -> list[Any]:
    columns: list[str] = []
    normal = []
    for event in events:
        table = event.get("object") if isinstance(event, dict) else None
        if isinstance(table, dict) and table.get("columnDefinitions"):
            columns = [str(c.get("name")) for c in table["columnDefinitions"]]
        normal.append(_normal(event, columns))
    return normal


def _normal_table(table: dict[str, Any], columns: list[str] | None) -> None:
    """A Table's Age cells say how old an object is, which depends on when it is read."""
    names = [str(c.get("name")) for c in table.get("columnDefinitions") or []] or columns or []
    for row in table.get("rows") or []:
        cells = row.get("cells") or []
        for index, column in enumerate(names):
            if column in ("Age", "Last Seen") and index < len(cells):
                cells[index] = "<age>"


def _decode(raw: Raw, *, watch: bool) -> Any:
    text = raw.body.decode(errors="replace")
    if watch:
        return [_decode_one(line) for line in text.splitlines() if line.strip()]
    return _decode_one(text) if text.strip() else None


def _decode_one(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"<text>": text.strip()[:500]}


def _warnings(raw: Raw) -> tuple[str, ...]:
    """`Warning: 299 - "text"` headers, as their texts."""
    found = []
    for header in raw.warnings:
        text = (header.split(" ", 2)[-1] if header.startswith("299") else header).strip()
        if len(text) >= 2 and text[0] == text[-1] == '"':
            text = re.sub(r"\\(.)", r"\1", text[1:-1])  # a quoted-string's escapes (RFC 9110)
        found.append(text)
    return tuple(sorted(found))


def run_corpus(target: Target, run: str, corpus: Sequence[Request] = CORPUS) -> dict[str, Answer]:
    """Send the corpus to `target` in order (then delete what it made); each compared request's
    normalised answer by name."""
    resource_versions: dict[str, str] = {}
    values: dict[str, Any] = {"run": run, "ns": f"diff-{run}", "rv": resource_versions}
    answers: dict[str, Answer] = {}
    try:
        for request in corpus:
            answers[request.name] = _ask(target, request, values, resource_versions)
    finally:
        for request in TEARDOWN:
            _ask(target, request, values, resource_versions)
    return {name: answer for name, answer in answers.items() if not _is_setup(name, corpus)}


def _is_setup(name: str, corpus: Sequence[Request]) -> bool:
    return any(r.name == name and r.setup for r in corpus)


def _ask(target: Target, request: Request, values: dict[str, Any], versions: dict[str, str]) -> Answer:
    path = _fill(request.path, values)
    body = _fill(request.body, values)
    raw = send(target, request.method, path, body, content_type=request.content_type, accept=request.accept)
    decoded = _decode(raw, watch=request.watch)
    if isinstance(decoded, dict):
        version = (decoded.get("metadata") or {}).get("resourceVersion")
        if version:
            versions[request.name] = str(version)
    normal = _normal_watch(decoded) if request.watch and isinstance(decoded, list) else _normal(decoded)
    return Answer(raw.code, normal, _warnings(raw))


# --- comparison ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Disagreement:
    name: str
    request: str
    differences: tuple[str, ...]


@dataclass
class Report:
    size: int
    agree: int
    disagreements: list[Disagreement] = field(default_factory=list)

    def lines(self, left: str, right: str) -> Iterator[str]:
        yield f"corpus: {self.size} requests; {self.agree} of {self.size} agree ({left} vs {right})"
        for item in self.disagreements:
            yield f"- {item.name}  [{item.request}]"
            for difference in item.differences:
                yield f"    {difference}"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 300 else text[:297] + "..."


def _differences(left: Any, right: Any, path: str = "") -> Iterator[str]:
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(set(left) | set(right), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in right:
                yield f"{where}: only in reference: {_short(left[key])}"
            elif key not in left:
                yield f"{where}: only in embedded: {_short(right[key])}"
            else:
                yield from _differences(left[key], right[key], where)
    elif isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            yield from _differences(a, b, f"{path}[{index}]")
    elif left != right:
        yield f"{path or '<root>'}: reference {_short(left)} | embedded {_short(right)}"


def compare(
    reference: Mapping[str, Answer], embedded: Mapping[str, Answer], corpus: Sequence[Request] = CORPUS
) -> Report:
    compared = [r for r in corpus if not r.setup]
    report = Report(size=len(compared), agree=0)
    for request in compared:
        left, right = reference.get(request.name), embedded.get(request.name)
        if left == right:
            report.agree += 1
            continue
        found: list[str] = []
        if left is None or right is None:
            found.append("no answer from " + ("the reference" if left is None else "the embedded server"))
        else:
            if left.code != right.code:
                found.append(f"code: reference {left.code} | embedded {right.code}")
            found += list(_differences(left.body, right.body, "body"))
            if left.warnings != right.warnings:
                found.append(f"warnings: reference {list(left.warnings)} | embedded {list(right.warnings)}")
        report.disagreements.append(
            Disagreement(request.name, f"{request.method} {request.path}", tuple(found))
        )
    return report


# --- CRDs on the reference server -----------------------------------------------------------


def install_crds(target: Target, folder: Path | None, *, timeout: float = 60.0) -> None:
    """gpupool's CRDs and each CRD YAML in `folder`, applied server-side and waited for."""
    from gpupool.core.model.crd import generate_crds

    crds: list[dict[str, Any]] = list(generate_crds())
    for path in sorted(folder.glob("*.yaml")) if folder else []:
        crds += [doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict)]
    base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for crd in crds:
        name = crd["metadata"]["name"]
        raw = send(
            target,
            "PATCH",
            f"{base}/{name}?fieldManager=gpupool-differential&force=true",
            json.dumps(crd),
            content_type=APPLY,
        )
        if raw.code >= 300:
            raise RuntimeError(f"CRD {name}: {raw.code} {raw.body.decode(errors='replace')[:500]}")
    deadline = time.monotonic() + timeout
    for crd in crds:
        name = crd["metadata"]["name"]
        while not _established(target, f"{base}/{name}"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"CRD {name} not Established after {timeout:.0f} s")
            time.sleep(0.2)
    # The served resources appear in discovery a moment after Established.
    time.sleep(1.0)


def _established(target: Target, path: str) -> bool:
    body = json.loads(send(target, "GET", path).body or b"{}")
    conditions = (body.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


# --- the command line ------------------------------------------------------------------------


@contextlib.contextmanager
def embedded_target(name: str = "embedded") -> Iterator[Target]:
    from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

    with EmbeddedKubeAPI() as api:
        yield Target(name=name, url=api.url)


def differential(
    reference: Target, *, run: str | None = None, embedded: Callable[[], Any] = embedded_target
) -> Report:
    """The corpus sent to `reference` and to a fresh embedded server, compared."""
    token = run or secrets.token_hex(3)
    left = run_corpus(reference, token)
    with embedded() as target:
        right = run_corpus(target, token)
    return compare(left, right)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--real", type=Path, help="kubeconfig of the reference server (default: another embedded one)"
    )
    parser.add_argument(
        "--install-crds", type=Path, nargs="?", const=Path("-"), help="apply gpupool's CRDs and DIR's first"
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        if args.real:
            reference = Target.from_kubeconfig(args.real)
        else:
            reference = stack.enter_context(embedded_target("embedded (reference)"))
        if args.install_crds is not None:
            install_crds(reference, None if str(args.install_crds) == "-" else args.install_crds)
        report = differential(reference)
        version = json.loads(send(reference, "GET", "/version").body or b"{}").get("gitVersion", "?")
    for line in report.lines(f"{reference.name} {version}", "embedded"):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
