"""Doubles of the cloud side of the tools the install guides run (aws, sam, eksctl, docker, s, aliyun),
for tests/e2e/test_install_guides.py. What a tool does offline, or against the cluster, is never
doubled: the walk runs the real `sam validate --lint` and `sam build`, the real `s config ...` (REAL
below) and the real `helm` for every helm command (`lint`, `upgrade --install --wait`, `uninstall`)
onto a real control plane; the tools come from `gpupool sandbox build`. Only the commands that need a
cloud account, or a Docker daemon, come here. Each is this script run as
`install_doubles.py TOOL ARGS...` from a one-line wrapper on PATH; they share a JSON state file
($GPUPOOL_DOUBLES_STATE) so a later call sees what an earlier one made, and every refusal is one
line on stderr with a non-zero exit, as the real tool would refuse. Simpler than the real tools, rule by rule:

- aws: the operation and every `--flag` are checked against botocore's model of the service (the
  AWS CLI is generated from the same models): unknown operations, unknown or missing required
  parameters fail. Values are read as the CLI reads them (`file://`, JSON, the flat `Key=V,Values=a,b`
  shorthand, several words for a list). Answers are canned in the API's response shapes and kept
  consistent through the state (a role attached to, a cluster eksctl made); `--query` is JMESPath
  and `--output text` prints scalars and lists of scalars tab-separated, as the CLI does.
- sam: `deploy` needs the real `sam build`'s output (.aws-sam/build, the layer in it), checks the
  parameter overrides against template.yaml (names, required ones, AllowedValues, AllowedPattern,
  the Rules), checks they name what exists (the EKS cluster, its Pod Identity add-on, the node role),
  and creates the stack — with template.yaml's outputs — in moto's CloudFormation ($AWS_ENDPOINT_URL),
  where `gpupool values --stack` reads it.
- eksctl: `create cluster -f` checks the ClusterConfig fields the guide relies on and records the
  cluster (endpoint, CA, service CIDR, a VPC with public and private subnets, the cluster security
  group) without making anything.
- docker: `buildx build` must push both platforms from incluster/Dockerfile, through a buildx
  builder, to a repository created and logged in to.
- s (Serverless Devs): `deploy` needs the access s.yaml names configured by the real `s config
  add` (in $HOME/.s/access.yaml, with AccountID, AccessKeyID and AccessKeySecret), every
  `${env('X')}` s.yaml reads set and its failure queue created, and records the functions'
  environment and the RAM policies as s.yaml resolves them (for doubles_fc.py); `info -o json`
  prints tests/fixtures/install/s-info.json.
- aliyun: each API call the ACK guide makes is answered from the state, with its required
  parameters checked (the calls are listed in ALIYUN_CALLS with their sources); KMS keys and
  secrets and RAM users, policies and AccessKeys follow their APIs' rules (doubles_alibaba.py).

Must not: reach a network beyond 127.0.0.1.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from typing import Any

import doubles_docker
from doubles_alibaba import aliyun, s
from doubles_aws import aws, eksctl, sam
from doubles_base import Refused, load_state, record, save_state, state_path

# ---- entry -------------------------------------------------------------------------------------
# The subcommands each tool runs for real (offline); every other one of that tool is its double.
REAL: dict[str, tuple[str, ...]] = {
    "sam": ("validate", "build"),
    "s": ("config",),
}
TOOLS: dict[str, Callable[[list[str], dict[str, Any]], str]] = {
    "aws": aws,
    "eksctl": eksctl,
    "sam": sam,
    "docker": doubles_docker.docker,
    "s": s,
    "aliyun": aliyun,
}


def main(argv: list[str]) -> int:
    """Run one double under a lock on the state (a pipeline runs two at once); standard input is
    read before locking, so a double reading another's output cannot wait on it while holding it."""
    import fcntl

    tool, args = argv[0], argv[1:]
    if "--password-stdin" in args:
        doubles_docker.STDIN["text"] = sys.stdin.read()
    with open(str(state_path()) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = load_state()
        record(state, tool, args)
        try:
            output = TOOLS[tool](args, state)
        except Refused as refused:
            save_state(state)
            print(f"{refused}", file=sys.stderr)
            print(f"[{tool} double refused: {shlex.join([tool, *args])}]", file=sys.stderr)
            return 2
        save_state(state)
    sys.stdout.write(output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
