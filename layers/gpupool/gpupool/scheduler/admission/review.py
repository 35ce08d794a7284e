"""AdmissionReview v1 envelopes: read the request, write allowed / patched / denied responses.

Role: the exact wire shapes of admission.k8s.io/v1 (request.uid, request.object, response
{uid, allowed, patchType "JSONPatch", patch base64, status {code, message}}) and RFC 6902 path
escaping.

Must not: decide anything about pods (see `mutate`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["AdmissionRequest", "ReviewError", "allowed", "denied", "parse_review", "pointer"]

JsonPatch = Sequence[Mapping[str, Any]]


class ReviewError(ValueError):
    """A body that is not an AdmissionReview v1 request."""


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    uid: str
    operation: str
    namespace: str
    pod: dict[str, Any]
    dry_run: bool = False


def parse_review(body: Any) -> AdmissionRequest:
    """The request inside an AdmissionReview; ReviewError says what is missing."""
    if not isinstance(body, Mapping) or body.get("kind") != "AdmissionReview":
        raise ReviewError("body is not an AdmissionReview (kind must be AdmissionReview)")
    request = body.get("request")
    if not isinstance(request, Mapping) or not isinstance(request.get("uid"), str):
        raise ReviewError("AdmissionReview has no request.uid")
    pod = request.get("object")
    if not isinstance(pod, Mapping):
        raise ReviewError("AdmissionReview request has no object")
    kind = request.get("kind")
    if isinstance(kind, Mapping) and kind.get("kind") not in (None, "Pod"):
        raise ReviewError(f"this webhook admits Pods, not {kind.get('kind')}")
    return AdmissionRequest(
        uid=request["uid"],
        operation=str(request.get("operation", "CREATE")),
        namespace=str(request.get("namespace") or (pod.get("metadata") or {}).get("namespace") or "default"),
        pod=dict(pod),
        dry_run=bool(request.get("dryRun", False)),
    )


def _review(response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def allowed(uid: str, patch: JsonPatch = (), warnings: Sequence[str] = ()) -> dict[str, Any]:
    """Allow, with a JSONPatch when there is one."""
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(list(patch), separators=(",", ":")).encode()).decode()
    if warnings:
        response["warnings"] = list(warnings)
    return _review(response)


def denied(uid: str, message: str, *, code: int = 403) -> dict[str, Any]:
    """Deny with a message the user sees in `kubectl` (and in the owning controller's events)."""
    return _review({"uid": uid, "allowed": False, "status": {"code": code, "message": message}})


def pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer: `~` → `~0`, `/` → `~1`."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
