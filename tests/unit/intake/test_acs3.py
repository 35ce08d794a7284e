"""Alibaba Cloud's V3 signature, ACS3-HMAC-SHA256 (`gpupool.core.intake.acs3`), rule by rule.

Covers: the published example of "Request syntax and signature method V3" (its canonical
request, hashed canonical request and signature, reproduced byte for byte); each
canonicalisation rule (path segments and query RFC 3986-encoded, query sorted, a parameter
without a value, header names lowercased and values trimmed, only host / content-type / x-acs-*
signed); agreement with the Alibaba Cloud SDK's own `get_authorization` (alibabacloud_tea_openapi)
on requests built as FC's published examples build them; `x-acs-date` both ways; the
Authorization header read back, and refused when it is not ACS3; and `payload_problem`, the
function's check that the body is the one `x-acs-content-sha256` names.
"""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest

from gpupool.core.intake import acs3
from gpupool.core.intake.envelope import HttpRequest

# The published example's fixed inputs and answers (V3 signature mechanism, "Signature method").
EXAMPLE_HEADERS = {
    "host": "ecs.cn-shanghai.aliyuncs.com",
    "x-acs-action": "RunInstances",
    "x-acs-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "x-acs-date": "2023-10-26T10:22:32Z",
    "x-acs-signature-nonce": "3156853299f313e23d1673dc12e1703d",
    "x-acs-version": "2014-05-26",
}
EXAMPLE_QUERY = "ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai"
EXAMPLE_CANONICAL = (
    "POST\n/\n"
    "ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai\n"
    "host:ecs.cn-shanghai.aliyuncs.com\n"
    "x-acs-action:RunInstances\n"
    "x-acs-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
    "x-acs-date:2023-10-26T10:22:32Z\n"
    "x-acs-signature-nonce:3156853299f313e23d1673dc12e1703d\n"
    "x-acs-version:2014-05-26\n"
    "\n"
    "host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version\n"
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)
EXAMPLE_HASHED = "7ea06492da5221eba5297e897ce16e55f964061054b7695beedaac1145b1e259"
EXAMPLE_AUTHORIZATION = (
    "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,"
    "SignedHeaders=host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,"
    "Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0"
)


def _sign(path: str = "/", query: str = "", **headers: str) -> str:
    return acs3.authorization(
        method="POST", path=path, query=query, headers=headers, key_id="LTAI-k", secret="s3cret"
    )


def test_the_published_example_is_reproduced_byte_for_byte() -> None:
    signed = acs3.signed_header_names(EXAMPLE_HEADERS)
    canonical = acs3.canonical_request(
        method="POST", path="/", query=EXAMPLE_QUERY, headers=EXAMPLE_HEADERS, signed=signed
    )
    assert canonical == EXAMPLE_CANONICAL
    assert hashlib.sha256(canonical.encode()).hexdigest() == EXAMPLE_HASHED
    authorization = acs3.authorization(
        method="POST",
        path="",
        query=EXAMPLE_QUERY,
        headers=EXAMPLE_HEADERS,
        key_id="YourAccessKeyId",
        secret="YourAccessKeySecret",
    )
    assert authorization == EXAMPLE_AUTHORIZATION
    assert acs3.content_sha256(b"") == EXAMPLE_HEADERS["x-acs-content-sha256"]


@pytest.mark.parametrize(
    ("path", "canonical"),
    [
        ("", "/"),
        ("/", "/"),
        ("/hello", "/hello"),
        ("/a b/c*d", "/a%20b/c%2Ad"),
        ("/a%20b", "/a%20b"),  # already encoded: the same
        ("/x$y~z_-.", "/x%24y~z_-."),
        ("/caf\u00e9", "/caf%C3%A9"),
        ("/a%2Fb", "/a%2Fb"),  # an encoded slash stays inside its segment
    ],
)
def test_the_path_is_encoded_segment_by_segment_per_rfc_3986(path: str, canonical: str) -> None:
    request = acs3.canonical_request(method="post", path=path, query="", headers={}, signed=())
    assert request.split("\n")[:2] == ["POST", canonical]


def test_the_query_is_sorted_encoded_and_keeps_parameters_without_a_value() -> None:
    request = acs3.canonical_request(
        method="POST", path="/", query="z=1&a=x y&m&b=%2A~&a=0", headers={}, signed=()
    )
    assert request.split("\n")[2] == "a=0&a=x%20y&b=%2A~&m=&z=1"


def test_headers_are_lowercased_trimmed_and_only_host_content_type_and_x_acs_are_signed() -> None:
    headers = {"Host": "f.fcapp.run", "Content-Type": " application/json ", "X-Acs-Date": "d", "Date": "x",
               "User-Agent": "u", "x-fc-trace": "t"}  # fmt: skip
    assert acs3.signed_header_names(headers) == ("content-type", "host", "x-acs-date")
    request = acs3.canonical_request(
        method="POST", path="/", query="", headers=headers, signed=acs3.signed_header_names(headers)
    )
    assert "content-type:application/json\nhost:f.fcapp.run\nx-acs-date:d\n" in request
    assert "user-agent" not in request and "x-fc-trace" not in request


@pytest.mark.parametrize(
    ("path", "query", "headers"),
    [
        ("/", "", {"x-acs-date": "2024-02-22T09:21:31Z", "x-acs-security-token": ""}),
        ("/hello", "foo=bar", {"x-acs-date": "2024-02-22T09:21:31Z", "x-acs-security-token": "STS.tok"}),
        (
            "/launch",
            "b=2&a=1",
            {
                "host": "gpupool-launch.cn-hangzhou.fcapp.run",
                "content-type": "application/cloudevents+json; charset=utf-8",
                "x-acs-date": "2026-11-29T16:00:00Z",
                "x-acs-signature-nonce": "0123456789abcdef0123456789abcdef",
                "x-acs-content-sha256": acs3.content_sha256(b'{"id":"e1"}'),
            },
        ),
    ],
)
def test_the_sdks_own_signer_agrees(path: str, query: str, headers: dict[str, str]) -> None:
    """FC's published Python example signs with alibabacloud's `get_authorization` this way."""
    from urllib.parse import parse_qsl

    from alibabacloud_tea_openapi.utils import Utils

    request = SimpleNamespace(method="POST", pathname=path, query=dict(parse_qsl(query)), headers=headers)
    payload = headers.get("x-acs-content-sha256", "")
    expected = Utils.get_authorization(request, acs3.ALGORITHM, payload, "LTAI-k", "s3cret")
    assert _sign(path, query, **headers) == expected


def test_the_signature_changes_with_every_signed_part() -> None:
    base = {"host": "h", "x-acs-date": "2026-11-29T16:00:00Z", "x-acs-content-sha256": "a" * 64}
    reference = _sign("/bind", "", **base)
    variants = [
        _sign("/launch", "", **base),
        _sign("/bind", "x=1", **base),
        _sign("/bind", "", **(base | {"x-acs-date": "2026-11-29T16:00:01Z"})),
        _sign("/bind", "", **(base | {"x-acs-content-sha256": "b" * 64})),
        _sign("/bind", "", **(base | {"host": "other"})),
        _sign("/bind", "", **(base | {"x-acs-security-token": "t"})),
    ]
    assert len({reference, *variants}) == len(variants) + 1
    assert _sign("/bind", "", **(base | {"user-agent": "x"})) == reference  # not a signed header
    with pytest.raises(ValueError, match="AccessKey id and secret"):
        acs3.authorization(method="POST", path="/", query="", headers=base, key_id="", secret="s")


def test_x_acs_date_is_iso_8601_utc_to_the_second_and_read_back() -> None:
    assert acs3.acs_date(1698315752.9) == "2023-10-26T10:22:32Z"
    assert acs3.parse_acs_date("2023-10-26T10:22:32Z") == 1698315752
    for bad in (
        "2023-10-26T10:22:32",
        "2023-10-26 10:22:32Z",
        "Thu, 26 Oct 2023 10:22:32 GMT",
        "2023-13-26T10:22:32Z",
        "",
    ):
        assert acs3.parse_acs_date(bad) is None, bad


def test_the_authorization_header_is_read_back_and_anything_else_is_not_acs3() -> None:
    parsed = acs3.parse_authorization(EXAMPLE_AUTHORIZATION)
    assert parsed is not None and parsed.credential == "YourAccessKeyId"
    assert parsed.signed_headers[0] == "host" and len(parsed.signed_headers) == 6
    assert parsed.signature.startswith("06563a9e")
    for bad in (
        "FC LTAI-k:c2lnbmF0dXJl",  # the FC 2.0 scheme
        "ACS3-HMAC-SHA256 Credential=k,SignedHeaders=host",  # no signature
        "ACS3-HMAC-SHA256 Credential=k,SignedHeaders=host,Signature=" + "0" * 63,  # too short
        "ACS3-HMAC-SHA256 Credential=k,SignedHeaders=host,Signature=" + "G" * 64,  # not hex
        "acs3-hmac-sha256 " + EXAMPLE_AUTHORIZATION.split(" ", 1)[1],
        "",
    ):
        assert acs3.parse_authorization(bad) is None, bad


def test_content_sha256_names_exactly_the_body_it_was_made_for() -> None:
    body = b'{"specversion":"1.0","id":"x"}'
    request = HttpRequest(
        method="POST", headers={"X-Acs-Content-Sha256": acs3.content_sha256(body)}, body=body
    )
    assert acs3.payload_problem(request) is None
    digest = acs3.content_sha256(body)
    for headers, sent, reason in (
        ({}, body, "required"),
        ({"x-acs-content-sha256": digest}, body + b" ", "does not match"),
        ({"x-acs-content-sha256": digest[:-2]}, body, "does not match"),
        ({"x-acs-content-sha256": digest.upper()}, body, "does not match"),
        ({"x-acs-content-sha256": "\u00e9" + digest}, body, "does not match"),
        ({"x-acs-content-sha256": digest}, None, "cannot be read"),
    ):
        problem = acs3.payload_problem(HttpRequest(method="POST", headers=headers, body=sent))
        assert problem is not None and reason in problem
