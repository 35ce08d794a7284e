"""`gpupool.handlers.relay_auth`: the relay authentication a function reads from its environment.

Covers: the default mode is hmac, and hmac with no secret refuses; a platform mode is taken only
by the flavour whose platform implements it, and an unknown mode refuses; aws-iam carries the
relay principal; the HMAC secret comes from the store when its id is set (over a plaintext
value), is cached for SECRET_TTL_SECONDS and read again after, a rotated id is read at once, and
a store that fails or holds an empty value raises RelayAuthUnavailable naming the id, never a
value — and is asked again on the next call.
"""

from __future__ import annotations

import pytest

from gpupool.handlers.relay_auth import (
    HMAC_SECRET_ID_VARIABLE,
    HMAC_SECRET_VARIABLE,
    HTTP_AUTH_VARIABLE,
    RELAY_PRINCIPAL_VARIABLE,
    SECRET_TTL_SECONDS,
    RelayAuthReader,
    RelayAuthUnavailable,
)


class Store:
    """A secret store: values by id, the reads it served, failures on demand."""

    def __init__(self, **values: str) -> None:
        self.values = dict(values)
        self.reads: list[str] = []
        self.failing = False

    def __call__(self, secret_id: str) -> str:
        self.reads.append(secret_id)
        if self.failing:
            raise RuntimeError("AccessDeniedException: not allowed")
        return self.values[secret_id]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _reader(
    store: Store | None = None, clock: Clock | None = None, platform: str = "aws-iam"
) -> RelayAuthReader:
    return RelayAuthReader(platform=platform, load_secret=store or Store(), clock=clock or Clock())  # type: ignore[arg-type]


def test_hmac_is_the_default_and_refuses_without_a_secret() -> None:
    auth = _reader().read({})
    assert auth.mode == "hmac" and auth.hmac_secret == b""
    assert _reader().read({HMAC_SECRET_VARIABLE: "plain"}).hmac_secret == b"plain"


@pytest.mark.parametrize(
    ("platform", "mode", "taken"),
    [
        ("aws-iam", "aws-iam", True),
        ("aws-iam", "fc-signature", False),
        ("fc-signature", "fc-signature", True),
        ("fc-signature", "aws-iam", False),
        ("aws-iam", "none", False),
        ("fc-signature", "anonymous", False),
    ],
)
def test_a_platform_mode_is_taken_only_by_its_platform(platform: str, mode: str, taken: bool) -> None:
    auth = _reader(platform=platform).read({HTTP_AUTH_VARIABLE: mode, RELAY_PRINCIPAL_VARIABLE: "arn:x"})
    assert (auth.misconfigured is None) is taken, auth
    if taken:
        assert auth.mode == mode
    else:
        assert auth.mode is None and mode in (auth.misconfigured or "")


def test_a_flavour_names_a_platform_mode() -> None:
    with pytest.raises(ValueError, match="aws-iam or fc-signature"):
        RelayAuthReader(platform="hmac", load_secret=Store())


def test_aws_iam_carries_the_principal() -> None:
    auth = _reader().read(
        {HTTP_AUTH_VARIABLE: "aws-iam", RELAY_PRINCIPAL_VARIABLE: " arn:aws:iam::1:role/r "}
    )
    assert auth.principal == "arn:aws:iam::1:role/r"
    assert _reader().read({HTTP_AUTH_VARIABLE: "aws-iam"}).principal is None


def test_the_stored_secret_wins_is_cached_and_read_again_after_its_ttl() -> None:
    store, clock = Store(**{"relay/hmac": " stored \n", "relay/new": "rotated"}), Clock()
    reader = _reader(store, clock)
    environ = {HMAC_SECRET_ID_VARIABLE: "relay/hmac", HMAC_SECRET_VARIABLE: "plain"}
    assert reader.read(environ).hmac_secret == b"stored"
    clock.now += SECRET_TTL_SECONDS - 1
    assert reader.read(environ).hmac_secret == b"stored" and store.reads == ["relay/hmac"]
    store.values["relay/hmac"] = "changed"
    clock.now += 1
    assert reader.read(environ).hmac_secret == b"changed" and len(store.reads) == 2
    assert reader.read({HMAC_SECRET_ID_VARIABLE: "relay/new"}).hmac_secret == b"rotated"


def test_a_store_that_fails_or_holds_nothing_is_unavailable_and_asked_again() -> None:
    store = Store(**{"relay/hmac": "value-never-shown", "relay/empty": "  "})
    store.failing = True
    reader = _reader(store)
    environ = {HMAC_SECRET_ID_VARIABLE: "relay/hmac"}
    with pytest.raises(RelayAuthUnavailable, match="relay/hmac") as raised:
        reader.read(environ)
    assert "value-never-shown" not in str(raised.value)
    store.failing = False
    assert reader.read(environ).hmac_secret == b"value-never-shown" and len(store.reads) == 2
    with pytest.raises(RelayAuthUnavailable, match="empty"):
        reader.read({HMAC_SECRET_ID_VARIABLE: "relay/empty"})
