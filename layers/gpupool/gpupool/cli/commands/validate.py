"""`gpupool validate FILE...`: check manifests against the tensor-fusion.ai/v1 models.

Role: read each file (the core never reads files), split its YAML documents, and report per
document `kind/name` and each invalid field path with its reason. Foreign kinds common in
the documents (Pod, Deployment, Karpenter NodePool, …) get a shallow check and are reported
as not validated in depth; an unknown kind is an error. Exit 0 when every document is
valid, 1 when one is not; an unreadable file, bad YAML or a file with no manifest in it (empty,
or only comments) is a one-line UserError (exit 2).
A YAML list of objects counts like several documents (the form `gpupool plan --state` reads).
A GPUPool or TensorFusionCluster the models accept is then checked for what its launch would trip
on (`core.planning.readiness`: min or warm above max, a Provisioned pool without a nodeClass, a
Karpenter pool without karpenterNodeClassRef, gpuRequirements that leave no priced offering, a
maxResources below every allowed instance), against the catalog and region `gpupool plan` would
use for a cluster (`--cloud`/`--region`, else computingVendor), and for a lone GPUPool against
every region of both bundled catalogs unless `--cloud`/`--region` narrow it. The install guides'
examples hold `@NAME@` placeholders their sed fills: a defaultRegion still a placeholder is judged
against every region of its catalog, a requirement naming one counts as `Exists` in the launch check, and
the valid document's notes list the placeholders left to fill.
A valid document is followed by the fields and TensorFusion keys it sets that gpupool keeps but
does not act on, and by what it uses beyond TensorFusion's schema (neither makes it invalid).
`--compat-table` prints the field table of docs/compatibility.md instead.

Must not: hold validation rules (they live in the models and the core's readiness check).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpupool.cli.commands.catalog import DEFAULT_REGIONS
from gpupool.cli.errors import UserError
from gpupool.cli.files import read_text

if TYPE_CHECKING:
    from gpupool.core.catalog import Cloud
    from gpupool.core.planning.plan import OfferingRef

NAME = "validate"
HELP = "check tensor-fusion.ai/v1 manifests (GPUPool, TensorFusionCluster, …); exit 1 if any is invalid"
PLACEHOLDER = re.compile(r"@[A-Z][A-Z0-9_]*@")
"""An install guide's unfilled value (`@AWS_REGION@`), which the guide's sed replaces."""


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", metavar="FILE", type=Path, help="YAML files, '-' for stdin")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the invalid documents")
    parser.add_argument(
        "--compat-table",
        action="store_true",
        help="print what gpupool does with every TensorFusion field and key (markdown), then exit",
    )
    parser.add_argument(
        "--cloud",
        choices=sorted(DEFAULT_REGIONS),
        help="catalog the launch checks use (default: a cluster's computingVendor.type, else aws; "
        "a lone GPUPool: both)",
    )
    parser.add_argument(
        "--region",
        metavar="R",
        help="region the launch checks use (default: a cluster's defaultRegion, else the cloud's "
        "default; a lone GPUPool: every region)",
    )


def _offerings(cloud: str, region: str | None) -> tuple[list[OfferingRef], str]:
    """The catalog's priced offerings of `region` (every region when None), and where that is."""
    from gpupool.core.catalog import load_catalog
    from gpupool.core.planning.offerings import catalog_offerings

    catalog_cloud: Cloud = "alibaba" if cloud == "alibaba" else "aws"
    regions = [region] if region is not None else list(load_catalog(catalog_cloud).region_names)
    found = [o for name in regions for o in catalog_offerings(catalog_cloud, name)]
    return found, f"{cloud} {region}" if region is not None else f"any {cloud} region"


def _launch_problems(obj: Any, args: argparse.Namespace) -> list[str]:
    """What a pool's launch would trip on (`core.planning.readiness`), as `path: reason` lines."""
    from gpupool.cli.commands.plan import cloud_and_region
    from gpupool.core.catalog import load_catalog
    from gpupool.core.model.cluster import TensorFusionCluster
    from gpupool.core.model.pool import GPUPool
    from gpupool.core.planning.readiness import launch_problems

    def joined(prefix: str, path: str) -> str:
        return f"{prefix}.{path}" if path else prefix

    if isinstance(obj, GPUPool):
        clouds = [args.cloud] if args.cloud else sorted(DEFAULT_REGIONS)
        offerings: list[OfferingRef] = []
        for cloud in clouds:
            offerings += _offerings(cloud, args.region)[0]
        where = _offerings(clouds[0], args.region)[1] if len(clouds) == 1 else "any region of the catalogs"
        return [
            f"{joined('spec', e.path)}: {e.reason}" for e in launch_problems(obj.spec, offerings, where=where)
        ]
    if not isinstance(obj, TensorFusionCluster):
        return []
    vendor = obj.spec.computing_vendor
    cloud, region = cloud_and_region(args, vendor)
    catalog = load_catalog("alibaba" if cloud == "alibaba" else "aws")
    if not args.region and PLACEHOLDER.fullmatch(region):
        offerings, where = _offerings(cloud, None)
    elif catalog.region(region) is None:
        known = ", ".join(catalog.region_names)
        if args.region:
            raise UserError(f"--region {region!r} is not in the {cloud} catalog ({known})")
        where = "spec.computingVendor.params.defaultRegion"
        return [f"{where}: {region!r} is not in the {cloud} catalog; use one of {known}"]
    else:
        offerings, where = _offerings(cloud, region)
    problems: list[str] = []
    for index, entry in enumerate(obj.spec.gpu_pools):
        prefix = f"spec.gpuPools[{index}].specTemplate"
        found = launch_problems(entry.spec_template, offerings, where=where)
        problems += [f"{joined(prefix, e.path)}: {e.reason}" for e in found]
    return problems


def _flattened(documents: list[Any]) -> list[Any]:
    """A YAML list of objects counts like several documents."""
    flat: list[Any] = []
    for document in documents:
        flat.extend(document if isinstance(document, list) else [document])
    return flat


def _check_document(document: Any, args: argparse.Namespace) -> tuple[str, list[str], bool]:
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
        obj = parse_manifest(document)
    except ManifestError as exc:
        return what, [str(error) for error in exc.errors], True
    if _placeholders(document):
        obj = parse_manifest(_without_placeholder_entries(document))
    return what, _launch_problems(obj, args), True


def _placeholders(value: Any) -> list[str]:
    """The `@NAME@` placeholders in a document's strings, in order of first appearance."""
    if isinstance(value, str):
        return PLACEHOLDER.findall(value)
    children = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
    found: list[str] = []
    for child in children:
        found += [name for name in _placeholders(child) if name not in found]
    return found


def _without_placeholder_entries(value: Any) -> Any:
    """`value` with every requirement that names a placeholder relaxed to `Exists` (a gpuRequirement
    on `@ZONE_ID@` says nothing yet about where the pool can launch; its index stays the same)."""
    if isinstance(value, Mapping):
        if "key" in value and "operator" in value and _placeholders(value):
            return {"key": value["key"], "operator": "Exists"}
        return {key: _without_placeholder_entries(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_without_placeholder_entries(item) for item in value]
    return value


def _compat_notes(document: Any) -> list[str]:
    from gpupool.core.model.compat import extensions_used, not_acted_on

    if not isinstance(document, Mapping):
        return []
    notes = [f"not acted on: {path}" for path in not_acted_on(document)]
    if names := _placeholders(document):
        notes.append(f"placeholders to fill before applying: {', '.join(names)}")
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
            loaded.append((path, _flattened(load_documents(read_text(path, allow_stdin=True)))))
        except ManifestError as exc:
            raise UserError(f"{path}: {exc.errors[0].reason}") from None
    for path, documents in loaded:
        if not documents:  # an empty file validates nothing: a wrong path or a failed redirect
            raise UserError(f"{path}: no manifest in it (empty, or only comments) — nothing to validate")
    invalid = 0
    for path, documents in loaded:
        for number, document in enumerate(documents, start=1):
            what, problems, in_depth = _check_document(document, args)
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
