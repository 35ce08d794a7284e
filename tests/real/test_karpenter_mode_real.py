"""Karpenter mode's NodeClaim on the real API server with Karpenter's own CRDs: a pool taint without a
value and a `1.5h` termination grace period reach Karpenter in the form its CRD accepts (no
`value`, `1h30m`), where the un-normalised forms are refused; and Karpenter launches the NodeClaim.
(Karpenter's 15-minute registration timeout is not waited for here: `benchmarks/registration_timeout_real.py`
runs it on the real Karpenter; `tests/service/test_karpenter_mode.py` covers how such a deletion is read.)"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from gpupool.core.decisions.karpenter_nodeclaim import build_karpenter_nodeclaim, nodeclaim_template
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.real.karpenter_builders import ensure_kwok_node_class


def _pool(suffix: str) -> GPUPool:
    return GPUPool.model_validate(
        {
            "metadata": {
                "name": f"km-{suffix}",
                "annotations": {"gpupool.io/karpenter-termination-grace-period": "1.5h"},
            },
            "spec": {
                "nodeManagerConfig": {
                    "provisioningMode": "Karpenter",
                    "nodeProvisioner": {
                        "karpenterNodeClassRef": {
                            "group": "karpenter.kwok.sh",
                            "kind": "KWOKNodeClass",
                            "version": "v1alpha1",
                            "name": "default",
                        },
                        "gpuTaints": [{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}],
                    },
                }
            },
        }
    )


def _claim(suffix: str) -> GPUNodeClaim:
    return GPUNodeClaim.model_validate(
        {
            "metadata": {"name": f"km-{suffix}-0001"},
            "spec": {
                "instanceType": "g4dn.xlarge",
                "zone": "us-east-1a",
                "capacityType": "OnDemand",
                "gpuDeviceOffered": 1,
                "tflopsOffered": "65",
                "vramOffered": "16Gi",
                "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
            },
        }
    )


def _dry_run(control_plane: ControlPlane, body: dict[str, Any]) -> str:
    done = control_plane.kubectl(
        "create", "--dry-run=server", "-f", "-", input_text=json.dumps(body), check=False
    )
    return "" if done.returncode == 0 else done.stderr


def test_a_valueless_taint_and_a_one_and_a_half_hour_grace_period_reach_karpenter(
    control_plane: ControlPlane,
) -> None:
    suffix = uuid.uuid4().hex[:6]
    ensure_kwok_node_class(control_plane)
    nodeclaim = build_karpenter_nodeclaim(nodeclaim_template(_pool(suffix)), _claim(suffix))
    body = nodeclaim.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert body["spec"]["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert body["spec"]["terminationGracePeriod"] == "1h30m"
    raw = json.loads(json.dumps(body))
    raw["spec"]["terminationGracePeriod"] = "1.5h"
    assert "terminationGracePeriod" in _dry_run(control_plane, raw), "the un-normalised duration is refused"
    assert _dry_run(control_plane, body) == "", "what gpupool writes is accepted"
    control_plane.request("POST", "/apis/karpenter.sh/v1/nodeclaims", body)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        found = control_plane.request("GET", f"/apis/karpenter.sh/v1/nodeclaims/{nodeclaim.name}")
        conditions = {c["type"]: c["status"] for c in found.get("status", {}).get("conditions", [])}
        if conditions.get("Registered") == "True":
            node = control_plane.request("GET", f"/api/v1/nodes/{found['status']['nodeName']}")
            taints = [t for t in node["spec"].get("taints", []) if t["key"] == "nvidia.com/gpu"]
            assert taints and "value" not in taints[0]
            control_plane.request("DELETE", f"/apis/karpenter.sh/v1/nodeclaims/{nodeclaim.name}")
            return
        time.sleep(2)
    raise AssertionError(f"Karpenter did not register {nodeclaim.name} within 180 s")
