"""Which HTTP callers a function trusts (`gpupool.core.intake.caller`): every mode and every refusal.

Covers: nothing configured, a misconfiguration and an empty secret refuse every request; `hmac`
accepts exactly a valid signature; `aws-iam` accepts only a session of the relay's role (same
partition, account and role name; a role's path is not in its session ARN) or the exact IAM
user, and refuses a request the platform authenticated no caller for; `fc-signature` accepts only
a body its x-acs-content-sha256 names; a RelayAuth's repr never shows its secret.
"""

from __future__ import annotations

import pytest

from gpupool.core.intake.acs3 import content_sha256
from gpupool.core.intake.caller import AUTH_MODES, RelayAuth, principal_matches, request_problem
from gpupool.core.intake.envelope import HttpRequest
from gpupool.core.intake.signature import sign_body

NOW = 1_800_000_000
BODY = b'{"specversion":"1.0","id":"e1"}'
ROLE = "arn:aws:iam::123456789012:role/gpupool-relay"
SESSION = "arn:aws:sts::123456789012:assumed-role/gpupool-relay/pod-1"


def _request(
    headers: dict[str, str] | None = None, *, caller: str | None = None, body: bytes = BODY
) -> HttpRequest:
    return HttpRequest(method="POST", headers=headers or {}, body=body, caller=caller)


def test_the_modes_are_the_three_documented_ones() -> None:
    assert AUTH_MODES == ("hmac", "aws-iam", "fc-signature")


@pytest.mark.parametrize(
    "auth",
    [
        RelayAuth(mode=None),
        RelayAuth.refusing("GPUPOOL_HTTP_AUTH='x' is not one of hmac, aws-iam, fc-signature"),
        RelayAuth(mode="hmac"),
        RelayAuth(mode="aws-iam"),
    ],
    ids=["nothing", "misconfigured", "hmac without a secret", "no principal"],
)
def test_a_deployment_that_configured_no_usable_check_refuses_every_request(auth: RelayAuth) -> None:
    signed = sign_body(b"any", BODY, timestamp=NOW)
    for request in (_request(), _request(signed), _request(caller=SESSION), _request({"content-md5": "x"})):
        assert request_problem(auth, request, now=NOW) is not None


def test_hmac_accepts_exactly_a_valid_signature() -> None:
    auth = RelayAuth(mode="hmac", hmac_secret=b"s3cret")
    assert request_problem(auth, _request(sign_body(b"s3cret", BODY, timestamp=NOW)), now=NOW) is None
    assert request_problem(auth, _request(sign_body(b"other", BODY, timestamp=NOW)), now=NOW) is not None
    # A platform's caller is no substitute for the signature in hmac mode.
    assert request_problem(auth, _request(caller=SESSION), now=NOW) is not None


@pytest.mark.parametrize(
    ("principal", "caller", "matches"),
    [
        (ROLE, SESSION, True),
        (ROLE, "arn:aws:sts::123456789012:assumed-role/gpupool-relay/other-session", True),
        ("arn:aws:iam::123456789012:role/team/ops/gpupool-relay", SESSION, True),  # path not in session ARNs
        (ROLE, "arn:aws:sts::123456789012:assumed-role/gpupool-relay-2/pod-1", False),
        (ROLE, "arn:aws:sts::999999999999:assumed-role/gpupool-relay/pod-1", False),
        (ROLE, "arn:aws-cn:sts::123456789012:assumed-role/gpupool-relay/pod-1", False),
        (ROLE, "arn:aws:iam::123456789012:user/gpupool-relay", False),
        (ROLE, "arn:aws:sts::123456789012:assumed-role/gpupool-relay", False),  # no session
        ("arn:aws:iam::123456789012:user/relay", "arn:aws:iam::123456789012:user/relay", True),
        ("arn:aws:iam::123456789012:user/relay", "arn:aws:iam::123456789012:user/relay2", False),
        ("", SESSION, False),
        (ROLE, "", False),
    ],
)
def test_a_principal_matches_its_own_sessions_only(principal: str, caller: str, matches: bool) -> None:
    assert principal_matches(principal, caller) is matches


def test_aws_iam_needs_the_platforms_caller_and_it_must_be_the_relay() -> None:
    auth = RelayAuth(mode="aws-iam", principal=ROLE)
    assert request_problem(auth, _request(caller=SESSION), now=NOW) is None
    problem = request_problem(auth, _request(), now=NOW)
    assert problem is not None and "no IAM authorizer" in problem
    problem = request_problem(
        auth, _request(caller="arn:aws:sts::123456789012:assumed-role/admin/x"), now=NOW
    )
    assert problem is not None and "not the relay" in problem


def test_fc_signature_accepts_only_the_body_its_content_sha256_names() -> None:
    auth = RelayAuth(mode="fc-signature")
    assert request_problem(auth, _request({"X-Acs-Content-Sha256": content_sha256(BODY)}), now=NOW) is None
    for request in (
        _request(),
        _request({"X-Acs-Content-Sha256": content_sha256(BODY)}, body=BODY + b"x"),
        _request({"X-Acs-Content-Sha256": content_sha256(b"")}),
    ):
        assert request_problem(auth, request, now=NOW) is not None


def test_the_secret_never_shows_in_a_repr() -> None:
    assert "s3cret" not in repr(RelayAuth(mode="hmac", hmac_secret=b"s3cret"))
