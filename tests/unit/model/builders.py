"""Manifest builders for model tests: a valid object of each kind, with overrides by path."""

from __future__ import annotations

import copy
from typing import Any


def pool_manifest(**spec_overrides: Any) -> dict[str, Any]:
    """A valid Provisioned GPUPool manifest; keyword overrides replace top-level spec keys."""
    spec: dict[str, Any] = {
        "capacityConfig": {
            "minResources": {"tflops": "65", "vram": "15Gi"},
            "warmResources": {"tflops": "0", "vram": "0"},
            "maxResources": {"tflops": "260", "vram": "60Gi"},
            "oversubscription": {
                "tflopsOversellRatio": 500,
                "vramExpandToHostMem": 50,
                "vramExpandToHostDisk": 70,
            },
        },
        "nodeManagerConfig": {
            "provisioningMode": "Provisioned",
            "nodeProvisioner": {
                "nodeClass": "tf-node-class",
                "gpuRequirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge"]}
                ],
                "gpuTaints": [{"key": "group", "value": "gpu", "effect": "NoSchedule"}],
                "gpuNodeLabels": {"nvidia.com/gpu.present": "true"},
                "gpuNodeAnnotations": {"team": "ml"},
                "budget": {"budgetPerDay": "100", "budgetExceedStrategy": "AlertOnly"},
            },
            "nodeCompaction": {"period": "10m"},
            "nodePoolRollingUpdatePolicy": {
                "autoUpdateHypervisor": True,
                "batchPercentage": 20,
                "batchInterval": "5m",
                "maxDuration": "10m",
                "maintenanceWindow": {"includes": ["0 3 * * *"]},
            },
        },
        "qosConfig": {
            "defaultQoS": "medium",
            "definitions": [{"name": "high", "description": "online", "priority": 80}],
            "pricing": [
                {
                    "qos": "high",
                    "requests": {"perFP16TFlopsPerHour": "$0.0069", "perGBOfVRAMPerHour": "$0.015"},
                    "limitsOverRequests": "1",
                }
            ],
        },
        "componentConfig": {"hypervisor": {"image": "hv:1", "podTemplate": {"spec": {"x": [1, 2]}}}},
        "schedulingConfigTemplate": "default",
    }
    spec.update(copy.deepcopy(spec_overrides))
    return {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": {"name": "elastic", "labels": {"a": "b"}, "resourceVersion": "7"},
        "spec": spec,
    }


def cluster_manifest() -> dict[str, Any]:
    """A valid TensorFusionCluster with one inline pool (the pool manifest's spec)."""
    return {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "TensorFusionCluster",
        "metadata": {"name": "tensor-fusion"},
        "spec": {
            "computingVendor": {
                "name": "alibaba",
                "type": "alibaba",
                "authType": "accessKey",
                "enable": True,
                "params": {
                    "defaultRegion": "cn-hangzhou",
                    "accessKeyPath": "/tmp/secret/ak",
                    "secretKeyPath": "/tmp/secret/sk",
                    "extraParams": {"systemDiskSize": "100"},
                },
            },
            "gpuPools": [{"name": "elastic", "isDefault": True, "specTemplate": pool_manifest()["spec"]}],
        },
    }


def claim_manifest() -> dict[str, Any]:
    return {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUNodeClaim",
        "metadata": {"name": "elastic-abc12", "labels": {"tensor-fusion.ai/managed-by": "elastic"}},
        "spec": {
            "region": "us-east-1",
            "zone": "us-east-1a",
            "instanceType": "g5.xlarge",
            "capacityType": "Spot",
            "nodeClassRef": {
                "group": "tensor-fusion.ai",
                "kind": "GPUNodeClass",
                "name": "c",
                "version": "v1",
            },
            "tflopsOffered": "125",
            "vramOffered": "24Gi",
            "gpuDeviceOffered": 1,
            "extraParams": {"karpenter.gpuResource": "nvidia.com/gpu"},
        },
        "status": {"phase": "Creating", "instanceID": "i-0abc"},
    }


def node_class_manifest() -> dict[str, Any]:
    return {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUNodeClass",
        "metadata": {"name": "tf-node-class"},
        "spec": {
            "osImageSelectorTerms": [{"id": "ami-1"}],
            "instanceProfile": "gpu-node",
            "metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 2},
            "securityGroupSelectorTerms": [{"id": "sg-1"}],
            "subnetSelectorTerms": [{"id": "subnet-1"}, {"tags": {"tier": "private"}}],
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "ebs": {
                        "volumeSize": "200Gi",
                        "volumeType": "gp3",
                        "iops": 3000,
                        "throughput": 125,
                        "encrypted": True,
                        "deleteOnTermination": True,
                    },
                }
            ],
            "tags": {"team": "ai"},
            "userData": "#!/bin/bash\necho __GPU_NODE_RESOURCE_NAME__\n",
            "launchTemplate": {"name": "lt"},
        },
    }
