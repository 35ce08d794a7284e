"""TensorFusion's label, annotation, finalizer, condition and event names (the compatibility contract).

Role: every `tensor-fusion.ai/…` name gpupool reads or writes, in one place, as listed in
TENSORFUSION-FACTS.md (read from TensorFusion's public source, v2.17.x).

Must not: hold behaviour; names only.
"""

from __future__ import annotations

from typing import Final

DOMAIN: Final = "tensor-fusion.ai"
API_GROUP: Final = DOMAIN
API_VERSION: Final = f"{DOMAIN}/v1"

# ---- node ↔ claim ------------------------------------------------------------------------
LABEL_NODE_PROVISIONER: Final = f"{DOMAIN}/node-provisioner"  # on the node: <claim name>
LABEL_MANAGED_BY: Final = f"{DOMAIN}/managed-by"  # on the claim: <pool>
LABEL_CLUSTER: Final = f"{DOMAIN}/cluster"  # on the claim: <cluster>
LABEL_NODE_CLASS: Final = f"{DOMAIN}/node-class"  # on the claim: <class>
LABEL_POOL_PREFIX: Final = f"{DOMAIN}/pool-"  # f"{LABEL_POOL_PREFIX}<pool>" = "true"
ANNOTATION_HOURLY_PRICING: Final = f"{DOMAIN}/hourly-pricing"  # on the claim


def pool_label(pool_name: str) -> str:
    """The claim label `tensor-fusion.ai/pool-<pool>` (value "true")."""
    return f"{LABEL_POOL_PREFIX}{pool_name}"


# ---- cloud instance tags -----------------------------------------------------------------
TAG_MANAGED_BY: Final = "managed-by"
TAG_MANAGED_BY_VALUE: Final = DOMAIN
TAG_NODE_NAME: Final = f"{DOMAIN}/node-name"
TAG_NODE_CLASS: Final = f"{DOMAIN}/node-class"
TAG_CLUSTER: Final = f"{DOMAIN}/cluster"

# ---- GPU objects and orphans -------------------------------------------------------------
LABEL_GPU_POOL: Final = f"{DOMAIN}/gpupool"  # on GPU objects: <pool>
LABEL_ORPHAN: Final = f"{DOMAIN}/orphan"  # "true" on a node whose claim is gone
ANNOTATION_GPU_MISSING_SINCE: Final = f"{DOMAIN}/gpu-missing-since"  # RFC3339: GPU gone or failed; unusable

# ---- compaction --------------------------------------------------------------------------
LABEL_SHOULD_DELETE: Final = f"{DOMAIN}/should-delete"  # "true" (AutoSelect)
LABEL_DO_NOT_DISRUPT: Final = f"{DOMAIN}/do-not-disrupt"  # "true" protects node / GPUNode
ANNOTATION_MANUAL_COMPACTION: Final = f"{DOMAIN}/manual-compaction"  # RFC3339 time, on the pool

# ---- expansion and Karpenter -------------------------------------------------------------
LABEL_EXPANSION_SOURCE: Final = f"{DOMAIN}/expansion-source"  # <template node>
ANNOTATION_KARPENTER_DO_NOT_DISRUPT: Final = "karpenter.sh/do-not-disrupt"  # "true"
KARPENTER_DEFAULT_GPU_RESOURCE: Final = "nvidia.com/gpu"
EXTRA_PARAM_KARPENTER_GPU_RESOURCE: Final = "karpenter.gpuResource"
EXTRA_PARAM_KARPENTER_TERMINATION_GRACE: Final = "karpenter.nodeClaim.terminationGracePeriod"
INITIAL_GPU_NODE_LABEL: Final = "nvidia.com/gpu.present"  # default selector: ="true"

# ---- pods --------------------------------------------------------------------------------
LABEL_ENABLED: Final = f"{DOMAIN}/enabled"  # "true"
LABEL_COMPONENT: Final = f"{DOMAIN}/component"  # worker | client
ANNOTATION_TFLOPS_REQUEST: Final = f"{DOMAIN}/tflops-request"
ANNOTATION_TFLOPS_LIMIT: Final = f"{DOMAIN}/tflops-limit"
ANNOTATION_VRAM_REQUEST: Final = f"{DOMAIN}/vram-request"
ANNOTATION_VRAM_LIMIT: Final = f"{DOMAIN}/vram-limit"
ANNOTATION_COMPUTE_PERCENT_REQUEST: Final = f"{DOMAIN}/compute-percent-request"
ANNOTATION_COMPUTE_PERCENT_LIMIT: Final = f"{DOMAIN}/compute-percent-limit"
ANNOTATION_GPU_COUNT: Final = f"{DOMAIN}/gpu-count"  # 1–128
ANNOTATION_GPU_MODEL: Final = f"{DOMAIN}/gpu-model"
ANNOTATION_VENDOR: Final = f"{DOMAIN}/vendor"
ANNOTATION_QOS: Final = f"{DOMAIN}/qos"  # low | medium | high | critical
ANNOTATION_GPU_POOL: Final = f"{DOMAIN}/gpupool"
ANNOTATION_ISOLATION: Final = f"{DOMAIN}/isolation"  # shared | soft | hard | partitioned
ANNOTATION_ENABLED_REPLICAS: Final = f"{DOMAIN}/enabled-replicas"
ANNOTATION_WORKLOAD_PROFILE: Final = f"{DOMAIN}/workload-profile"
ANNOTATION_IS_LOCAL_GPU: Final = f"{DOMAIN}/is-local-gpu"
ANNOTATION_DEDICATED_GPU: Final = f"{DOMAIN}/dedicated-gpu"
ANNOTATION_GPU_INDICES: Final = f"{DOMAIN}/gpu-indices"
ANNOTATION_GPU_IDS: Final = f"{DOMAIN}/gpu-ids"  # the GPUs the scheduler chose (not user-set)
ANNOTATION_INDEX: Final = f"{DOMAIN}/index"  # pod index for the device plugin (1-512)
ANNOTATION_EMBEDDED_WORKER: Final = f"{DOMAIN}/embedded-worker"
ANNOTATION_DEDICATED_WORKER: Final = f"{DOMAIN}/dedicated-worker"
ANNOTATION_EVICTION_PROTECTION: Final = f"{DOMAIN}/eviction-protection"
ANNOTATION_IS_DEFAULT_POOL: Final = f"{DOMAIN}/is-default-pool"
LABEL_WORKLOAD: Final = f"{DOMAIN}/workload"  # also the gang's group key (with the namespace)
ANNOTATION_GANG_MIN_MEMBERS: Final = f"{DOMAIN}/gang-min-members"  # > 0: all-or-nothing binding
ANNOTATION_GANG_TIMEOUT: Final = f"{DOMAIN}/gang-timeout"  # Go duration; empty, "0", "0s": no timeout
TAINT_USED_BY: Final = f"{DOMAIN}/used-by"  # PreferNoSchedule during progressive migration
TAINT_USED_BY_VALUE: Final = "tensor-fusion"  # TensorFusion's system name, the taint's value
TAINT_USED_BY_EFFECT: Final = "PreferNoSchedule"

COMPONENT_WORKER: Final = "worker"
COMPONENT_CLIENT: Final = "client"
COMPONENT_HYPERVISOR: Final = "hypervisor"
COMPONENT_NODE_DISCOVERY: Final = "node-discovery"
QOS_LEVELS: Final = ("low", "medium", "high", "critical")
ISOLATION_MODES: Final = ("shared", "soft", "hard", "partitioned")
DEFAULT_ISOLATION: Final = "soft"
GPU_COUNT_MIN: Final = 1
GPU_COUNT_MAX: Final = 128
SCHEDULER_NAME: Final = "tensor-fusion-scheduler"


def index_resource(index: int) -> str:
    """The extended resource `tensor-fusion.ai/index_<hex digit>` the webhook adds (0–15)."""
    if not 0 <= index <= 15:
        raise ValueError(f"index resource must be 0..15, got {index}")
    return f"{DOMAIN}/index_{index:x}"


# ---- finalizer (on every object TensorFusion's controllers own) ---------------------------
FINALIZER: Final = f"{DOMAIN}/finalizer"
SYSTEM_NAMESPACE: Final = "tensor-fusion-sys"

# ---- conditions, reasons, events ---------------------------------------------------------
CONDITION_READY: Final = "Ready"
CONDITION_NODE_PROVISIONED: Final = "NodeProvisioned"
CONDITION_POOL_READY: Final = "PoolReady"
CONDITION_GPU_POOL_READY: Final = "GPUPoolReady"
CONDITION_CLOUD_VENDOR_CONNECTION_READY: Final = "CloudVendorConnectionReady"
REASON_CLOUD_VENDOR_CONNECTION_OK: Final = "CloudVendorConnectionOK"
REASON_CLOUD_VENDOR_CONNECTION_FAILED: Final = "CloudVendorConnectionFailed"
EVENT_NODE_EXPANSION_COMPLETED: Final = "NodeExpansionCompleted"
EVENT_NODE_EXPANSION_FAILED: Final = "NodeExpansionFailed"
EVENT_NODE_EXPANSION_CHECK: Final = "NodeExpansionCheck"
EVENT_MANAGED_NODE_CREATED: Final = "ManagedNodeCreated"
EVENT_COMPACTION: Final = "Compaction"
EVENT_MAX_RESOURCE_CONSTRAINT_REACHED: Final = "MaxResourceConstraintReached"  # Warning
# gpupool's own Event reasons, beyond TensorFusion's.
EVENT_NODE_LAUNCH_FAILED: Final = "NodeLaunchFailed"  # Warning
EVENT_NODE_INTERRUPTED: Final = "NodeInterrupted"  # Warning
EVENT_BUDGET_EXCEEDED: Final = "BudgetExceeded"  # Warning
EVENT_INSTANCE_LAUNCHED: Final = "InstanceLaunched"  # on the claim: the instance launched or adopted
EVENT_INSTANCE_TERMINATED: Final = "InstanceTerminated"  # on the claim: its instance terminated, and why

# ---- userData and credentials ------------------------------------------------------------
USER_DATA_NODE_NAME_PLACEHOLDER: Final = "__GPU_NODE_RESOURCE_NAME__"
CLOUD_CREDENTIALS_SECRET: Final = "tf-cloud-vendor-credentials"
DEFAULT_ACCESS_KEY_PATH: Final = "/tmp/secret/ak"
DEFAULT_SECRET_KEY_PATH: Final = "/tmp/secret/sk"

# ---- requirement keys --------------------------------------------------------------------
KEY_INSTANCE_TYPE: Final = "node.kubernetes.io/instance-type"
KEY_ZONE: Final = "topology.kubernetes.io/zone"
KEY_REGION: Final = "topology.kubernetes.io/region"
KEY_CAPACITY_TYPE: Final = "karpenter.sh/capacity-type"
KEY_ARCH: Final = "kubernetes.io/arch"
KEY_OS: Final = "kubernetes.io/os"
KEY_GPU_VENDOR: Final = f"{DOMAIN}/gpu-vendor"
KEY_GPU_INSTANCE_FAMILY: Final = f"{DOMAIN}/gpu-instance-family"
KEY_GPU_INSTANCE_SIZE: Final = f"{DOMAIN}/gpu-instance-size"
