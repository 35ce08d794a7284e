"""Cold-start figures for the three Lambda handlers, against the import of boto3 and the kubernetes client.

0. The package is byte-compiled first, as the layer ships it (`build_layer.py --compile`), so no
   figure includes compiling gpupool's sources (a layer is read-only: without its .pyc files a
   function compiles them at every cold start). The reference — `import boto3, kubernetes.client`
   in a fresh interpreter, median of ``--repeats`` — is measured in the same run.
1. Module import time of each ``functions/<name>/app.py`` (what Lambda's init phase pays on
   every cold start), each in a fresh interpreter, median of ``--repeats`` runs.
2. First and second invocation of each handler in a fresh interpreter against a sandbox —
   the embedded Kubernetes API server (gpupool.sandbox.kubeapi) and moto's EC2 server — through
   the real wiring (``build_aws_deps``), so the first invocation includes the lazy imports
   (service, botocore, kubernetes; the functions do not import boto3), building the models they
   use, client construction and the real calls. Each repeat gets a
   fresh sandbox with one Provisioned pool below its minimum, so ``launch`` launches every
   time. The verdict: the first invocation of an on-demand init within ``TARGET_RATIO`` (1.5 ×)
   the reference — imported again in a fresh interpreter right before each invocation, and the
   median of those samples taken, so both sides see the same moments' machine load. Printed
   beside it: init + first invocation (what the first event waits for when the init phase is
   on its path), and the same function with the init phase off the
   request path (``AWS_LAMBDA_INITIALIZATION_TYPE=snap-start``: the service and the adapters'
   modules are imported, and their models built, at init, as with SnapStart or provisioned
   concurrency; a snapshot's
   restore time, which only Lambda can measure, is not in it). For comparison it also times an
   EC2 client made by plain botocore (its whole EC2 model and endpoints.json) and one made as
   the functions make it (`adapters/aws/session`: botocore's files cut to the operations
   `Ec2Compute` calls and the services gpupool calls, shipped in the layer,
   `adapters/aws/botocore_data`), session included in both. An invocation that did not end
   "handled" without errors prints FAILED and its errors, never a time, and the run exits 1.
   Run:

    .venv/bin/python benchmarks/cold_start.py [--repeats 5] [--no-sandbox]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ("launch", "bind", "compact")
EVENTS = {
    "launch": ROOT / "events" / "aws" / "scheduled-event.json",
    "bind": ROOT / "events" / "aws" / "scheduler-without-input.json",
    "compact": ROOT / "events" / "aws" / "scheduler-without-input.json",
}
TARGET_IMPORT_S = 0.5
TARGET_RATIO = 1.5
INIT_TYPES = ("on-demand", "snap-start")

_REFERENCE = """
import time
began = time.perf_counter()
import boto3, kubernetes.client
print(time.perf_counter() - began)
"""

_IMPORT_ONLY = """
import sys, time
sys.path.insert(0, sys.argv[1])
began = time.perf_counter()
import app
print(time.perf_counter() - began)
"""

_INVOKE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
event = json.loads(open(sys.argv[2]).read())
began = time.perf_counter()
import app
imported = time.perf_counter()
try:
    result = app.handler(event, None)
    status, errors = result.get("status"), result.get("errors", [])
except Exception as error:  # a figure is still worth printing; say what failed
    status, errors = "raised", [f"{type(error).__name__}: {error}"]
first = time.perf_counter()
try:
    app.handler(event, None)
except Exception:
    pass
second = time.perf_counter()
print(json.dumps({"import_s": imported - began, "first_s": first - imported, "second_s": second - first,
                  "status": status, "errors": errors[:3]}))
"""


_LAZY = """
import sys, time
began = time.perf_counter()
import importlib
importlib.import_module(sys.argv[1])
print(time.perf_counter() - began)
"""
# What a first invocation imports lazily, measured alone (each in a fresh interpreter).
LAZY_MODULES = (
    "gpupool.service.launch",
    "gpupool.service.bind",
    "gpupool.service.compact",
    "gpupool.adapters.aws.wiring",
    "botocore.session",
    "kubernetes.client",
    "gpupool.adapters.kube.cluster",
    "gpupool.adapters.aws.compute",
)
# Not imported by the functions: the kubernetes client's generated core API (the adapters send
# requests by path instead, adapters/kube/transport.py), timed for comparison.
COMPARED_MODULES = ("kubernetes.client.api.core_v1_api",)
_EC2_CLIENT = """
import sys, time
import botocore.session
began = time.perf_counter()
session = botocore.session.get_session()
session.create_client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
print(time.perf_counter() - began)
"""
# The same client as the functions make it: on botocore's files cut to what gpupool calls.
_EC2_CLIENT_SHIPPED = """
import sys, time
from gpupool.adapters.aws.session import aws_session
from gpupool.adapters.aws.botocore_data import EC2_OPERATIONS
began = time.perf_counter()
client = aws_session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y").client("ec2")
elapsed = time.perf_counter() - began
assert sorted(client.meta.service_model.operation_names) == sorted(EC2_OPERATIONS)
print(elapsed)
"""


def lazy_import_times(repeats: int) -> None:
    print(
        "\nDeferred to the first invocation (each imported alone in a fresh interpreter,"
        f" so figures overlap; median of {repeats}):"
    )
    for module in LAZY_MODULES:
        try:
            samples = [float(_python(_LAZY, module)) for _ in range(repeats)]
        except RuntimeError as error:
            print(f"  {module:<26} not importable: {error}")
            continue
        print(f"  {module:<26} {statistics.median(samples) * 1000:7.1f} ms")
    print("For comparison (not what the functions import; median of the same):")
    for module in COMPARED_MODULES:
        samples = [float(_python(_LAZY, module)) for _ in range(repeats)]
        print(f"  {module:<36} {statistics.median(samples) * 1000:7.1f} ms")
    samples = [float(_python(_EC2_CLIENT)) for _ in range(repeats)]
    print(f"  {'botocore session + client(ec2)':<36} {statistics.median(samples) * 1000:7.1f} ms")
    samples = [float(_python(_EC2_CLIENT_SHIPPED)) for _ in range(repeats)]
    print(f"  {'the same, aws_session (shipped cuts)':<36} {statistics.median(samples) * 1000:7.1f} ms")


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
        cwd=ROOT,
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "failed")
    return result.stdout.strip().splitlines()[-1]


def compile_package() -> int:
    """Byte-compile gpupool and the functions, as the layer ships them, in place. The layer's are
    unchecked (it never changes); a working tree does, and an unchecked .pyc would run old code
    after an edit. So these are checked by the source's timestamp and size, Python's default,
    which the import system reads from the stat it makes anyway: they cost what the layer's do.
    (Hash-checked ones would read and hash every source file at every import, which no layer
    pays.)"""
    import compileall
    import py_compile

    folders = (ROOT / "layers" / "gpupool" / "gpupool", ROOT / "functions")
    mode = py_compile.PycInvalidationMode.TIMESTAMP
    for folder in folders:
        if not compileall.compile_dir(str(folder), quiet=1, invalidation_mode=mode):
            raise RuntimeError(f"byte-compiling {folder} failed")
    return sum(1 for folder in folders for _ in folder.rglob("*.pyc"))


def reference_s(repeats: int) -> float:
    samples = [float(_python(_REFERENCE)) for _ in range(repeats)]
    median = statistics.median(samples)
    print(
        f"Reference: import boto3 + kubernetes.client in a fresh interpreter, median of {repeats}:"
        f" {median * 1000:.1f} ms (min {min(samples) * 1000:.1f}, max {max(samples) * 1000:.1f})"
    )
    return median


def import_times(repeats: int) -> None:
    print(f"Module import time, fresh interpreter, median of {repeats} (target ≤ {TARGET_IMPORT_S} s):")
    for name in FUNCTIONS:
        samples = [float(_python(_IMPORT_ONLY, str(ROOT / "functions" / name))) for _ in range(repeats)]
        median = statistics.median(samples)
        verdict = "ok" if median <= TARGET_IMPORT_S else "OVER TARGET"
        spread = f"min {min(samples) * 1000:.1f}, max {max(samples) * 1000:.1f}"
        print(f"  {name:<8} {median * 1000:7.1f} ms  ({spread})  {verdict}")


# ---- the sandbox ------------------------------------------------------------------------------
def _kube_post(port: int, path: str, body: dict[str, Any]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    payload = response.read()
    if response.status >= 300:
        raise RuntimeError(f"POST {path}: HTTP {response.status}: {payload[:200]!r}")


def _seed(kube_port: int, ec2: Any) -> None:
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    subnet = ec2.describe_subnets()["Subnets"][0]
    group = ec2.describe_security_groups()["SecurityGroups"][0]["GroupId"]
    base = "/apis/tensor-fusion.ai/v1"
    _kube_post(
        kube_port,
        f"{base}/gpunodeclasses",
        {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUNodeClass",
            "metadata": {"name": "gpu-class"},
            "spec": {
                "osImageSelectorTerms": [{"id": image}],
                "subnetSelectorTerms": [{"id": subnet["SubnetId"]}],
                "securityGroupSelectorTerms": [{"id": group}],
                "userData": "#!/bin/sh\necho __GPU_NODE_RESOURCE_NAME__\n",
            },
        },
    )
    _kube_post(
        kube_port,
        f"{base}/gpupools",
        {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUPool",
            "metadata": {"name": "pool-a"},
            "spec": {
                "capacityConfig": {"minResources": {"tflops": "130", "vram": "32Gi"}},
                "nodeManagerConfig": {
                    "provisioningMode": "Provisioned",
                    "nodeProvisioner": {
                        "nodeClass": "gpu-class",
                        "gpuRequirements": [
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": [subnet["AvailabilityZone"]],
                            }
                        ],
                    },
                    "nodeCompaction": {"period": "5m"},
                },
            },
        },
    )


def _sandbox_run(init_type: str = "on-demand") -> dict[str, Any]:
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request access log
    region = "us-east-1"
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    try:
        host, port = moto.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        # moto keeps its backends per process, not per server: start each repeat empty.
        reset = http.client.HTTPConnection(host, port, timeout=10)
        reset.request("POST", "/moto-api/reset")
        reset.getresponse().read()
        with EmbeddedKubeAPI() as kube:
            ec2 = boto3.client(
                "ec2",
                region_name=region,
                endpoint_url=endpoint,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
            _seed(kube.port, ec2)
            env = {
                key: value
                for key, value in os.environ.items()
                if not key.startswith(("AWS_", "GPUPOOL_", "KUBECONFIG", "POWERTOOLS_"))
            }
            env.update(
                {
                    "AWS_REGION": region,
                    "AWS_ENDPOINT_URL": endpoint,
                    "AWS_ACCESS_KEY_ID": "testing",
                    "AWS_SECRET_ACCESS_KEY": "testing",
                    "KUBECONFIG": str(kube.kubeconfig_path),
                    "GPUPOOL_KUBE_ACCESS": "kubeconfig",
                    "GPUPOOL_CLUSTER_NAME": "bench",
                    "POWERTOOLS_LOG_LEVEL": "ERROR",
                    "POWERTOOLS_METRICS_DISABLED": "true",
                    "AWS_LAMBDA_INITIALIZATION_TYPE": init_type,
                }
            )
            results: dict[str, Any] = {"reference_s": []}
            for name in FUNCTIONS:
                # The reference right before each invocation: the same moment's machine load.
                results["reference_s"].append(float(_python(_REFERENCE)))
                line = _python(_INVOKE, str(ROOT / "functions" / name), str(EVENTS[name]), env=env)
                results[name] = json.loads(line)
            instances = sum(
                len(reservation["Instances"]) for reservation in ec2.describe_instances()["Reservations"]
            )
            results["launch"]["instances_after"] = instances
            return results
    finally:
        moto.stop()


def _runs(repeats: int, init_type: str) -> list[dict[str, Any]] | None:
    runs: list[dict[str, Any]] = []
    for _ in range(repeats):
        try:
            runs.append(_sandbox_run(init_type))
        except Exception as error:
            print(f"  sandbox run failed: {type(error).__name__}: {error}")
            return None
    return runs


def sandbox_invocations(repeats: int) -> bool:
    """Times per function and init type when every invocation was handled; False when any failed
    or an on-demand first invocation missed TARGET_RATIO × the reference — the median of the
    reference imports run right before each invocation (the same moments' load)."""
    try:
        import moto  # noqa: F401

        from gpupool.sandbox.kubeapi import EmbeddedKubeAPI  # noqa: F401
    except ImportError as error:
        print(f"\nFirst invocation: no sandbox available ({error}); import times only.")
        return True
    print(
        f"\nInvocation against the sandbox (embedded API server + moto EC2), fresh interpreter, "
        f"median of {repeats} fresh sandboxes; goal: an on-demand first invocation ≤ {TARGET_RATIO:g} × "
        "the reference, imported right before each invocation (median of those):"
    )
    ok = True
    for init_type in INIT_TYPES:
        runs = _runs(repeats, init_type)
        if runs is None:
            return False
        samples = [sample for run in runs for sample in run["reference_s"]]
        reference = statistics.median(samples)
        print(
            f"  init {init_type}: reference {reference * 1000:.1f} ms (median of {len(samples)},"
            f" min {min(samples) * 1000:.1f}, max {max(samples) * 1000:.1f})"
            f" → goal ≤ {TARGET_RATIO * reference * 1000:.1f} ms"
        )
        for name in FUNCTIONS:
            rows = [run[name] for run in runs]
            broken = [row for row in rows if row["status"] != "handled" or row["errors"]]
            if broken:  # a failed invocation's time measures the failure, not the function: no figure
                ok = False
                failed = f"{len(broken)} of {len(rows)} run(s) [{broken[-1]['status']}]"
                print(f"    {name:<8} FAILED in {failed}; no time")
                for message in broken[-1]["errors"]:
                    print(f"             error: {message}")
                continue
            first = statistics.median(row["first_s"] for row in rows)
            second = statistics.median(row["second_s"] for row in rows)
            imported = statistics.median(row["import_s"] for row in rows)
            ratio = first / reference
            if init_type == "on-demand":
                met = ratio <= TARGET_RATIO
                ok = ok and met
                verdict = "met" if met else "MISSED"
            else:
                verdict = "(informational: no snapshot restore in it)"
            last = rows[-1]
            extra = (
                f", {last['instances_after']} instance(s) in moto after" if "instances_after" in last else ""
            )
            print(
                f"    {name:<8} init {imported * 1000:6.1f} ms  first invocation {first * 1000:7.1f} ms"
                f" = {ratio:.2f} × reference {verdict};  init + first {(imported + first) * 1000:7.1f} ms"
                f" = {(imported + first) / reference:.2f} ×;  second {second * 1000:6.1f} ms"
                f"  [{last['status']}{extra}]"
            )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-sandbox", action="store_true", help="import times only")
    args = parser.parse_args()
    print(
        f"Python {sys.version.split()[0]} on {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.1f};"
        " Lambda (python3.12, arm64) differs.\n"
    )
    print(f"Byte-compiled {compile_package()} modules as the layer ships them (build_layer.py --compile).")
    reference_s(args.repeats)
    import_times(args.repeats)
    lazy_import_times(args.repeats)
    if not args.no_sandbox and not sandbox_invocations(max(1, min(args.repeats, 5))):
        print("\nresult: MISSED or FAILED (see above)")
        return 1
    print("\nresult: met" if not args.no_sandbox else "\nresult: import times only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
