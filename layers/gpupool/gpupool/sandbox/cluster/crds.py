"""The CustomResourceDefinitions the real control plane serves: gpupool's tensor-fusion.ai CRDs as
the chart ships them, Karpenter's NodePool, NodeClaim and NodeOverlay, the CapacityBuffer its
controller watches, and the KWOKNodeClass of its KWOK provider — those from Karpenter's own module.

Must not: edit a CRD; each is applied as published.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpupool.sandbox.cluster.build import BuildError, assets_dir


def karpenter_crds() -> list[dict[str, Any]]:
    files = sorted(assets_dir("karpenter").glob("*.yaml"))
    if not files:
        raise BuildError(
            f"karpenter: no CRDs in {assets_dir('karpenter')} — run `gpupool sandbox build karpenter`"
        )
    return [document for path in files for document in yaml.safe_load_all(path.read_text()) if document]


def crd_documents() -> list[dict[str, Any]]:
    from gpupool.core.model.crd import generate_crds

    return [*generate_crds(), *karpenter_crds()]
