"""The data behind `compat`: what gpupool does with each TensorFusion field and pod key.

Role: RULES maps (kind, field path prefix) to HONOURED or NOT_ACTED_ON with a short note
("*" matches every kind); DIFFERENT lists the deliberate differences (they win over RULES);
NOT_ACTED_KEYS lists TensorFusion's pod and node keys gpupool did not recognise before issue 8:
each is honoured or, where gpupool has no such feature, accepted, kept and "not acted on".
A path no rule matches is NOT_ACTED_ON ("kept as written"). Checked against the
code at this commit (grep the model attribute outside core/model to move a rule).

Must not: hold behaviour.
"""

from __future__ import annotations

from typing import Final, Literal

from gpupool.core.model import constants as c

__all__ = ["DIFFERENT", "NOT_ACTED_KEYS", "RULES"]

_H: Final = "honoured"
_N: Final = "not acted on"
_TOTAL_COMPUTE: Final = "totals bound TFLOPS and VRAM, into which percent and dedicated pods convert; kept"
_DEFAULT_COMPUTE: Final = "the webhook defaults TFLOPS and VRAM only; kept"
_D: Final = "different"
_COMPACTION: Final = "spec.nodeManagerConfig.nodeCompaction"
Verdict = tuple[Literal["honoured", "not acted on", "different"], str]

RULES: dict[tuple[str, str], Verdict] = {
    # ---- GPUPool (and TensorFusionCluster inline pools) ---------------------------------
    ("GPUPool", "spec.capacityConfig.minResources"): (_H, "launch keeps the pool at least this big"),
    ("GPUPool", "spec.capacityConfig.warmResources"): (_H, "launch keeps this much free"),
    ("GPUPool", "spec.capacityConfig.maxResources"): (_H, "launch never exceeds it"),
    ("GPUPool", "spec.capacityConfig.oversubscription"): (_H, "bounds limits in the scheduler"),
    ("GPUPool", "spec.nodeManagerConfig.provisioningMode"): (_H, "AutoSelect / Karpenter / Provisioned"),
    ("GPUPool", "spec.nodeManagerConfig.nodeProvisioner.nodeClass"): (_H, "the GPUNodeClass launched"),
    ("GPUPool", "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements"): (_H, "filters offerings"),
    ("GPUPool", "spec.nodeManagerConfig.nodeCompaction.period"): (_H, "compaction interval"),
    ("GPUPool", "spec.schedulingConfigTemplate"): (_H, "placement mode of the pool"),
    ("GPUPool", "spec.qosConfig.defaultQoS"): (_H, "the webhook's default qos"),
    ("GPUPool", "spec.nodeManagerConfig.defaultVendor"): (_N, "only NVIDIA nodes are provisioned"),
    ("GPUPool", "spec.nodeManagerConfig.defaultIsolationMode"): (_N, "the hypervisor's mode; no hypervisor"),
    ("GPUPool", "spec.nodeManagerConfig.isolationModeRules"): (_N, "the hypervisor's mode; no hypervisor"),
    ("GPUPool", "spec.nodeManagerConfig.multiVendorNodeSelector"): (_N, "single-vendor pools only"),
    ("GPUPool", "spec.nodeManagerConfig.nodeSelector"): (_N, "existing nodes join through GPU objects"),
    ("GPUPool", "spec.nodeManagerConfig.nodeCompaction.defrag"): (_N, "no defragmentation yet"),
    # gpupool's own nodeCompaction fields (TensorFusion has none of them): consolidation.
    ("GPUPool", f"{_COMPACTION}.policy"): (_H, "gpupool's: WhenUnderutilized consolidates"),
    ("GPUPool", f"{_COMPACTION}.budgets"): (_H, "gpupool's: consolidation's budgets"),
    ("GPUPool", f"{_COMPACTION}.consolidationWindow"): (_H, "gpupool's: the saving's window"),
    ("GPUPool", f"{_COMPACTION}.savingsThreshold"): (_H, "gpupool's: the saving to beat"),
    ("GPUPool", "spec.nodeManagerConfig.nodePoolRollingUpdatePolicy"): (_N, "no components to roll"),
    ("GPUPool", "spec.nodeManagerConfig.nodeProvisioner.budget"): (
        _H,
        "launch keeps the hourly rate under it",
    ),
    ("GPUPool", "spec.nodeManagerConfig.nodeProvisioner.budget.budgetExceedStrategy"): (
        _D,
        "both strategies cut launches; none terminates VMs yet",
    ),
    ("GPUPool", "spec.nodeManagerConfig.nodeProvisioner.karpenterNodeClassRef"): (_N, "kept (Karpenter)"),
    ("GPUPool", "spec.qosConfig"): (_N, "internal QoS pricing is not billed"),
    ("GPUPool", "spec.componentConfig"): (_N, "TensorFusion's components are not deployed"),
    ("GPUPool", "spec.defaultUsingLocalGPU"): (_N, "remote vGPU is not offered"),
    ("GPUPool", "status.phase"): (_H, "written by gpupool"),
    ("GPUPool", "status"): (_N, "controller-written; kept"),
    # ---- TensorFusionCluster ------------------------------------------------------------
    ("TensorFusionCluster", "spec.computingVendor"): (_H, "cloud, region and credentials"),
    ("TensorFusionCluster", "spec.gpuPools[].name"): (_H, "the pools the cluster declares"),
    ("TensorFusionCluster", "spec.gpuPools[].isDefault"): (_N, "the default pool is marked by annotation"),
    ("TensorFusionCluster", "status"): (_N, "controller-written; kept"),
    # ---- GPUNodeClass ---------------------------------------------------------------------
    ("GPUNodeClass", "spec"): (_H, "passed to RunInstances / ECS RunInstances"),
    ("GPUNodeClass", "spec.osImageFamily"): (_N, "images come from osImageSelectorTerms"),
    ("GPUNodeClass", "spec.osImageType"): (_N, "images come from osImageSelectorTerms"),
    ("GPUNodeClass", "spec.launchTemplate"): (_N, "the node class itself is the template"),
    # ---- GPUNodeClaim, GPUNode, GPU -----------------------------------------------------
    ("GPUNodeClaim", "spec"): (_H, "what launch asked for"),
    ("GPUNodeClaim", "status"): (_H, "written by gpupool"),
    ("GPUNode", "spec"): (_N, "kept; gpupool reads Kubernetes nodes"),
    ("GPUNode", "status"): (_N, "written by TensorFusion's node discovery; kept"),
    ("GPU", "status.capacity"): (_H, "scheduler capacity"),
    ("GPU", "status.available"): (_H, "scheduler capacity"),
    ("GPU", "status.phase"): (_H, "only Running GPUs are scheduled"),
    ("GPU", "status.gpuModel"): (_H, "gpu-model filter"),
    ("GPU", "status.vendor"): (_H, "vendor filter"),
    ("GPU", "status.index"): (_H, "gpu-indices filter"),
    ("GPU", "status.nodeSelector"): (_H, "the GPU's node"),
    ("GPU", "status.isolationMode"): (_H, "isolation filter"),
    ("GPU", "status.allocatedPartitions"): (_H, "partition filter"),
    ("GPU", "status"): (_N, "written by TensorFusion's node agent; kept"),
    # ---- scheduling, quota --------------------------------------------------------------
    ("SchedulingConfigTemplate", "spec.placement.mode"): (_H, "placement strategy"),
    ("SchedulingConfigTemplate", "spec"): (_N, "no such feature yet; kept"),
    ("GPUResourceQuota", "spec.total.requests.compute"): (_N, _TOTAL_COMPUTE),
    ("GPUResourceQuota", "spec.total.limits.compute"): (_N, _TOTAL_COMPUTE),
    ("GPUResourceQuota", "spec.single.defaultRequests.compute"): (_N, _DEFAULT_COMPUTE),
    ("GPUResourceQuota", "spec.single.defaultLimits.compute"): (_N, _DEFAULT_COMPUTE),
    ("GPUResourceQuota", "spec.total.requests"): (_H, "webhook and scheduler quota"),
    ("GPUResourceQuota", "spec.total.limits"): (_H, "webhook and scheduler quota"),
    ("GPUResourceQuota", "spec.total.maxWorkers"): (_H, "webhook and scheduler quota"),
    ("GPUResourceQuota", "spec.total.alertThresholdPercent"): (_N, "no quota alerts yet"),
    ("GPUResourceQuota", "spec.single.defaultRequests"): (_H, "webhook defaults"),
    ("GPUResourceQuota", "spec.single.defaultLimits"): (_H, "webhook defaults"),
    ("GPUResourceQuota", "spec.single"): (_H, "per-workload limits"),
    ("GPUResourceQuota", "status"): (_N, "kept"),
    # ---- workloads ----------------------------------------------------------------------
    ("WorkloadProfile", "spec.resources"): (_H, "a pod naming the profile gets these requests"),
    ("WorkloadProfile", "spec.poolName"): (_H, "tensor-fusion.ai/gpupool"),
    ("WorkloadProfile", "spec.qos"): (_H, "tensor-fusion.ai/qos"),
    ("WorkloadProfile", "spec.gpuCount"): (_H, "tensor-fusion.ai/gpu-count"),
    ("WorkloadProfile", "spec.gpuModel"): (_H, "tensor-fusion.ai/gpu-model"),
    ("WorkloadProfile", "spec.vendor"): (_H, "tensor-fusion.ai/vendor"),
    ("WorkloadProfile", "spec.isolation"): (_H, "tensor-fusion.ai/isolation"),
    ("WorkloadProfile", "spec.isLocalGPU"): (_H, "tensor-fusion.ai/is-local-gpu"),
    ("WorkloadProfile", "spec.gpuIndices"): (_H, "tensor-fusion.ai/gpu-indices"),
    ("WorkloadProfile", "spec.gangScheduling"): (_H, "gang-min-members / gang-timeout"),
    ("TensorFusionWorkload", "spec"): (_N, "TensorFusion's workload controller; kept"),
    ("TensorFusionConnection", "spec"): (_N, "remote vGPU connections; kept"),
    ("ProviderConfig", "spec"): (_N, "vendor images and partitions; kept"),
    ("*", "status"): (_N, "kept"),
}

DIFFERENT: dict[tuple[str, str], Verdict] = {
    ("GPUPool", "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements[].key"): (
        _D,
        "TensorFusion's keys, plus tensor-fusion.ai/gpu-model and karpenter.k8s.aws/* (validate warns)",
    ),
    ("GPUPool", "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements[].operator"): (
        _D,
        "NotIn is accepted too (Kubernetes' meaning); In without values matches nothing",
    ),
    ("GPUPool", "spec.nodeManagerConfig.nodeProvisioner.gpuTaints"): (
        _D,
        "a taint without a key is read and left out (Kubernetes refuses it)",
    ),
    ("GPUPool", "spec.nodeManagerConfig.nodeCompaction.period"): (
        _D,
        "'1d' is read as 24h; TensorFusion falls back to 1m on an unreadable period, gpupool refuses it",
    ),
    ("GPUPool", "spec.capacityConfig.oversubscription.tflopsOversellRatio"): (
        _D,
        "bounds TFLOPS limits at placement; TensorFusion only reports it as virtual capacity",
    ),
    ("GPUPool", "spec.capacityConfig.maxResources"): (
        _D,
        "new nodes are clipped at max; TensorFusion only refuses when the total already reaches it",
    ),
    ("GPUNodeClass", "spec.blockDeviceMappings[].ebs.volumeSize"): (
        _D,
        "'100GiB' / '100GB' read as 100Gi / 100G",
    ),
    ("GPUNodeClaim", "spec.capacityType"): (
        _D,
        "spot / on-demand (any case) read as Spot / OnDemand; Failed phase and timeouts added",
    ),
}

NOT_ACTED_KEYS: dict[str, str] = {
    c.ANNOTATION_GANG_MIN_MEMBERS: "honoured: all-or-nothing binding (see gang scheduling)",
    c.ANNOTATION_GANG_TIMEOUT: "honoured: a partial gang is released after it",
    c.LABEL_WORKLOAD: "honoured: the gang's group (else the pod's controlling owner)",
}
for _key, _what in (
    (
        "gang-enabled",
        "alone (quorum = the workload's replicas) a pod cannot say its quorum; set gang-min-members",
    ),
    ("partition-id", "partition template; partitioned GPUs are matched, templates are not applied"),
    ("partition", "partition mode"),
    ("topology", "GPU topology preference"),
    ("hardware-vendor", "accelerator vendor of a node"),
    ("inject-container", "which containers get the client"),
    ("autoscale", "vertical autoscaling"),
    ("autoscale-target", "vertical autoscaling target"),
    ("gpu-missing-since", "node agent bookkeeping"),
    ("defrag-source-since", "defragmentation marker"),
    ("defrag-source-pool", "defragmentation marker"),
    ("no-standalone-worker-mode", "remote worker mode"),
    ("generate-workload", "TensorFusionWorkload generation"),
    ("auto-limits", "autoscaling"),
    ("auto-requests", "autoscaling"),
    ("auto-replicas", "autoscaling"),
):
    NOT_ACTED_KEYS[f"{c.DOMAIN}/{_key}"] = f"not acted on: {_what}"
