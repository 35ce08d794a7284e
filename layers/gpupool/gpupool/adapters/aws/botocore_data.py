"""Two of botocore's data files cut to what gpupool uses, shipped with the layer.

Role: `EC2_OPERATIONS` names every EC2 operation `adapters/aws/compute.Ec2Compute` and
`adapters/aws/pricing.AwsPricing` call (a test checks it against their calls).
`cut_service_model(model, operations)` restricts a service-2 model to those operations and every
shape they reach; `cut_endpoints(endpoints, services)` restricts botocore's endpoints.json to
those services, every partition's other data kept. Each kept operation, shape, partition and
service entry is as botocore has it, less the model's documentation strings (docstrings only)
and, in the answer shapes `READ_MEMBERS` names, the members gpupool does not read. `shipped_data()`
returns the cuts written into `aws.botocore_data.json` (package data) by
`layers/gpupool/cut_botocore_data.py` — keyed by the name botocore's loader asks for
(`ec2/<api version>/service-2`, `endpoints`) — or nothing when the running botocore is not the
version they were cut from. Why: botocore JSON-decodes EC2's whole model (every operation EC2
has) and makes a client method for each, and decodes endpoints.json (1.2 MB, every service in
every partition) for each session's first client — on the first event's path.
The layer ships boto3 and botocore pinned to the version the cuts were made from
(`layers/gpupool/requirements.txt`), so on Lambda the botocore reading them is that version; any
other botocore (another install, an upgrade not yet cut again) reads its own files. A client on
the EC2 cut has no method for an operation outside it: calling one raises AttributeError naming it.

Must not: be edited by hand (regenerate with the script), hold anything botocore's files do not,
or be imported at a function's init (it imports botocore).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import botocore

__all__ = [
    "DATA_FILE",
    "EC2_OPERATIONS",
    "READ_MEMBERS",
    "cut_endpoints",
    "cut_service_model",
    "read_shipped",
    "shipped_data",
]

# Every EC2 operation adapters/aws/compute.py and adapters/aws/pricing.py call
# (tests/contract/kube/test_aws_session.py reads them and compares).
EC2_OPERATIONS = (
    "DescribeImages",
    "DescribeInstanceTypeOfferings",
    "DescribeInstanceTypes",
    "DescribeInstances",
    "DescribeSecurityGroups",
    "DescribeSpotPriceHistory",
    "DescribeSubnets",
    "RunInstances",
    "TerminateInstances",
)
# Answer shapes cut to the members gpupool reads (botocore's parsers skip what a shape does not
# name): DescribeInstanceTypes describes ~100 facts of each type, aws/price_list reads these.
READ_MEMBERS: dict[str, tuple[str, ...]] = {
    "InstanceTypeInfo": ("InstanceType", "ProcessorInfo", "VCpuInfo", "MemoryInfo", "GpuInfo"),
}
DATA_FILE = Path(__file__).with_name("botocore_data.json")


def cut_service_model(
    model: dict[str, Any], operations: Iterable[str], read_members: Mapping[str, Iterable[str]] = READ_MEMBERS
) -> dict[str, Any]:
    """`model` (a service-2 file's content) with only `operations` and the shapes they reach
    (input, output, errors, and every member, list member, map key and value, transitively),
    the rest of the model (version, metadata) as it is, in botocore's order — without the
    documentation strings, which botocore reads only to write docstrings (three quarters of the
    bytes). A shape named in `read_members` (answers only, never a request's) keeps those members."""
    kept = {name: model["operations"][name] for name in operations}
    reached: set[str] = set()
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
        if name in reached:
            continue
        reached.add(name)
        shape = _read_only(model["shapes"][name], read_members.get(name))
        todo += [member["shape"] for member in shape.get("members", {}).values()]
        todo += [shape[key]["shape"] for key in ("member", "key", "value") if key in shape]
    cut = {key: value for key, value in model.items() if key not in ("operations", "shapes")}
    cut["operations"] = kept
    cut["shapes"] = {
        name: _read_only(shape, read_members.get(name))
        for name, shape in model["shapes"].items()
        if name in reached
    }
    undocumented: dict[str, Any] = _undocumented(cut)
    return undocumented


def _read_only(shape: dict[str, Any], members: Iterable[str] | None) -> dict[str, Any]:
    """`shape` with only `members` (all when None), in botocore's order."""
    if members is None:
        return shape
    wanted = set(members)
    kept = {name: member for name, member in shape["members"].items() if name in wanted}
    return {**shape, "members": kept}


def _undocumented(value: Any) -> Any:
    """`value` without its "documentation" strings (what botocore only turns into docstrings)."""
    if isinstance(value, dict):
        return {
            key: _undocumented(item)
            for key, item in value.items()
            if not (key == "documentation" and isinstance(item, str))  # not a member so named
        }
    if isinstance(value, list):
        return [_undocumented(item) for item in value]
    return value


def cut_endpoints(endpoints: dict[str, Any], services: Iterable[str]) -> dict[str, Any]:
    """`endpoints` (endpoints.json's content) with each partition's services restricted to `services`."""
    wanted = set(services)
    partitions = [
        {
            **partition,
            "services": {name: entry for name, entry in partition["services"].items() if name in wanted},
        }
        for partition in endpoints["partitions"]
    ]
    return {**endpoints, "partitions": partitions}


def read_shipped() -> dict[str, Any]:
    """The shipped file as written: ``{"botocore": version, "data": {name: content}}``."""
    shipped: dict[str, Any] = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    return shipped


def shipped_data(botocore_version: str | None = None) -> dict[str, Any]:
    """The shipped cuts by botocore data name; empty when `botocore_version` (default: the running
    botocore's) is not the one they were cut from (botocore's own files are then the ones to read)."""
    shipped = read_shipped()
    if shipped["botocore"] != (botocore_version or botocore.__version__):
        return {}
    data: dict[str, Any] = shipped["data"]
    return data
