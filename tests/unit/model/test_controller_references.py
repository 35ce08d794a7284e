"""Objects hand out controller ownerReferences for their dependents (claims of a pool, pools of a cluster)."""

from gpupool.core.model import GPUPool, TensorFusionCluster
from gpupool.core.model.base import ObjectMeta


def test_an_object_with_a_uid_controls_its_dependents() -> None:
    pool = GPUPool(metadata=ObjectMeta(name="elastic", uid="u-1"))
    (reference,) = pool.controller_references()
    assert (reference.api_version, reference.kind, reference.name, reference.uid) == (
        "tensor-fusion.ai/v1",
        "GPUPool",
        "elastic",
        "u-1",
    )
    assert reference.controller is True and reference.block_owner_deletion is True
    manifest = reference.model_dump(by_alias=True, exclude_none=True)
    assert manifest["blockOwnerDeletion"] is True and manifest["apiVersion"] == "tensor-fusion.ai/v1"


def test_an_object_not_yet_stored_owns_nothing() -> None:
    assert TensorFusionCluster(metadata=ObjectMeta(name="tensor-fusion")).controller_references() == []
