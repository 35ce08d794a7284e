"""The one table that turns Alibaba Cloud ECS error codes into gpupool's domain errors.

Role: `EcsApiError` is what every ECS transport raises (the SDK wrapper in `alibaba.api` converts
Tea exceptions into it); `classify` maps its code (exact code first, then a known prefix, then
the HTTP status) to capacity / throttled / permanent / not-found, and `translate` builds the
matching `gpupool.service.errors` exception. Codes are those of the ECS API reference
(RunInstances, DeleteInstances, DescribeInstances "Error codes" sections); the capacity codes
play the part EC2's InsufficientInstanceCapacity plays on AWS: the offering is marked
unavailable for a few minutes and the next cheapest is tried.

Must not: call Alibaba Cloud, sleep or retry (the adapter retries throttling), or swallow an
error.
"""

from __future__ import annotations

from gpupool.adapters.cloud import ErrorKind, table_kind
from gpupool.service.errors import (
    CapacityUnavailable,
    DomainError,
    NotFound,
    PermanentError,
    Throttled,
)

__all__ = ["ERROR_TABLE", "IDEMPOTENT_MISMATCH", "EcsApiError", "ErrorKind", "classify", "translate"]

IDEMPOTENT_MISMATCH = "IdempotentParameterMismatch"


class EcsApiError(Exception):
    """An ECS API error: its `code` (empty for a transport failure), message and HTTP status (0 if none)."""

    def __init__(self, code: str, message: str, *, status: int = 0) -> None:
        super().__init__(f"{code or 'error'}: {message}")
        self.code = code
        self.message = message
        self.status = status


ERROR_TABLE: dict[str, ErrorKind] = {
    # No stock for this instance type in this zone (or for this spot price): try the next offering.
    "OperationDenied.NoStock": ErrorKind.CAPACITY,
    "InvalidResourceType.NotSupported": ErrorKind.CAPACITY,
    "InvalidInstanceType.ValueNotSupported": ErrorKind.CAPACITY,
    "InvalidInstanceType.NotSupported": ErrorKind.CAPACITY,
    "Zone.NotOnSale": ErrorKind.CAPACITY,
    "Zone.NotOpen": ErrorKind.CAPACITY,
    "InvalidZoneId.NotOnSale": ErrorKind.CAPACITY,
    "InvalidVSwitchId.IpNotEnough": ErrorKind.CAPACITY,  # zone-bound: another zone may work
    "InvalidSpotPriceLimit.LowerThanPublicPrice": ErrorKind.CAPACITY,
    "OperationDenied.NoSpotStock": ErrorKind.CAPACITY,
    # Account quotas: a different family or capacity type may still fit.
    "QuotaExceed.PostPaidInstance": ErrorKind.CAPACITY,
    "QuotaExceed.SpotInstance": ErrorKind.CAPACITY,
    "QuotaExceed.Instance": ErrorKind.CAPACITY,
    # Rate limits and transient server faults.
    "Throttling": ErrorKind.THROTTLED,
    "ServiceUnavailable": ErrorKind.THROTTLED,
    "InternalError": ErrorKind.THROTTLED,
    "UnknownError": ErrorKind.THROTTLED,
    "IncorrectInstanceStatus": ErrorKind.THROTTLED,  # e.g. still Pending: a later try succeeds
    "OperationConflict": ErrorKind.THROTTLED,
    "LastTokenProcessing": ErrorKind.THROTTLED,  # the same ClientToken is still being processed
    # Not there.
    "InvalidInstanceId.NotFound": ErrorKind.NOT_FOUND,
    "InvalidInstance.NotFound": ErrorKind.NOT_FOUND,
    # Bad request or no permission: retrying cannot help.
    "MissingParameter": ErrorKind.PERMANENT,
    "InvalidAccessKeyId.NotFound": ErrorKind.PERMANENT,
    "InvalidAccessKeyId.Inactive": ErrorKind.PERMANENT,
    "SignatureDoesNotMatch": ErrorKind.PERMANENT,
    "IncompleteSignature": ErrorKind.PERMANENT,
    "InvalidSecurityToken.Expired": ErrorKind.PERMANENT,
    IDEMPOTENT_MISMATCH: ErrorKind.PERMANENT,
}

# Families by prefix, consulted after the exact table.
PREFIX_TABLE: tuple[tuple[str, ErrorKind], ...] = (
    ("Throttling.", ErrorKind.THROTTLED),  # Throttling.User, Throttling.Api, …
    ("ServiceUnavailable.", ErrorKind.THROTTLED),
    ("OperationDenied.NoStock", ErrorKind.CAPACITY),
    ("Forbidden", ErrorKind.PERMANENT),  # Forbidden.RAM, Forbidden.RiskControl, …
    ("InvalidParameter", ErrorKind.PERMANENT),
    ("InvalidImageId.", ErrorKind.PERMANENT),
    ("InvalidSecurityGroupId.", ErrorKind.PERMANENT),
    ("InvalidVSwitchId.", ErrorKind.PERMANENT),
    ("InvalidKeyPairName.", ErrorKind.PERMANENT),
    ("InvalidUserData.", ErrorKind.PERMANENT),
    ("InvalidSystemDisk", ErrorKind.PERMANENT),
    ("InvalidDataDisk", ErrorKind.PERMANENT),
    ("InvalidDiskCategory", ErrorKind.PERMANENT),
    ("OperationDenied", ErrorKind.PERMANENT),
    ("Invalid", ErrorKind.PERMANENT),
)


def classify(code: str, http_status: int = 0) -> ErrorKind:
    """The kind of an ECS error code; unknown codes fall back on the HTTP status (429 and 5xx retryable).

    An empty code is a transport failure (connection refused, timeout): retryable.
    """
    kind = table_kind(code, ERROR_TABLE, PREFIX_TABLE)
    if kind is not None:
        return kind
    if not code or http_status == 429 or http_status >= 500:
        return ErrorKind.THROTTLED
    return ErrorKind.PERMANENT


def translate(error: EcsApiError, *, action: str, offering: str | None = None) -> DomainError:
    """The domain error for an ECS error raised by `action`.

    `offering` (e.g. "ecs.gn7i-c8g1.2xlarge/cn-hangzhou-h/Spot") names what could not launch in
    a CapacityUnavailable message so the service and the claim's events can say which.
    """
    code = error.code
    kind = classify(code, error.status)
    text = f"ECS {action} failed: {code or 'error'}: {error.message}"
    if kind is ErrorKind.CAPACITY:
        where = f" for {offering}" if offering else ""
        return CapacityUnavailable(f"ECS has no capacity{where}: {code}: {error.message}", code=code)
    if kind is ErrorKind.THROTTLED:
        return Throttled(text, code=code or None)
    if kind is ErrorKind.NOT_FOUND:
        return NotFound(text, code=code)
    return PermanentError(text, code=code)
