"""EC2's service model cut to the operations `Ec2Compute` calls, shipped with the layer.

Role: `EC2_OPERATIONS` names every EC2 operation `adapters/ec2.Ec2Compute` calls (a test checks
it against ec2.py's calls); `cut_model(full)` restricts botocore's EC2 `service-2` model, as
botocore's loader returns it (its extras applied), to those operations and every shape they
reach — each operation and shape kept exactly as botocore has it; `shipped_model()` returns the
cut written into `ec2_model.json` (package data) by `layers/gpupool/cut_ec2_model.py`, or None
when the running botocore is not the version it was cut from. Why: to make an EC2 client,
botocore JSON-decodes EC2's whole model (every operation EC2 has) and makes a client method for
each, on the first event's path; the cut holds a few hundred shapes instead.
The layer ships boto3 and botocore pinned to the version the cut was made from
(`layers/gpupool/requirements.txt`), so on Lambda the botocore reading the cut is that version;
any other botocore (another install, an upgrade not yet cut again) reads its own full model.
A client on the cut has no method for an operation outside it: calling one raises
AttributeError naming it.

Must not: be edited by hand (regenerate with the script), hold anything botocore's model does
not, or be imported at a function's init (it imports botocore).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import botocore

__all__ = ["EC2_OPERATIONS", "MODEL_FILE", "cut_model", "read_shipped", "shipped_model"]

# Every EC2 operation adapters/ec2.py calls (tests/contract/kube/test_aws_session.py reads ec2.py
# and compares).
EC2_OPERATIONS = (
    "DescribeImages",
    "DescribeInstances",
    "DescribeSecurityGroups",
    "DescribeSubnets",
    "RunInstances",
    "TerminateInstances",
)
MODEL_FILE = Path(__file__).with_name("ec2_model.json")


def cut_model(full: dict[str, Any], operations: tuple[str, ...] = EC2_OPERATIONS) -> dict[str, Any]:
    """`full` (a service-2 model) with only `operations` and the shapes they reach (input, output,
    errors, and every member, list member, map key and value, transitively); the rest of the model
    (version, metadata, documentation) as it is, in botocore's order."""
    kept = {name: full["operations"][name] for name in operations}
    shapes: dict[str, Any] = {}
    todo = [
        reference["shape"]
        for operation in kept.values()
        for reference in (
            *(operation[key] for key in ("input", "output") if key in operation),
            *operation.get("errors", []),
        )
    ]
    while todo:
        name = todo.pop()
        if name in shapes:
            continue
        shapes[name] = shape = full["shapes"][name]
        todo += [member["shape"] for member in shape.get("members", {}).values()]
        todo += [shape[key]["shape"] for key in ("member", "key", "value") if key in shape]
    cut = {key: value for key, value in full.items() if key not in ("operations", "shapes")}
    cut.update(
        operations=kept, shapes={name: shape for name, shape in full["shapes"].items() if name in shapes}
    )
    return cut


def read_shipped() -> dict[str, Any]:
    """The shipped file as written: ``{"botocore": version, "service-2": model}``."""
    shipped: dict[str, Any] = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    return shipped


def shipped_model(botocore_version: str | None = None) -> dict[str, Any] | None:
    """The shipped cut of EC2's service-2 model; None when `botocore_version` (default: the running
    botocore's) is not the one it was cut from (botocore's own full model is then the one to read)."""
    shipped = read_shipped()
    if shipped["botocore"] != (botocore_version or botocore.__version__):
        return None
    model: dict[str, Any] = shipped["service-2"]
    return model
