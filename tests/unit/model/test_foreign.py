"""Foreign envelopes (core v1 Node/Pod, Karpenter NodeClaim/NodePool): read what services need."""

from __future__ import annotations

from gpupool.core.model import KarpenterNodeClaim, KarpenterNodePool, Pod, load_manifests
from gpupool.core.quantity import Quantity

NODE_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: tf-gpu
spec:
  template:
    metadata:
      labels:
        nvidia.com/gpu.present: "true"
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      expireAfter: Never
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["g5.xlarge", "g5.12xlarge"]
      taints:
        - key: nvidia.com/gpu
          effect: NoSchedule
  limits:
    nvidia.com/gpu: 8
    memory: 1000Ti
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 5m
"""

NODE_CLAIM = """\
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: elastic-abc12
  labels: {tensor-fusion.ai/node-provisioner: elastic-abc12}
  annotations: {karpenter.sh/do-not-disrupt: "true"}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [g5.xlarge]}
  resources:
    requests: {nvidia.com/gpu: "1"}
status:
  providerID: aws:///us-east-1a/i-0abc
  nodeName: ip-10-0-0-1
  conditions: [{type: Launched, status: "True"}]
  lastPodEventTime: "2024-01-01T00:00:00Z"
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: test-pod
  namespace: default
  annotations: {tensor-fusion.ai/tflops-request: "100", tensor-fusion.ai/vram-request: 16Gi}
spec:
  schedulerName: tensor-fusion-scheduler
  nodeSelector: {node.accelerator: nvidia-gpu}
  tolerations: [{key: gpu, operator: Equal, value: "true", effect: NoSchedule}]
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}
  containers:
    - name: cuda
      image: nvidia/cuda
      resources: {requests: {cpu: 1000m, memory: 1Gi}, limits: {nvidia.com/gpu: 1}}
  restartPolicy: Never
status:
  phase: Pending
"""


def test_node_pool_template_and_limits() -> None:
    (pool,) = load_manifests(NODE_POOL)
    assert isinstance(pool, KarpenterNodePool)
    assert pool.spec.template.metadata.labels == {"nvidia.com/gpu.present": "true"}
    assert pool.spec.template.spec.requirements[0].values == ["g5.xlarge", "g5.12xlarge"]
    assert pool.spec.template.spec.node_class_ref is not None
    assert pool.spec.template.spec.node_class_ref.kind == "EC2NodeClass"
    assert pool.spec.limits["nvidia.com/gpu"] == Quantity(8)
    assert pool.spec.limits["memory"] == Quantity(1000 * 2**40)


def test_node_claim_status_and_requests() -> None:
    (claim,) = load_manifests(NODE_CLAIM)
    assert isinstance(claim, KarpenterNodeClaim)
    assert claim.status.provider_id == "aws:///us-east-1a/i-0abc"
    assert claim.status.node_name == "ip-10-0-0-1"
    assert claim.spec.resources.requests["nvidia.com/gpu"] == 1
    assert claim.metadata.annotations["karpenter.sh/do-not-disrupt"] == "true"
    assert "lastPodEventTime" not in claim.to_manifest()["status"]


def test_pod_placement_and_resources() -> None:
    (pod,) = load_manifests(POD)
    assert isinstance(pod, Pod)
    assert pod.spec.scheduler_name == "tensor-fusion-scheduler"
    assert pod.spec.containers[0].resources.requests["cpu"] == Quantity.parse("1")
    assert pod.spec.containers[0].resources.limits["nvidia.com/gpu"] == 1
    assert pod.spec.tolerations[0].key == "gpu"
    assert pod.spec.affinity is not None and "nodeAffinity" in pod.spec.affinity
    assert pod.status.phase == "Pending"
    assert pod.metadata.annotations["tensor-fusion.ai/vram-request"] == "16Gi"
