"""Loading the reconstructed TensorFusion samples (tests/compat/samples/*.yaml) for the suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SAMPLES = Path(__file__).parent / "samples"
STORED = ("cluster.yaml", "provider.yaml", "scheduling.yaml", "workloads.yaml", "nodes.yaml")


def documents(*names: str) -> list[dict[str, Any]]:
    """The YAML documents of the named sample files (all stored-form samples by default)."""
    out: list[dict[str, Any]] = []
    for name in names or STORED:
        out += [doc for doc in yaml.safe_load_all((SAMPLES / name).read_text(encoding="utf-8")) if doc]
    return out


PLURALS = {
    "TensorFusionCluster": "tensorfusionclusters",
    "GPUPool": "gpupools",
    "GPUNodeClass": "gpunodeclasses",
    "GPUNodeClaim": "gpunodeclaims",
    "GPUNode": "gpunodes",
    "GPU": "gpus",
    "SchedulingConfigTemplate": "schedulingconfigtemplates",
    "GPUResourceQuota": "gpuresourcequotas",
    "ProviderConfig": "providerconfigs",
    "WorkloadProfile": "workloadprofiles",
    "TensorFusionWorkload": "tensorfusionworkloads",
    "TensorFusionConnection": "tensorfusionconnections",
}


def store(api_client: Any, docs: list[dict[str, Any]]) -> None:
    """Create each sample (and its status, through the status subresource) in a cluster."""
    from kubernetes import client

    custom, core = client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
    namespaces = {doc["metadata"].get("namespace") for doc in docs} - {None}
    existing = {ns.metadata.name for ns in core.list_namespace().items}
    for namespace in sorted(namespaces - existing):
        core.create_namespace({"metadata": {"name": namespace}})
    for doc in docs:
        plural, namespace = PLURALS[doc["kind"]], doc["metadata"].get("namespace")
        body = {k: v for k, v in doc.items() if k != "status"}
        if namespace:
            custom.create_namespaced_custom_object("tensor-fusion.ai", "v1", namespace, plural, body)
            if "status" in doc:
                custom.patch_namespaced_custom_object_status(
                    "tensor-fusion.ai",
                    "v1",
                    namespace,
                    plural,
                    doc["metadata"]["name"],
                    {"status": doc["status"]},
                )
        else:
            custom.create_cluster_custom_object("tensor-fusion.ai", "v1", plural, body)
            if "status" in doc:
                custom.patch_cluster_custom_object_status(
                    "tensor-fusion.ai", "v1", plural, doc["metadata"]["name"], {"status": doc["status"]}
                )
