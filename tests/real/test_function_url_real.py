"""The launch function's URL the Karpenter benchmark gives the relay (`functions_world.function_url`):
a delivery signed as the relay signs it (`--forward-auth hmac`) reaches the deployed launch
handler in Lambda's Function URL shape and is acted on; one without the signature, or signed
with another secret, is refused by the handler itself; the same delivery again is acknowledged
and not acted on.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from typing import Any

from gpupool.core.vocabulary.events import POOL_CHANGED
from gpupool.sandbox.cluster.controlplane import ControlPlane
from gpupool.sandbox.moto_ec2 import MotoEC2
from gpupool_incluster.relay.delivery import CONTENT_TYPE
from gpupool_incluster.relay.signing import hmac_signer
from tests.real.functions_world import FunctionsWorld, function_url

SECRET = b"function-url-secret"


class SignedWorld(FunctionsWorld):
    @property
    def env(self) -> dict[str, str]:
        return {**super().env, "GPUPOOL_HTTP_AUTH": "hmac", "GPUPOOL_RELAY_HMAC_SECRET": SECRET.decode()}


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status), json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return int(error.code), json.loads(error.read() or b"{}")


def test_the_relays_signed_delivery_reaches_launch_and_nothing_else_does(control_plane: ControlPlane) -> None:
    event = {
        "specversion": "1.0",
        "id": f"furl-{uuid.uuid4().hex[:12]}",
        "source": "/gpupool/relay/function-url",
        "type": POOL_CHANGED.type,
        "datacontenttype": "application/json",
        "data": {"pool": "function-url-none"},
    }
    body = json.dumps(event).encode()
    with (
        MotoEC2() as moto,
        function_url(
            SignedWorld(control_plane, moto.url, "function-url"), "launch", lock=threading.Lock()
        ) as url,
    ):
        signed = hmac_signer(SECRET)(url, body, {"content-type": CONTENT_TYPE})
        forged = hmac_signer(b"another-secret")(url, body, {"content-type": CONTENT_TYPE})

        unsigned_status, unsigned = _post(url, body, {"content-type": CONTENT_TYPE})
        forged_status, refused = _post(url, body, forged)
        first_status, first = _post(url, body, signed)
        again_status, again = _post(url, body, signed)

    assert (unsigned_status, unsigned.get("status")) == (401, "refused"), unsigned
    assert (forged_status, refused.get("status")) == (401, "refused"), refused
    assert (first_status, first.get("status")) == (200, "handled"), first
    assert (again_status, again.get("status")) == (200, "duplicate"), again
