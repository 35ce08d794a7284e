"""The chart's agent templates: the DaemonSet runs `gpupool agent run` where it must, with no more
power than it needs; its RBAC grants exactly the agent's calls and nothing destructive; values
switch it off, narrow it to a pool's nodes and add the own-node admission policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

CHART = Path(__file__).resolve().parents[3] / "incluster" / "chart"


def _objects(values: dict[str, Any]) -> list[dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render(values, name="gp", namespace="gpupool-system")
    return [
        d
        for path, text in rendered.items()
        if "/templates/agent-" in path
        for d in yaml.safe_load_all(text)
        if d
    ]


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, [o["kind"] for o in objects]
    return found[0]


def test_daemonset_runs_the_agent_on_gpu_nodes_with_host_pid_and_only_cap_kill() -> None:
    pod = _one(_objects({}), "DaemonSet")["spec"]["template"]["spec"]
    assert pod["hostPID"] is True and pod["runtimeClassName"] == "nvidia"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    container = pod["containers"][0]
    assert container["args"][:3] == ["agent", "run", "--node=$(NODE_NAME)"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["KILL"]}
    assert container["securityContext"].get("privileged") is not True
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/var/lib/kubelet/device-plugins" in mounts


def test_values_narrow_the_daemonset_to_a_pool() -> None:
    values = {
        "agent": {
            "nodeSelector": {"gpu-pool": "training"},
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
            ],
            "pool": "training",
            "vramPolicy": "evict",
            "dryRun": True,
        }
    }
    pod = _one(_objects(values), "DaemonSet")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu-pool": "training"}
    assert pod["tolerations"] == values["agent"]["tolerations"]
    args = pod["containers"][0]["args"]
    assert {"--pool=training", "--vram-policy=evict", "--dry-run"} <= set(args)


def test_rbac_grants_only_the_agents_calls_and_nothing_destructive() -> None:
    role = _one(_objects({}), "ClusterRole")
    granted = {
        (g, r, v)
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    assert ("", "pods/eviction", "create") not in granted  # only for vramPolicy evict
    assert ("", "events", "create") in granted
    assert ("tensor-fusion.ai", "gpus/status", "patch") in granted
    refused = [(g, r, v) for g, r, v in granted if v in ("delete", "deletecollection", "update", "*")]
    assert refused == []
    assert not {r for _, r, _ in granted} & {
        "secrets",
        "configmaps",
        "nodes",
        "pods/exec",
        "gpupools",
        "gpunodeclaims",
    }
    assert ("", "pods", "patch") not in granted  # the agent never edits a pod; the scheduler annotates


def test_disabled_renders_nothing_and_node_restriction_adds_a_policy_by_default() -> None:
    assert _objects({"agent": {"enabled": False}}) == []
    objects = _objects({})
    policy = _one(objects, "ValidatingAdmissionPolicy")
    assert "authentication.kubernetes.io/node-name" in policy["spec"]["validations"][0]["expression"]
    assert _one(objects, "ValidatingAdmissionPolicyBinding")["spec"]["validationActions"] == ["Deny"]
    off = _objects({"agent": {"nodeRestriction": False}})
    assert [o for o in off if o["kind"].startswith("ValidatingAdmissionPolicy")] == []
    assert not [
        o for o in _objects({"scheduler": {"kubeVersion": "1.29.2"}}) if o["kind"].startswith("Valid")
    ]
    with pytest.raises(helm.HelmError, match=r"agent\.nodeRestriction=true needs Kubernetes >= 1\.30"):
        _objects({"agent": {"nodeRestriction": True}, "scheduler": {"kubeVersion": "1.29.2"}})


def test_eviction_is_granted_only_for_the_evict_policy() -> None:
    role = _one(_objects({"agent": {"vramPolicy": "evict"}}), "ClusterRole")
    assert {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]} in role["rules"]


def test_every_agent_container_runs_with_seccomp_a_read_only_root_and_only_cap_kill() -> None:
    """Issue 22, Why 10: no seccomp profile; the guardian died with the agent container."""
    pod = _one(_objects({}), "DaemonSet")["spec"]["template"]["spec"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (guardian,) = pod["initContainers"]
    assert guardian["restartPolicy"] == "Always"  # a native sidecar: it outlives the agent container
    assert guardian["args"] == ["agent", "guardian", "--fifo=/run/gpupool/guardian.fifo"]
    agent = pod["containers"][0]
    assert "--guardian-fifo=/run/gpupool/guardian.fifo" in agent["args"]
    for container in (guardian, agent):
        context = container["securityContext"]
        assert context["readOnlyRootFilesystem"] is True and context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"], "add": ["KILL"]}
        assert {m["mountPath"] for m in container["volumeMounts"]} >= {"/run/gpupool"}
    without = _one(_objects({"agent": {"guardianContainer": False}}), "DaemonSet")["spec"]["template"]["spec"]
    assert "initContainers" not in without
    assert not any(a.startswith("--guardian-fifo") for a in without["containers"][0]["args"])
