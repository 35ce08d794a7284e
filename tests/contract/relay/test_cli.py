"""`gpupool relay serve` argument checks: bad input (and a flag that does not apply to the others
given) is one clear line and exit 2, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupool.cli.main import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["relay"], "usage: gpupool relay serve"),
        (["relay", "serve", "--listen", "nowhere"], "must be HOST:PORT"),
        (["relay", "serve", "--listen", "127.0.0.1:70000"], "must be HOST:PORT"),
        (["relay", "serve", "--kubeconfig", "/no/such/file", "--listen", "127.0.0.1:8443"], "no such file"),
        (["relay", "serve", "--listen", "127.0.0.1:8443", "--tls-cert", "c.pem"], "go together"),
        (["relay", "serve", "--listen", "127.0.0.1:8443", "--vram-weight", "0.9"], "must equal 1"),
        (
            ["relay", "serve", "--extender-listen", "loopback"],
            "--extender-listen 'loopback' must be HOST:PORT",
        ),
        (["relay", "serve", "--metrics-listen", ":0"], "--metrics-listen ':0' must be HOST:PORT"),
        (["relay", "serve", "--forward", "scale=https://x/"], "FUNCTION one of launch, bind, compact"),
        (["relay", "serve", "--forward", "bind"], "must be FUNCTION=URL"),
        (["relay", "serve", "--forward", "bind=ftp://x/"], "is not an http(s) URL"),
        (["relay", "serve", "--forward", "bind=https://a/", "--forward", "bind=https://b/"], "given twice"),
        (["relay", "serve", "--forward", "bind=https://a/"], "--forward needs --forward-auth"),
        (
            ["relay", "serve", "--forward", "bind=https://a/", "--forward-auth", "hmac"],
            "needs --hmac-secret-file",
        ),
        (
            [
                "relay",
                "serve",
                "--forward",
                "bind=https://a/",
                "--forward-auth",
                "hmac",
                "--hmac-secret-file",
                "/no",
            ],
            "--hmac-secret-file /no",
        ),
        (
            [
                "relay",
                "serve",
                "--forward",
                "bind=https://a/",
                "--forward-auth",
                "fc",
                "--fc-credentials-dir",
                "/no",
            ],
            "cannot read the Alibaba Cloud credential file /no/ak",
        ),
        (["relay", "serve", "--queue-limit", "0"], "--queue-limit must be at least 1"),
        # a flag that does not apply is an error, not ignored
        (["relay", "serve", "--forward-auth", "sigv4"], "--forward-auth applies to forwarded events only"),
        (
            ["relay", "serve", "--hmac-secret-file", "/s"],
            "--hmac-secret-file applies to forwarded events only",
        ),
        (
            [
                "relay",
                "serve",
                "--forward",
                "bind=https://a/",
                "--forward-auth",
                "sigv4",
                "--hmac-secret-file",
                "/s",
            ],
            "--hmac-secret-file applies to --forward-auth hmac only, not sigv4",
        ),
        (
            [
                "relay",
                "serve",
                "--forward",
                "bind=https://a/",
                "--forward-auth",
                "hmac",
                "--region",
                "us-east-1",
            ],
            "--region applies to --forward-auth sigv4 only, not hmac",
        ),
        (
            [
                "relay",
                "serve",
                "--forward",
                "bind=https://a/",
                "--forward-auth",
                "none",
                "--fc-credentials-dir",
                "/d",
            ],
            "--fc-credentials-dir applies to --forward-auth fc only, not none",
        ),
    ],
)
def test_bad_arguments(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err
