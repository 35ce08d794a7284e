"""`gpupool validate FILE...`: check manifests against the tensor-fusion.ai/v1 models.

Role: read each file (the core never reads files), split its YAML documents, and report per
document `kind/name` and each invalid field path with its reason. Foreign kinds common in
the documents (Pod, Deployment, Karpenter NodePool, …) get a shallow check and are reported
as not validated in depth; an unknown kind is an error. Exit 0 when every document is
valid, 1 when one is not; an unreadable file or bad YAML is a one-line UserError (exit 2).
A valid document is followed by the fields and TensorFusion keys it sets that gpupool keeps but
does not act on, and by what it uses beyond TensorFusion's schema (neither makes it invalid).
`--compat-table` prints the field table of docs/compatibility.md instead.

Must not: hold validation rules (they live in the models).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpupool.cli.errors import UserError
from gpupool.cli.files import read_text

NAME = "validate"
HELP = "check tensor-fusion.ai/v1 manifests (GPUPool, TensorFusionCluster, …); exit 1 if any is invalid"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", metavar="FILE", type=Path, help="YAML files, '-' for stdin")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the invalid documents")
    parser.add_argument(
        "--compat-table",
        action="store_true",
        help="print what gpupool does with every TensorFusion field and key (markdown), then exit",
    )


def _check_document(document: Any) -> tuple[str, list[str], bool]:
    """(kind/name, problems, checked in depth) for one YAML document."""
    from gpupool.core.model.registry import (
        ManifestError,
        describe,
        is_shallow_kind,
        parse_manifest,
    )

    if not isinstance(document, Mapping):
        return "<document>", [f"not a mapping but a {type(document).__name__}"], True
    what = describe(document)
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if isinstance(api_version, str) and isinstance(kind, str) and is_shallow_kind(api_version, kind):
        metadata = document.get("metadata", {})
        problems = [] if isinstance(metadata, Mapping) else ["metadata: not a mapping"]
        return what, problems, False
    try:
        parse_manifest(document)
    except ManifestError as exc:
        return what, [str(error) for error in exc.errors], True
    return what, [], True


def _compat_notes(document: Any) -> list[str]:
    from gpupool.core.model.compat import extensions_used, not_acted_on

    if not isinstance(document, Mapping):
        return []
    notes = [f"not acted on: {path}" for path in not_acted_on(document)]
    return notes + [f"beyond TensorFusion's schema: {use}" for use in extensions_used(document)]


def run(args: argparse.Namespace) -> int:
    from gpupool.core.model.registry import ManifestError, load_documents

    if args.compat_table:
        from gpupool.core.model.compat import compatibility_markdown

        print(compatibility_markdown(), end="")
        return 0
    if not args.files:
        raise UserError("validate needs at least one FILE (or '-' for stdin), or --compat-table")

    loaded: list[tuple[Path, list[Any]]] = []
    for path in args.files:  # read and parse everything first: a bad file reports nothing else
        try:
            loaded.append((path, load_documents(read_text(path, allow_stdin=True))))
        except ManifestError as exc:
            raise UserError(f"{path}: {exc.errors[0].reason}") from None
    invalid = 0
    for path, documents in loaded:
        if not documents:
            print(f"{path}: no documents")
            continue
        for number, document in enumerate(documents, start=1):
            what, problems, in_depth = _check_document(document)
            where = f"{path}#{number} {what}"
            if problems:
                invalid += 1
                print(f"{where}: invalid")
                for problem in problems:
                    print(f"  {problem}")
            elif not args.quiet:
                print(f"{where}: valid" if in_depth else f"{where}: ok (not validated in depth)")
                for note in _compat_notes(document):
                    print(f"  {note}")
    if invalid:
        print(f"{invalid} invalid document(s)")
        return 1
    return 0
