"""The one table that turns EC2 error codes into gpupool's domain errors.

Role: classify a botocore ClientError's code (exact code first, then a known prefix, then the
HTTP status) into capacity / throttled / permanent / not-found, and build the matching
`gpupool.service.errors` exception. Codes are EC2's, as listed in the EC2 API reference
"Error codes" page; capacity codes follow karpenter-provider-aws's reading of them.

Must not: call AWS, sleep or retry (the adapter retries throttling), or swallow an error.
"""

from __future__ import annotations

from typing import Any

from gpupool.adapters.cloud import ErrorKind, table_kind
from gpupool.service.errors import (
    CapacityUnavailable,
    DomainError,
    NotFound,
    PermanentError,
    Throttled,
)

__all__ = ["ERROR_TABLE", "ErrorKind", "classify", "error_code", "translate"]


ERROR_TABLE: dict[str, ErrorKind] = {
    # No capacity for this offering now: mark it unavailable, try the next cheapest.
    "InsufficientInstanceCapacity": ErrorKind.CAPACITY,
    "InsufficientCapacity": ErrorKind.CAPACITY,
    "InsufficientHostCapacity": ErrorKind.CAPACITY,
    "InsufficientReservedInstanceCapacity": ErrorKind.CAPACITY,
    "InsufficientFreeAddressesInSubnet": ErrorKind.CAPACITY,  # zone-bound: another zone may work
    "ReservationCapacityExceeded": ErrorKind.CAPACITY,
    "UnfulfillableCapacity": ErrorKind.CAPACITY,
    "Unsupported": ErrorKind.CAPACITY,  # type not offered in this zone
    "SpotMaxPriceTooLow": ErrorKind.CAPACITY,
    "MaxSpotInstanceCountExceeded": ErrorKind.CAPACITY,
    # Account quotas: the same type elsewhere fails too, but a cheaper *different* offering
    # (another family, on-demand instead of spot) may fit the quota, so treat as capacity.
    "InstanceLimitExceeded": ErrorKind.CAPACITY,
    "VcpuLimitExceeded": ErrorKind.CAPACITY,
    # Rate limits and transient server faults.
    "RequestLimitExceeded": ErrorKind.THROTTLED,
    "Throttling": ErrorKind.THROTTLED,
    "ThrottlingException": ErrorKind.THROTTLED,
    "RequestThrottled": ErrorKind.THROTTLED,
    "ServiceUnavailable": ErrorKind.THROTTLED,
    "Unavailable": ErrorKind.THROTTLED,
    "InternalError": ErrorKind.THROTTLED,
    "InternalFailure": ErrorKind.THROTTLED,
    # Not there.
    "InvalidInstanceID.NotFound": ErrorKind.NOT_FOUND,
    # Bad request or no permission: retrying cannot help.
    "InvalidParameter": ErrorKind.PERMANENT,
    "InvalidParameterValue": ErrorKind.PERMANENT,
    "InvalidParameterCombination": ErrorKind.PERMANENT,
    "MissingParameter": ErrorKind.PERMANENT,
    "UnknownParameter": ErrorKind.PERMANENT,
    "UnauthorizedOperation": ErrorKind.PERMANENT,
    "AuthFailure": ErrorKind.PERMANENT,
    "OptInRequired": ErrorKind.PERMANENT,
    "Blocked": ErrorKind.PERMANENT,
    "PendingVerification": ErrorKind.PERMANENT,
    "SignatureDoesNotMatch": ErrorKind.PERMANENT,
    "InvalidClientTokenId": ErrorKind.PERMANENT,
    "IdempotentParameterMismatch": ErrorKind.PERMANENT,
    "InvalidInstanceID.Malformed": ErrorKind.PERMANENT,
}

# Families by prefix, consulted after the exact table (e.g. InvalidAMIID.NotFound,
# InvalidSubnetID.NotFound, InvalidGroup.NotFound, InvalidBlockDeviceMapping).
PREFIX_TABLE: tuple[tuple[str, ErrorKind], ...] = (
    ("InvalidAMIID.", ErrorKind.PERMANENT),
    ("InvalidSubnetID.", ErrorKind.PERMANENT),
    ("InvalidSubnet", ErrorKind.PERMANENT),
    ("InvalidGroup", ErrorKind.PERMANENT),
    ("InvalidSecurityGroupID.", ErrorKind.PERMANENT),
    ("InvalidKeyPair.", ErrorKind.PERMANENT),
    ("InvalidBlockDeviceMapping", ErrorKind.PERMANENT),
    ("InvalidUserData.", ErrorKind.PERMANENT),
    ("InvalidIamInstanceProfile", ErrorKind.PERMANENT),
    ("InvalidParameter", ErrorKind.PERMANENT),
    ("Invalid", ErrorKind.PERMANENT),
)


def error_code(error: Any) -> str:
    """The `Error.Code` of a botocore ClientError (empty when absent)."""
    response = getattr(error, "response", None) or {}
    return str((response.get("Error") or {}).get("Code") or "")


def _http_status(error: Any) -> int:
    response = getattr(error, "response", None) or {}
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return int(status) if isinstance(status, int) else 0


def classify(code: str, http_status: int = 0) -> ErrorKind:
    """The kind of an EC2 error code; unknown codes fall back on the HTTP status (5xx retryable)."""
    kind = table_kind(code, ERROR_TABLE, PREFIX_TABLE)
    if kind is not None:
        return kind
    if http_status == 429 or http_status >= 500:
        return ErrorKind.THROTTLED
    return ErrorKind.PERMANENT


def translate(error: Any, *, operation: str, offering: str | None = None) -> DomainError:
    """The domain error for a botocore ClientError raised by `operation`.

    `offering` (e.g. "g5.xlarge/us-east-1a/Spot") names what could not launch in a
    CapacityUnavailable message so the service and the claim's events can say which.
    """
    code = error_code(error)
    response = getattr(error, "response", None) or {}
    message = str((response.get("Error") or {}).get("Message") or error)
    kind = classify(code, _http_status(error))
    text = f"EC2 {operation} failed: {code or 'error'}: {message}"
    if kind is ErrorKind.CAPACITY:
        where = f" for {offering}" if offering else ""
        return CapacityUnavailable(f"EC2 has no capacity{where}: {code}: {message}", code=code)
    if kind is ErrorKind.THROTTLED:
        return Throttled(text, code=code)
    if kind is ErrorKind.NOT_FOUND:
        return NotFound(text, code=code)
    return PermanentError(text, code=code)
