"""Cold-start figures for the three Function Compute handlers: prints them, asserts nothing.

1. Module import time of each ``functions/<name>/index.py`` (what FC's instance start pays on
   every cold start; the target is ≤ 0.5 s), each in a fresh interpreter, median of
   ``--repeats`` runs, with the import of the ECS SDK alone for comparison (it is imported
   lazily, on the first event that needs it).
2. First and second invocation of ``launch`` on the FC timer sample in a fresh interpreter
   against the sandbox's ECS endpoint and the embedded Kubernetes API server (both in that
   process), through the real wiring (``build_alibaba_deps``), so the first includes the lazy
   imports (service, ECS SDK, kubernetes), client construction and the real calls. Run:

    .venv/bin/python benchmarks/fc_cold_start.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ("launch", "bind", "compact")

_IMPORT = """
import sys, time
sys.path.insert(0, sys.argv[1])
start = time.perf_counter()
import index
print(time.perf_counter() - start)
"""

_SDK = """
import time
start = time.perf_counter()
import alibabacloud_ecs20140526.client
print(time.perf_counter() - start)
"""

_INVOKE = """
import json, sys, time
from pathlib import Path
start = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import index
imported = time.perf_counter() - start
from gpupool.adapters.alibaba.wiring import build_alibaba_deps
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.sandbox.ecs_server import SANDBOX_ACCESS_KEY_ID, SANDBOX_ACCESS_KEY_SECRET, EcsEndpoint
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.demo.objects import KubeObjects
event = Path(sys.argv[2]).read_bytes()
with EmbeddedKubeAPI() as api, EcsEndpoint() as ecs:
    objects = KubeObjects(api.cluster)
    network = ecs.state.network
    node_class = {"metadata": {"name": "gpu-class"}, "spec": {
        "osImageSelectorTerms": [{"id": next(iter(network.images))}],
        "subnetSelectorTerms": [{"id": v} for v in network.vswitches]}}
    manifest = GPUNodeClass.model_validate(node_class).to_manifest()
    objects.create("tensor-fusion.ai", "gpunodeclasses", manifest)
    capacity = {"minResources": {"tflops": "130", "vram": "32Gi"},
        "maxResources": {"tflops": "400", "vram": "100Gi"}}
    provisioner = {"nodeClass": "gpu-class", "gpuRequirements": []}
    spec = {"capacityConfig": capacity, "nodeManagerConfig": {"provisioningMode": "Provisioned",
        "nodeProvisioner": provisioner, "nodeCompaction": {"period": "5m"}}}
    pool = GPUPool.model_validate({"metadata": {"name": "pool-a"}, "spec": spec})
    objects.create("tensor-fusion.ai", "gpupools", pool.to_manifest())
    environ = {"GPUPOOL_CLUSTER_NAME": "bench", "ALIBABA_CLOUD_REGION_ID": "cn-hangzhou",
        "GPUPOOL_ECS_ENDPOINT": ecs.url, "ALIBABA_CLOUD_ACCESS_KEY_ID": SANDBOX_ACCESS_KEY_ID,
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SANDBOX_ACCESS_KEY_SECRET, "KUBECONFIG": str(api.kubeconfig_path)}
    handler = index.make_handler(lambda: build_alibaba_deps(environ))
    times, results = [], []
    for _ in range(2):
        begin = time.perf_counter()
        results.append(handler(event, None))
        times.append(time.perf_counter() - begin)
    result = results[0]
    print(json.dumps({"import": imported, "first": times[0], "second": times[1],
        "launched": sum(1 for row in result.get("applied", []) if row.get("action") == "launch-instance")}))
"""


def _run(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, timeout=300
    )
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"FC handler module import, fresh interpreter, median of {args.repeats} (target ≤ 0.5 s):")
    for function in FUNCTIONS:
        runs = [float(_run(_IMPORT, str(ROOT / "functions" / function))) for _ in range(args.repeats)]
        median, low, high = (statistics.median(runs) * 1000, min(runs) * 1000, max(runs) * 1000)
        print(f"  {function:8s} {median:7.1f} ms  (min {low:.1f}, max {high:.1f})")
    sdk = [float(_run(_SDK)) for _ in range(args.repeats)]
    print(f"  for comparison, alibabacloud_ecs20140526.client alone: {statistics.median(sdk) * 1000:.1f} ms")
    print("launch on the FC timer sample, sandbox ECS + embedded API server, fresh interpreter:")
    rows = [
        json.loads(
            _run(
                _INVOKE,
                str(ROOT / "functions" / "launch"),
                str(ROOT / "events" / "alibaba" / "fc-timer.json"),
            )
        )
        for _ in range(args.repeats)
    ]
    for key in ("import", "first", "second"):
        print(f"  {key:7s} {statistics.median(r[key] for r in rows) * 1000:7.1f} ms")
    print(f"  instances launched by the first invocation: {rows[0]['launched']}")


if __name__ == "__main__":
    main()
