"""Pod mutating webhook (pure): AdmissionReview in, JSONPatch or a reasoned denial out."""

from gpupool.scheduler.admission.mutate import AdmissionContext, Denial, Mutation, PoolInfo, mutate_pod
from gpupool.scheduler.admission.review import AdmissionRequest, ReviewError, allowed, denied, parse_review

__all__ = [
    "AdmissionContext",
    "AdmissionRequest",
    "Denial",
    "Mutation",
    "PoolInfo",
    "ReviewError",
    "allowed",
    "denied",
    "mutate_pod",
    "parse_review",
]
