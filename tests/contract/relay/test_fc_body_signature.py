"""The relay's FC signature covers the body: the signer (`relay/signing.fc_signer`) and the receiver.

Function Compute's HTTP-trigger signature covers Content-MD5 but not the body (the signature
fields are FC's published string-to-sign: method, Content-MD5, Content-Type, Date, the x-fc-*
headers, the path); `fc2`'s own signer computes it. Covers: the signer sends the body's
Content-MD5 and signs it; the receiver (`gpupool.testing.relay_receiver`, playing FC's gateway and
the function behind it) accepts that request and refuses, with 403, another body under the same
headers (issue 22: "two bodies, one Authorization header"), a Content-MD5 changed after signing,
and a signature made without Content-MD5 (what the relay sent before).
"""

from __future__ import annotations

from email.utils import formatdate
from pathlib import Path

import httpx

from gpupool.core.intake.signature import content_md5
from gpupool.testing.relay_receiver import RelayReceiver
from gpupool_incluster.relay.signing import make_signer

BODY = b'{"specversion":"1.0","id":"relay-0007","type":"ai.tensor-fusion.gpupool.pool.manual-compaction"}'
KEYS = ("LTAI-example", "fc-secret")


def _post(receiver: RelayReceiver, headers: dict[str, str], body: bytes) -> int:
    return httpx.post(receiver.url("/compact"), content=body, headers=headers).status_code


def _keys(tmp_path: Path) -> Path:
    (tmp_path / "ak").write_text(KEYS[0])
    (tmp_path / "sk").write_text(KEYS[1])
    return tmp_path


def test_the_fc_signature_names_the_body_through_its_signed_content_md5(tmp_path: Path) -> None:
    signer = make_signer("fc", fc_credentials_dir=_keys(tmp_path))
    with RelayReceiver(auth="fc", fc_keys=KEYS) as receiver:
        signed = signer(receiver.url("/compact"), BODY, {"content-type": "application/cloudevents+json"})
        assert signed["content-md5"] == content_md5(BODY)
        assert _post(receiver, signed, BODY) == 200
        swapped = BODY.replace(b"relay-0007", b"relay-9999")  # same length, another event
        assert _post(receiver, signed, swapped) == 403
        assert _post(receiver, signed | {"content-md5": content_md5(swapped)}, swapped) == 403
        assert len(receiver.received) == 1
        assert receiver.refused == ["content-md5 does not match the body", "FC signature does not match"]


def test_a_signature_without_content_md5_is_refused(tmp_path: Path) -> None:
    from fc2.auth import Auth

    with RelayReceiver(auth="fc", fc_keys=KEYS) as receiver:
        headers = {"content-type": "application/cloudevents+json", "date": formatdate(usegmt=True)}
        headers["authorization"] = Auth(*KEYS).sign_request("POST", "/compact", headers)
        assert _post(receiver, headers, BODY) == 403
        assert receiver.received == [] and "content-md5 is required" in receiver.refused[0]
