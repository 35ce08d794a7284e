"""The relay's FC signature is the one Function Compute 3.0 checks, and it covers the body.

FC 3.0 signs HTTP triggers with ACS3-HMAC-SHA256 (the Alibaba Cloud SDK's V3 mechanism); the
relay signs with `gpupool.core.intake.acs3`, and the receiver (`gpupool.testing.relay_receiver`,
playing FC's gateway and the function behind it) recomputes the signature with the Alibaba Cloud
SDK's own `get_authorization`, as FC's published client examples call it. Covers: the relay's
request carries `x-acs-date`, a fresh `x-acs-signature-nonce` and the body's
`x-acs-content-sha256`, all signed with host and content-type; the receiver accepts it and
refuses, with 403, another body under the same headers (issue 22: "two bodies, one Authorization
header"), a content hash changed after signing, another path or query, a changed or stale date,
another AccessKey or secret, a changed nonce, and the FC 2.0 `Authorization: FC ak:sig` the relay
sent before; a request signed exactly as FC's documentation example does (empty payload hash, no
content header) passes the gateway but not the function, which needs the body's hash.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import httpx

from gpupool.core.intake import acs3
from gpupool.testing.relay_receiver import RelayReceiver
from gpupool_incluster.relay.signing import alibaba_keys_from_files, fc_signer, make_signer

BODY = b'{"specversion":"1.0","id":"relay-0007","type":"ai.tensor-fusion.gpupool.pool.manual-compaction"}'
KEYS = ("LTAI-example", "fc-secret")
CONTENT_TYPE = {"content-type": "application/cloudevents+json"}


def _post(receiver: RelayReceiver, headers: dict[str, str], body: bytes, path: str = "/compact") -> int:
    return httpx.post(receiver.url(path), content=body, headers=headers).status_code


def _keys(tmp_path: Path) -> Path:
    (tmp_path / "ak").write_text(KEYS[0])
    (tmp_path / "sk").write_text(KEYS[1])
    return tmp_path


def test_the_fc_signature_is_acs3_and_names_the_body_through_its_signed_content_sha256(
    tmp_path: Path,
) -> None:
    signer = make_signer("fc", fc_credentials_dir=_keys(tmp_path))
    with RelayReceiver(auth="fc", fc_keys=KEYS) as receiver:
        signed = signer(receiver.url("/compact"), BODY, CONTENT_TYPE)
        assert signed[acs3.CONTENT_SHA256_HEADER] == acs3.content_sha256(BODY)
        given = acs3.parse_authorization(signed["authorization"])
        assert given is not None and given.credential == KEYS[0]
        assert given.signed_headers == (
            "content-type",
            "host",
            "x-acs-content-sha256",
            "x-acs-date",
            "x-acs-signature-nonce",
        )
        assert abs((acs3.parse_acs_date(signed[acs3.DATE_HEADER]) or 0) - time.time()) < 5
        assert _post(receiver, signed, BODY) == 200
        swapped = BODY.replace(b"relay-0007", b"relay-9999")  # same length, another event
        assert _post(receiver, signed, swapped) == 403
        rehashed = signed | {acs3.CONTENT_SHA256_HEADER: acs3.content_sha256(swapped)}
        assert _post(receiver, rehashed, swapped) == 403
        assert len(receiver.received) == 1
        assert receiver.refused == [
            "x-acs-content-sha256 does not match the body",
            "ACS3 signature does not match",
        ]
        again = signer(receiver.url("/compact"), BODY, CONTENT_TYPE)
        assert again[acs3.NONCE_HEADER] != signed[acs3.NONCE_HEADER]  # a fresh nonce per delivery


def test_a_tampered_path_query_date_nonce_or_another_key_is_refused(tmp_path: Path) -> None:
    now = time.time()
    keys = alibaba_keys_from_files(_keys(tmp_path))
    signer = fc_signer(keys, clock=lambda: now)
    with RelayReceiver(auth="fc", fc_keys=KEYS) as receiver:
        signed = signer(receiver.url("/bind"), BODY, CONTENT_TYPE)
        assert _post(receiver, signed, BODY, "/bind") == 200
        later = acs3.acs_date(now + 1)
        cases = {
            "another path": (signed, "/launch", "does not match"),
            "a query added": (signed, "/bind?pool=other", "does not match"),
            "the date changed": (signed | {acs3.DATE_HEADER: later}, "/bind", "does not match"),
            "the nonce changed": (signed | {acs3.NONCE_HEADER: "0" * 32}, "/bind", "does not match"),
            "the content type changed": (signed | {"content-type": "text/plain"}, "/bind", "does not match"),
        }
        for case, (headers, path, reason) in cases.items():
            assert _post(receiver, headers, BODY, path) == 403, case
            assert reason in receiver.refused[-1], case
        stale = fc_signer(keys, clock=lambda: now - 16 * 60)(receiver.url("/bind"), BODY, CONTENT_TYPE)
        assert _post(receiver, stale, BODY, "/bind") == 403 and "15 minutes" in receiver.refused[-1]
        unparsable = signed | {acs3.DATE_HEADER: "Thu, 26 Oct 2023 10:22:32 GMT"}
        assert _post(receiver, unparsable, BODY, "/bind") == 403 and "yyyy-MM-dd" in receiver.refused[-1]
    with RelayReceiver(auth="fc", fc_keys=("LTAI-other", KEYS[1])) as other_id:
        assert _post(other_id, signer(other_id.url("/bind"), BODY, CONTENT_TYPE), BODY, "/bind") == 403
        assert other_id.refused == ["signed with another AccessKey"]
    with RelayReceiver(auth="fc", fc_keys=(KEYS[0], "another-secret")) as other_secret:
        assert (
            _post(other_secret, signer(other_secret.url("/bind"), BODY, CONTENT_TYPE), BODY, "/bind") == 403
        )
        assert other_secret.refused == ["ACS3 signature does not match"]
    assert len(receiver.received) == 1


def test_a_request_signed_as_fcs_documentation_example_passes_the_gateway_but_not_the_function() -> None:
    """FC's Python example: x-acs-date and x-acs-security-token, `get_authorization(req,
    'ACS3-HMAC-SHA256', '', ak, sk)` — no hash of the body, which the function then refuses."""
    from alibabacloud_tea_openapi.utils import Utils

    with RelayReceiver(auth="fc", fc_keys=KEYS) as receiver:
        headers = {acs3.DATE_HEADER: acs3.acs_date(time.time()), acs3.SECURITY_TOKEN_HEADER: ""}
        request = SimpleNamespace(method="POST", pathname="/compact", headers=headers, query={})
        headers["authorization"] = Utils.get_authorization(request, acs3.ALGORITHM, "", *KEYS)
        assert _post(receiver, headers, BODY) == 403
        assert receiver.refused == [
            "x-acs-content-sha256 is required: the FC signature covers the body only through it"
        ]


def test_the_fc_2_0_signature_the_relay_sent_before_is_refused() -> None:
    with RelayReceiver(auth="fc", fc_keys=KEYS) as receiver:
        headers = CONTENT_TYPE | {
            "date": "Thu, 26 Oct 2023 10:22:32 GMT",
            "content-md5": "sc/d5c/HBOZdbMdjmaLiEg==",
            "authorization": f"FC {KEYS[0]}:rvnQ7UtHSjyMIwo7kirUqAJZdPE=",
        }
        assert _post(receiver, headers, BODY) == 403 and receiver.received == []
        assert "ACS3-HMAC-SHA256 authorization" in receiver.refused[0]
