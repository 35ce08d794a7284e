"""The relay's HMAC signature: what signs, what verifies, and every way a request is refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpupool.core.intake.signature import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    TOLERANCE_SECONDS,
    sign_body,
    signature_problem,
)

SECRET = b"s3cret"
BODY = b'{"specversion":"1.0","id":"x"}'
NOW = 1_800_000_000


def test_a_signed_body_verifies_with_any_header_case() -> None:
    headers = sign_body(SECRET, BODY, timestamp=NOW)
    assert signature_problem(SECRET, headers, BODY, now=NOW) is None
    upper = {name.upper(): value for name, value in headers.items()}
    assert signature_problem(SECRET, upper, BODY, now=NOW + TOLERANCE_SECONDS) is None


def test_a_rotated_secret_verifies_when_any_listed_signature_matches() -> None:
    old = sign_body(b"old", BODY, timestamp=NOW)[SIGNATURE_HEADER]
    new = sign_body(SECRET, BODY, timestamp=NOW)
    headers = {**new, SIGNATURE_HEADER: f"{old}, {new[SIGNATURE_HEADER]}"}
    assert signature_problem(SECRET, headers, BODY, now=NOW) is None


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda h, b: ({}, b), "unsigned"),
        (lambda h, b: ({TIMESTAMP_HEADER: h[TIMESTAMP_HEADER]}, b), "unsigned"),
        (lambda h, b: (h, b + b" "), "does not match"),
        (lambda h, b: ({**h, SIGNATURE_HEADER: h[SIGNATURE_HEADER][3:]}, b), "does not match"),
        (lambda h, b: ({**h, TIMESTAMP_HEADER: str(NOW + 1)}, b), "does not match"),
        (lambda h, b: ({**h, TIMESTAMP_HEADER: "-5"}, b), "not Unix seconds"),
        (lambda h, b: ({**h, TIMESTAMP_HEADER: "１２"}, b), "not Unix seconds"),
    ],
)
def test_a_tampered_or_unsigned_request_is_refused(
    mutate: Callable[[dict[str, str], bytes], tuple[dict[str, str], bytes]], reason: str
) -> None:
    headers, body = mutate(sign_body(SECRET, BODY, timestamp=NOW), BODY)
    problem = signature_problem(SECRET, headers, body, now=NOW)
    assert problem is not None and reason in problem


def test_a_stale_or_future_timestamp_is_refused() -> None:
    headers = sign_body(SECRET, BODY, timestamp=NOW)
    for now in (NOW + TOLERANCE_SECONDS + 1, NOW - TOLERANCE_SECONDS - 1):
        problem = signature_problem(SECRET, headers, BODY, now=now)
        assert problem is not None and "from now" in problem


def test_the_wrong_secret_is_refused_and_an_empty_one_cannot_sign() -> None:
    headers = sign_body(SECRET, BODY, timestamp=NOW)
    assert signature_problem(b"other", headers, BODY, now=NOW) == "signature does not match the body"
    with pytest.raises(ValueError, match="empty"):
        sign_body(b"", BODY, timestamp=NOW)
