"""Function Compute as `s deploy` left gpupool, for the ACK walk (tests/e2e/test_install_guides.py):
the relay's deliveries go through what FC and the functions check, with what the guide made (the
tool doubles' state: doubles_alibaba.py).

Rules, in the order a delivery meets them:
- FC's gateway for an HTTP trigger with `authType: function` (FC 3.0, "Configure signature
  authentication for HTTP triggers"): the AccessKey the ACS3 `Authorization` names must be one RAM
  issued (`ram` in the state) and the signature must be that key's (`relay_receiver.fc_problem`,
  which recomputes it with the Alibaba Cloud SDK and then checks the body against the signed
  `x-acs-content-sha256`, as the function does); then the key's RAM user must hold a policy that
  allows `fc:InvokeFunction` on `acs:fc:<region>:<account>:functions/gpupool-<name>-relay` (the
  relay-facing, HTTP-only function whose trigger the delivery's path names). A refusal is a 403
  and no function runs.
- The function: the real handler of functions/<name>/index.py, with the environment s.yaml gave
  gpupool-<name>-relay (GPUPOOL_HTTP_ONLY=true among it)
  (as `s deploy` resolved it) plus the endpoints of the two doubles below and the role's
  credentials; its answer (status and body) goes back to the relay.
- KMS: `KmsEndpoint` of tests/contract/secrets (GetSecretValue as the real SDK client calls it),
  serving the secrets the guide created, only to a caller whose RAM policy — the functions' role,
  as deployed — allows `kms:GetSecretValue` on the secret and `kms:Decrypt` on the key that
  encrypts it (KMS GetSecretValue: a secret protected by a key you created needs Decrypt on it).
- ECS: the sandbox's endpoint (`gpupool.sandbox.ecs_server.EcsEndpoint`), holding no instance.

Simpler than FC: only the functions named in `run` execute (the walk's node.joined goes to bind);
a delivery to another function is acknowledged once the gateway has accepted it. RAM policies are
evaluated for Allow statements without conditions (those the guide and s.yaml use for these
actions); one pair of credentials stands in for the role's STS credentials.

Must not: reach a network beyond 127.0.0.1.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from doubles_base import ROOT

from gpupool.core.intake import acs3
from gpupool.testing.relay_receiver import Received, RelayReceiver, fc_problem
from tests.contract.secrets.test_secret_stores import KEY_ID, KEY_SECRET, KmsEndpoint

__all__ = ["FunctionCompute", "function_compute", "ram_allows"]

ROLE_KEYS = (KEY_ID, KEY_SECRET)  # the functions' role, as the KMS double knows it


def ram_allows(statements: list[dict[str, Any]], action: str, resource: str) -> bool:
    """Whether an Allow statement without conditions grants `action` on `resource` (`*` in a
    Resource pattern matches any run of characters, as RAM's wildcards do)."""
    for statement in statements:
        if statement.get("Effect") != "Allow" or statement.get("Condition"):
            continue
        actions = statement.get("Action") or []
        patterns = statement.get("Resource") or []
        actions = [actions] if isinstance(actions, str) else actions
        patterns = [patterns] if isinstance(patterns, str) else patterns
        if action in actions and any(fnmatch.fnmatchcase(resource, p) for p in patterns):
            return True
    return False


class _Kms(KmsEndpoint):
    """KmsEndpoint with RAM in front: the caller is the functions' role (ROLE_KEYS)."""

    def __init__(self, kms: dict[str, Any], role: list[dict[str, Any]], region: str, account: str) -> None:
        super().__init__({name: (s["data"], "text") for name, s in kms.get("secrets", {}).items()})
        self.keys_of = {name: s["key"] for name, s in kms.get("secrets", {}).items()}
        self.role, self.arn = role, f"acs:kms:{region}:{account}"

    def answer(self, action: str, version: str, authorization: str, query: dict[str, str]) -> tuple[int, Any]:
        name = query.get("SecretName", "")
        needed = [("kms:GetSecretValue", f"{self.arn}:secret/{name}")]
        if name in self.keys_of:
            needed.append(("kms:Decrypt", f"{self.arn}:key/{self.keys_of[name]}"))
        for wanted, resource in needed:
            if not ram_allows(self.role, wanted, resource):
                body = {
                    "Code": "Forbidden.NoPermission",
                    "Message": f"the role may not {wanted} on {resource}",
                }
                return 403, {"RequestId": "kms-local", **body}
        return super().answer(action, version, authorization, query)


def _fc_event(path: str, headers: dict[str, str], body: bytes) -> bytes:
    """The event FC 3.0 hands a Python handler for an HTTP-trigger request (events/alibaba/fc-http-*)."""
    event = {
        "version": "v1",
        "rawPath": path,
        "body": body.decode(),
        "isBase64Encoded": False,
        "headers": headers,
        "queryParameters": {},
        "requestContext": {"http": {"method": "POST", "path": path}, "requestId": f"walk-{time.time_ns()}"},
    }
    return json.dumps(event).encode()


def _handler(function: str, environ: dict[str, str]) -> Callable[[bytes, Any], dict[str, Any]]:
    from gpupool.adapters.alibaba.wiring import build_alibaba_deps

    spec = importlib.util.spec_from_file_location(
        f"walk_fc_{function}_index", ROOT / "functions" / function / "index.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Callable[[bytes, Any], dict[str, Any]] = module.make_handler(
        lambda: build_alibaba_deps(environ), environ=environ
    )
    return handler


class FunctionCompute(RelayReceiver):
    """The relay's receiver: FC's gateway, then the functions (rules: the module docstring)."""

    def __init__(
        self, state: Callable[[], dict[str, Any]], environ: dict[str, dict[str, str]], run: set[str]
    ):
        super().__init__(auth="fc")
        self.state, self.environ, self.run = state, environ, run
        self.handlers: dict[str, Callable[[bytes, Any], dict[str, Any]]] = {}
        self.function_answers: list[tuple[str, str, int, str]] = []  # (function, event type, status, body)
        self._invoke = threading.Lock()

    def _gateway_problem(self, function: str, url: str, headers: dict[str, str], body: bytes) -> str | None:
        state = self.state()
        given = acs3.parse_authorization({k.lower(): v for k, v in headers.items()}.get("authorization", ""))
        if given is None:
            return "an ACS3-HMAC-SHA256 authorization (Credential, SignedHeaders, Signature) is required"
        owner = [
            (name, user)
            for name, user in state.get("ram", {}).get("users", {}).items()
            if given.credential in user["keys"]
        ]
        if not owner:
            return f"InvalidAccessKeyId.NotFound: RAM issued no AccessKey {given.credential}"
        ((user_name, user),) = owner
        problem = fc_problem(
            url=url, headers=headers, body=body, keys=(given.credential, user["keys"][given.credential])
        )
        if problem is not None:
            return problem
        deployed = state["s_deployed"]
        arn = f"acs:fc:{deployed['region']}:{deployed['account']}:functions/gpupool-{function}-relay"
        statements = [s for p in user["policies"] for s in state["ram"]["policies"][p]["Statement"]]
        if not ram_allows(statements, "fc:InvokeFunction", arn):
            return f"AccessDenied: the RAM user {user_name} may not fc:InvokeFunction on {arn}"
        return None

    def handle(self, path: str, url: str, headers: dict[str, str], body: bytes) -> int:
        function = path.strip("/")
        problem = self._gateway_problem(function, url, headers, body)
        if problem is not None:
            with self._lock:
                self.refused.append(problem)
            return 403
        status, answer = 200, "acknowledged by the gateway (the walk runs no such function)"
        if function in self.run:
            with self._invoke:
                if function not in self.handlers:
                    self.handlers[function] = _handler(function, self.environ[f"{function}-relay"])
                response = self.handlers[function](_fc_event(path, headers, body), None)
            status, answer = int(response["statusCode"]), str(response["body"])
        with self._lock:
            self.answered[status] = self.answered.get(status, 0) + 1
            event = json.loads(body)
            self.function_answers.append((function, str(event.get("type", "")), status, answer))
            if status < 300:
                self.received.append(Received(path, event, time.monotonic()))
        return status

    def failures(self) -> list[tuple[str, str, int, str]]:
        with self._lock:
            return [answer for answer in self.function_answers if answer[2] >= 300]


@contextmanager
def function_compute(state: Callable[[], dict[str, Any]], *, run: set[str]) -> Iterator[FunctionCompute]:
    """FC, its KMS and ECS as the guide left them; the functions' environment as deployed."""
    from gpupool.sandbox.ecs_server import EcsEndpoint

    deployed = state()["s_deployed"]
    with (
        _Kms(
            state().get("kms", {}), deployed["role_statements"], deployed["region"], deployed["account"]
        ) as kms,
        EcsEndpoint(access_key_id=KEY_ID) as ecs,
    ):
        environ = {
            name.removeprefix("gpupool-"): {
                **environment,
                "GPUPOOL_KMS_ENDPOINT": kms.url,
                "GPUPOOL_ECS_ENDPOINT": ecs.url,
                "ALIBABA_CLOUD_ACCESS_KEY_ID": ROLE_KEYS[0],
                "ALIBABA_CLOUD_ACCESS_KEY_SECRET": ROLE_KEYS[1],
            }
            for name, environment in deployed["functions"].items()
        }
        with FunctionCompute(state, environ, run) as receiver:
            yield receiver
