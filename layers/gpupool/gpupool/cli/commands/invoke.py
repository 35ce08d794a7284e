"""`gpupool invoke FUNCTION EVENT_FILE [--cloud aws|alibaba] [--env D/env] [--dry-run] [--json]`.

Role: run a function's real handler — Lambda's `functions/<FUNCTION>/app.py`, or with
`--cloud alibaba` Function Compute's `functions/<FUNCTION>/index.py`, given the event as bytes
as FC gives it — in this process on one event file, against the endpoints of an env file
written by `gpupool sandbox up` (or the process environment), and print the plan and what was
applied. The handler gets its deps through its own `make_handler(deps_factory, dry_run=...)`
seam, built by the same wiring a deployed function uses (`gpupool.adapters.aws.wiring.build_aws_deps`,
`gpupool.adapters.alibaba.wiring.build_alibaba_deps`). `--json` prints exactly
`{"plan": {"actions": [...], "reasons": [...]}, "applied": [...], "errors": [...]}`.

Where the handlers are found (first match): `--functions-dir DIR`, `$GPUPOOL_FUNCTIONS_DIR`,
the source tree the package is installed from (`<repo>/functions`, for `pip install -e .`),
then `./functions`.

Exit: 0 when the event was handled, deliberately ignored, or a replayed relay delivery
acknowledged without acting (`duplicate`); 1 when the invocation failed or the function refused
the call (the errors are printed); 2 for bad input (unknown function, unreadable or non-JSON
event file, an event of the other cloud — one the other cloud's intake reads and this one's
ignores —, bad env file or environment), as one line, without a traceback. The relay
authentication an HTTP event is checked against comes from the same environment as the deps
(`--env` over the process environment): GPUPOOL_HTTP_AUTH and its variables. Against a sandbox
(an env file that `gpupool sandbox up` wrote), what to run first is said: `gpupool sandbox up`
when the env file is missing or nothing answers at its API server, and a fresh sandbox (or the
other `--cloud`) when it was prepared for the other cloud (`gpupool.cli.demo_sandbox`).

Must not: decide, check dry-run itself (the handler passes it to the service), or change the
process environment.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from gpupool.cli.env_file import read_env_file
from gpupool.cli.errors import UserError
from gpupool.cli.files import read_text
from gpupool.core.catalog import CLOUDS
from gpupool.core.intake.routing import FUNCTIONS

if TYPE_CHECKING:
    from gpupool.handlers.common import Handler

NAME = "invoke"
HELP = "run a function's real handler (launch, bind, compact) in-process on one event file"
FUNCTIONS_DIR_VARIABLE = "GPUPOOL_FUNCTIONS_DIR"
HANDLER_FILES = {"aws": "app.py", "alibaba": "index.py"}


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("function", metavar="FUNCTION", help=f"one of: {', '.join(FUNCTIONS)}")
    parser.add_argument(
        "event_file",
        metavar="EVENT_FILE",
        type=Path,
        help="a JSON event, e.g. events/aws/*.json (or events/alibaba/*.json with --cloud alibaba)",
    )
    parser.add_argument(
        "--cloud",
        choices=CLOUDS,
        default="aws",
        help="which handler flavour to run: aws (Lambda, app.py) or alibaba (Function Compute, index.py)",
    )
    parser.add_argument("--env", type=Path, metavar="FILE", help="KEY=VALUE file (e.g. a sandbox's D/env)")
    parser.add_argument(
        "--cluster", metavar="NAME", help="the TensorFusion cluster (sets GPUPOOL_CLUSTER_NAME)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan, apply nothing")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON only")
    parser.add_argument(
        "--functions-dir", type=Path, metavar="DIR", help="where <FUNCTION>/app.py and index.py live"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="also print the handler's logs (stderr)")


# ---- finding and loading handlers (also used by `gpupool demo`) ------------------------------
def functions_dir_candidates(explicit: Path | None = None) -> list[Path]:
    import gpupool

    candidates = [explicit] if explicit is not None else []
    if os.environ.get(FUNCTIONS_DIR_VARIABLE):
        candidates.append(Path(os.environ[FUNCTIONS_DIR_VARIABLE]))
    # layers/gpupool/gpupool/__init__.py → the repository root is three folders up.
    candidates.append(Path(gpupool.__file__).resolve().parents[3] / "functions")
    candidates.append(Path.cwd() / "functions")
    return candidates


def load_function(function: str, functions_dir: Path | None = None, *, cloud: str = "aws") -> ModuleType:
    """Import `functions/<function>/app.py` (`index.py` for alibaba) once per process and path."""
    if function not in FUNCTIONS:
        raise UserError(f"unknown function {function!r} (one of: {', '.join(FUNCTIONS)})")
    file_name = HANDLER_FILES[cloud]
    searched = functions_dir_candidates(functions_dir)
    if functions_dir is not None:
        searched = searched[:1]
    path = next((d / function / file_name for d in searched if (d / function / file_name).is_file()), None)
    if path is None:
        where = ", ".join(str(d) for d in searched)
        raise UserError(
            f"cannot find {function}/{file_name} (looked in {where}); pass --functions-dir "
            f"or set {FUNCTIONS_DIR_VARIABLE}"
        )
    module_name = f"gpupool_function_{function}_{cloud}_{abs(hash(str(path.resolve())))}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[module_name]
        raise UserError(f"{path}: import failed: {type(error).__name__}: {error}") from None
    if not callable(getattr(module, "make_handler", None)):
        raise UserError(f"{path}: has no make_handler(deps_factory, dry_run=...)")
    return module


@contextlib.contextmanager
def quiet_handler_output(*, verbose: bool) -> Iterator[None]:
    """Keep stdout for our own output: the handlers' logs (the Powertools logger "gpupool" and
    its children) go to stderr with --verbose, else nowhere; metrics lines nowhere."""
    import logging

    handlers = [
        handler
        for name in ("gpupool", "gpupool.service")
        for handler in logging.getLogger(name).handlers
        if isinstance(handler, logging.StreamHandler)
    ]
    sink = sys.stderr if verbose else open(os.devnull, "w")  # noqa: SIM115
    previous = [(handler, handler.stream) for handler in handlers]
    for handler in handlers:  # swapped, not setStream(): the old stream may be closed already
        handler.stream = sink
    try:
        with contextlib.redirect_stdout(sink):
            yield
    finally:
        for handler, stream in previous:
            handler.stream = stream
        if sink is not sys.stderr:
            sink.close()


# ---- inputs --------------------------------------------------------------------------------
def read_event(path: Path) -> dict[str, Any]:
    text = read_text(path)
    try:
        event = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(
            f"{path}: not JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    if not isinstance(event, dict):
        raise UserError(f"{path}: not an event: a JSON object is expected, not {type(event).__name__}")
    return event


# ---- running -------------------------------------------------------------------------------
class LocalContext:
    """The parts of a Lambda (or Function Compute) context object the handlers read."""

    function_name = "gpupool-invoke"
    aws_request_id = "gpupool-invoke"
    request_id = "gpupool-invoke"  # FC's name for it; no `credentials`: the env file's are used
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:gpupool-invoke"


def response_body(response: Mapping[str, Any]) -> dict[str, Any]:
    """A handler's result, unwrapped from the Function URL HTTP response when it is one."""
    if "statusCode" in response and isinstance(response.get("body"), str):
        try:
            body = json.loads(response["body"])
        except json.JSONDecodeError:
            return {"status": "failed", "errors": [f"HTTP {response['statusCode']}: {response['body']}"]}
        return body if isinstance(body, dict) else {"status": "failed", "errors": ["unexpected body"]}
    return dict(response)


def outcome_json(body: Mapping[str, Any]) -> dict[str, Any]:
    """Exactly `{"plan": {"actions", "reasons"}, "applied", "errors"}`, ignored events included."""
    plan = body.get("plan") or {}
    reasons = list(plan.get("reasons") or [])
    if body.get("status") == "ignored":
        reasons.append(f"ignored: {body.get('reason') or body.get('error') or 'unknown event'}")
    return {
        "plan": {"actions": list(plan.get("actions") or []), "reasons": reasons},
        "applied": list(body.get("applied") or []),
        "errors": list(body.get("errors") or []),
    }


def load_handler(
    module: ModuleType,
    deps_factory: Callable[[], Any],
    *,
    dry_run: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Handler:
    """The function's handler with our deps (the handlers' own injection seam); its relay
    authentication is read from `environ` (default: the process environment)."""
    extra = {} if environ is None else {"environ": environ}
    handler: Handler = module.make_handler(deps_factory, dry_run=dry_run, **extra)
    return handler


def call_handler(handler: Handler, event: Mapping[str, Any], *, as_bytes: bool = False) -> dict[str, Any]:
    """Call a handler once (with the event as JSON bytes when `as_bytes`, as Function Compute
    passes it); a retryable failure (raised for the platform to retry) comes back as status "retry"."""
    payload: Any = json.dumps(event).encode("utf-8") if as_bytes else dict(event)
    try:
        return response_body(handler(payload, LocalContext()))
    except Exception as error:  # the handler raises so Lambda retries; locally we report it
        return {"status": "retry", "errors": [f"{type(error).__name__}: {error}"]}


def print_outcome(
    function: str, body: Mapping[str, Any], outcome: Mapping[str, Any], *, dry_run: bool
) -> None:
    from gpupool.cli.report import outcome_lines

    cause = body.get("cause") or {}
    status = str(body.get("status") or "failed")
    if status == "ignored":
        print(f"{function}: event ignored")
    else:
        print(f"{function} ← {cause.get('kind') or 'event'}: {status}{' (dry run)' if dry_run else ''}")
    for line in outcome_lines(outcome, dry_run=dry_run and status == "handled"):
        print(line)
    if status == "duplicate":
        print(DUPLICATE_HINT.format(event_id=cause.get("event_id") or "its id"))


DUPLICATE_HINT = (
    "  this delivery ({event_id}) was already handled, so nothing was done again: the functions act "
    "once per relay event id (recorded as a Lease labelled gpupool.tensor-fusion.ai/record=delivery); "
    "to act again, send the event with a new `id`"
)


_CLOUD_NAMES = {"aws": "AWS", "alibaba": "Alibaba Cloud"}


def refuse_other_clouds_event(event: Mapping[str, Any], cloud: str, path: Path) -> None:
    """UserError when `event` is the other cloud's: its intake reads it, this cloud's ignores it."""
    from gpupool.core.intake.alibaba import intake_alibaba
    from gpupool.core.intake.aws import intake_aws
    from gpupool.core.intake.causes import Ignored

    intakes = {"aws": intake_aws, "alibaba": intake_alibaba}
    if not isinstance(intakes[cloud](event).cause, Ignored):
        return
    other = "alibaba" if cloud == "aws" else "aws"
    theirs = intakes[other](event)
    if not isinstance(theirs.cause, Ignored):
        raise UserError(
            f"{path}: an {_CLOUD_NAMES[other]} {theirs.trigger} event, which the {cloud} functions "
            f"never receive: run it with --cloud {other}"
        )


def _deps_factory(cloud: str, environ: dict[str, str], env_file: Path | None) -> Callable[[], Any]:
    """The wiring a deployed function of `cloud` uses, after checking `environ` (UserError if bad)."""
    from gpupool.adapters.alibaba.wiring import build_alibaba_deps, read_alibaba_environment
    from gpupool.adapters.aws.wiring import ConfigError, build_aws_deps, read_aws_environment

    try:
        if cloud == "alibaba":
            read_alibaba_environment(environ)
        else:
            read_aws_environment(environ)
    except ConfigError as error:
        where = f" (from {env_file})" if env_file else " (pass --env D/env from `gpupool sandbox up`)"
        hint = "; pass --cluster NAME" if "GPUPOOL_CLUSTER_NAME" in str(error) else ""
        raise UserError(f"environment{where}: {error}{hint}") from None
    if cloud == "alibaba":
        return lambda: build_alibaba_deps(environ)
    return lambda: build_aws_deps(environ)


def run(args: argparse.Namespace) -> int:
    from gpupool.cli.demo_sandbox import refuse_unready_sandbox

    module = load_function(args.function, args.functions_dir, cloud=args.cloud)
    event = read_event(args.event_file)
    refuse_other_clouds_event(event, args.cloud, args.event_file)
    environ = {**os.environ, **(read_env_file(args.env) if args.env else {})}
    if args.cluster:
        environ["GPUPOOL_CLUSTER_NAME"] = args.cluster
    factory = _deps_factory(args.cloud, environ, args.env)
    if args.env is not None:
        refuse_unready_sandbox(environ, args.env, args.cloud)
    with quiet_handler_output(verbose=args.verbose):
        handler = load_handler(module, factory, dry_run=args.dry_run, environ=environ)
        body = call_handler(handler, event, as_bytes=args.cloud == "alibaba")
    outcome = outcome_json(body)
    if args.json:
        print(json.dumps(outcome, indent=2, sort_keys=False))
    else:
        print_outcome(args.function, body, outcome, dry_run=args.dry_run)
    return 0 if body.get("status") in ("handled", "ignored", "duplicate") and not outcome["errors"] else 1
