"""`gpupool crds`: print or write the tensor-fusion.ai/v1 CustomResourceDefinitions.

Role: the edge around `gpupool.core.model.crd.generate_crds()` — prints the CRDs as one
multi-document YAML stream, or with `--write DIR` writes one file per kind (the chart keeps
them in incluster/chart/crds/).

Must not: build schemas itself (the core generator is the single source).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpupool.cli.errors import UserError

NAME = "crds"
HELP = "print the tensor-fusion.ai/v1 CRDs (or write them, one file per kind, with --write DIR)"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--write",
        metavar="DIR",
        type=Path,
        help="write tensor-fusion.ai_<plural>.yaml files into DIR (created if missing)",
    )


def run(args: argparse.Namespace) -> int:
    from gpupool.core.model.crd import crd_file_name, generate_crds, render_crd

    crds = generate_crds()
    target: Path | None = args.write
    if target is None:
        print("---\n".join(render_crd(crd) for crd in crds), end="")
        return 0
    try:
        target.mkdir(parents=True, exist_ok=True)
        for crd in crds:
            (target / crd_file_name(crd)).write_text(render_crd(crd), encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write CRDs to {target}: {exc.strerror or exc}") from None
    print(f"wrote {len(crds)} CRDs to {target}")
    return 0
