"""Write `gpupool/adapters/aws/botocore_data.json`: the installed botocore's files, cut to what gpupool uses.

Role: the one way the shipped cuts are made (never by hand). With botocore's own loader it reads
EC2's latest `service-2` file and `endpoints.json`, cuts them with
`gpupool.adapters.aws.botocore_data` (EC2 to `EC2_OPERATIONS`, the endpoints to
`adapters/aws/session.SERVICES`), and writes them under the names botocore's loader asks for, with the
botocore version they came from. Run it after changing `EC2_OPERATIONS`, `SERVICES` or botocore's
version, then pin boto3 and botocore to that version in `requirements.txt` and in the `dev`
extra of the repository's `pyproject.toml` (tests/contract/kube/test_aws_session.py fails until
all three agree):

    .venv/bin/python layers/gpupool/cut_botocore_data.py

Must not: run in the layer build (the file is committed and tested) or reach the network.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import botocore
from botocore.loaders import create_loader

from gpupool.adapters.aws.botocore_data import DATA_FILE, EC2_OPERATIONS, cut_endpoints, cut_service_model
from gpupool.adapters.aws.session import SERVICES


def fresh_cut() -> dict[str, Any]:
    """What the shipped file holds when it is up to date with the installed botocore."""
    loader = create_loader()  # botocore's own data alone (no AWS_DATA_PATH)
    loader.search_paths[:] = [loader.BUILTIN_DATA_PATH]
    ec2 = f"ec2/{loader.determine_latest_version('ec2', 'service-2')}/service-2"
    return {
        "botocore": botocore.__version__,
        "data": {
            ec2: cut_service_model(loader.load_data(ec2), EC2_OPERATIONS),
            "endpoints": cut_endpoints(loader.load_data("endpoints"), SERVICES),
        },
    }


def main() -> int:
    cut = fresh_cut()
    DATA_FILE.write_text(json.dumps(cut, indent=1) + "\n", encoding="utf-8")
    names = ", ".join(cut["data"])
    print(f"{DATA_FILE}: botocore {cut['botocore']}, {names}; {DATA_FILE.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
