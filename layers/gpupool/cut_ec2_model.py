"""Write `gpupool/adapters/ec2_model.json`: the installed botocore's EC2 model, cut to `EC2_OPERATIONS`.

Role: the one way the shipped cut is made (never by hand). It loads EC2's `service-2` model with
botocore's own loader (latest API version, extras applied), cuts it with
`gpupool.adapters.ec2_model.cut_model`, and writes it with the botocore version it came from.
Run it after changing `EC2_OPERATIONS` or botocore's version, then pin boto3 and botocore to that
version in `requirements.txt` (tests/contract/kube/test_aws_session.py fails until both are done):

    .venv/bin/python layers/gpupool/cut_ec2_model.py

Must not: run in the layer build (the file is committed and tested) or reach the network.
"""

from __future__ import annotations

import json
import sys

import botocore
from botocore.loaders import Loader

from gpupool.adapters.ec2_model import MODEL_FILE, cut_model


def fresh_cut() -> dict[str, object]:
    """What the shipped file holds when it is up to date with the installed botocore."""
    full = Loader().load_service_model("ec2", "service-2")
    return {"botocore": botocore.__version__, "service-2": cut_model(full)}


def main() -> int:
    cut = fresh_cut()
    MODEL_FILE.write_text(json.dumps(cut, indent=1) + "\n", encoding="utf-8")
    model = cut["service-2"]
    assert isinstance(model, dict)
    print(
        f"{MODEL_FILE}: botocore {cut['botocore']}, {len(model['operations'])} operations,"
        f" {len(model['shapes'])} shapes, {MODEL_FILE.stat().st_size:,} bytes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
