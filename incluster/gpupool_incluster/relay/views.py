"""Small pure helpers of the relay's hub: the pod as the webhook would leave it, quota usage copies.

Must not: hold state, lock, or call the API server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpupool.core.allocator import Allocator
from gpupool.core.allocator.quota import QuotaUsage

__all__ = ["apply_annotation_patch", "usage_copy"]


def apply_annotation_patch(
    pod: Mapping[str, Any], patch: list[dict[str, Any]], *, namespace: str
) -> dict[str, Any]:
    """The pod's metadata after the webhook's annotation operations (enough to simulate)."""
    metadata = dict(pod.get("metadata") or {})
    metadata.setdefault("namespace", namespace)
    annotations = dict(metadata.get("annotations") or {})
    prefix = "/metadata/annotations/"
    for op in patch:
        path = str(op.get("path", ""))
        if path == "/metadata/annotations":
            annotations = dict(op["value"])
        elif path.startswith(prefix):
            annotations[path[len(prefix) :].replace("~1", "/").replace("~0", "~")] = str(op["value"])
    metadata["annotations"] = annotations
    return {**pod, "metadata": metadata}


def usage_copy(allocator: Allocator, namespace: str) -> QuotaUsage:
    found = allocator.usage.get(namespace)
    if found is None:
        return QuotaUsage()
    return QuotaUsage(
        found.tflops_requests, found.tflops_limits, found.vram_requests, found.vram_limits, found.workers
    )
