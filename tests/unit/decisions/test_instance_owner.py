"""A claim trusts only its own instance (`decisions.instance_owner`, issue 33 attempt 1): the claim
that recorded the instance id; a claim with none yet only for an instance that carries its tags and
its launch token; never a claim that recorded another instance, whatever the tags say.
"""

from __future__ import annotations

from gpupool.core.decisions.instance_owner import claim_of_instance, launch_token
from gpupool.core.model.instance import ManagedInstance
from gpupool.core.model.nodeclaim import GPUNodeClaim


def claim(name: str, *, instance_id: str | None = None, uid: str | None = None) -> GPUNodeClaim:
    body: dict[str, object] = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUNodeClaim",
        "metadata": {"name": name, **({"uid": uid} if uid else {})},
        "spec": {"tflopsOffered": "100", "vramOffered": "40Gi", "gpuDeviceOffered": 1},
    }
    if instance_id:
        body["status"] = {"phase": "Creating", "instanceID": instance_id}
    return GPUNodeClaim.model_validate(body)


def instance(instance_id: str, claim_name: str, token: str | None) -> ManagedInstance:
    return ManagedInstance(
        instance_id=instance_id, state="running", claim_name=claim_name, client_token=token
    )


def test_the_claim_that_recorded_the_id_is_its_claim() -> None:
    recorded = claim("c1", instance_id="i-1")
    assert claim_of_instance("i-1", [recorded], []) is recorded


def test_copied_tags_never_reach_a_claim_that_recorded_another_instance() -> None:
    recorded = claim("c1", instance_id="i-1", uid="u1")
    for token in (None, "forged", launch_token(recorded)):
        assert claim_of_instance("i-2", [recorded], [instance("i-2", "c1", token)]) is None


def test_a_claim_without_an_instance_yet_needs_its_tags_and_its_launch_token() -> None:
    fresh = claim("c1", uid="u1")
    assert claim_of_instance("i-2", [fresh], [instance("i-2", "c1", "u1")]) is fresh
    assert claim_of_instance("i-2", [fresh], [instance("i-2", "c1", None)]) is None, "ECS reports no token"
    assert claim_of_instance("i-2", [fresh], [instance("i-2", "c1", "c1")]) is None, (
        "the name is not the token"
    )
    assert claim_of_instance("i-2", [fresh], [instance("i-2", "other", "u1")]) is None, "tags name another"
    assert claim_of_instance("i-2", [fresh], [instance("i-3", "c1", "u1")]) is None, "another instance"
    assert launch_token(claim("c2")) == "c2", "a claim without a UID launches with its name"
