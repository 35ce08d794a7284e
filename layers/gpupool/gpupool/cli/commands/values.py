"""`gpupool values`: the deployed functions' outputs as the chart's values (YAML on standard output).

Role: the one step between deploying the functions and installing the chart (docs/install-eks.md,
docs/install-ack.md). On AWS it reads the stack template.yaml made — `--stack NAME` asks
CloudFormation's DescribeStacks, `--stack-description FILE` reads the JSON `aws cloudformation
describe-stacks --stack-name NAME` printed — and writes the Function URLs, SigV4 with the stack's
region, the events' cluster name, the functions' Kubernetes group and, for IRSA, the relay's role
annotation. It refuses a stack that is not complete, lacks an output, gives the relay no role, or
trusts another ServiceAccount than the release's `<release>-scheduler` in `--namespace`. On Alibaba
Cloud `--s-info FILE` reads `s info -o json` (Serverless Devs with s.yaml): the HTTP trigger URL of
each relay-facing function (gpupool-<name>-relay, HTTP-only: the one the relay's RAM identity may
invoke; the timer and EventBridge functions have no HTTP trigger and are skipped) and the cluster
name, and writes them with `auth: fc` (the relay signs ACS3-HMAC-SHA256
as FC checks an `authType: function` trigger) and the relay's identity: the Secret holding its RAM
user's AccessKey (`--credentials-secret`, default tf-cloud-vendor-credentials) or, with
`--rrsa-role`, the ServiceAccount annotation ACK's RRSA webhook reads. It refuses triggers that
are not `authType: function` (an anonymous trigger takes anyone's call), functions that do not
check the signed body (`GPUPOOL_HTTP_AUTH` other than fc-signature), relay-facing functions that
take another trigger or lack `GPUPOOL_HTTP_ONLY=true` (a direct InvokeFunction could hand them a
timer or EventBridge event, around the signature check), and functions in several regions. Only
those fields are read: `s info` also prints the functions' whole environment, and none of it is
written out.

Must not: call anything but DescribeStacks, or print a secret.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpupool.cli.errors import UserError
from gpupool.cli.files import read_text
from gpupool.core.intake.routing import FUNCTIONS

NAME = "values"
HELP = (
    "turn the deployed functions' outputs (an AWS stack, or `s info` on Alibaba Cloud) into the "
    "chart's values, YAML on stdout"
)
DEFAULT_RELEASE = "gpupool"
DEFAULT_NAMESPACE = "gpupool-system"
# Alibaba Cloud: the Secret (files ak, sk) the chart mounts for `--forward-auth fc` (TensorFusion's name).
DEFAULT_CREDENTIALS_SECRET = "tf-cloud-vendor-credentials"
RRSA_ANNOTATION = "pod-identity.alibabacloud.com/role-name"  # read by ACK's ack-pod-identity-webhook
FC_TRIGGER_AUTH = "function"  # s.yaml's vars.http.authType: FC checks the caller's signature
FC_FUNCTION_AUTH = "fc-signature"  # s.yaml's GPUPOOL_HTTP_AUTH: the function checks the signed body
FC_HTTP_ONLY = "GPUPOOL_HTTP_ONLY"  # s.yaml's relay-facing functions: "true", HTTP-trigger requests only
FC_RELAY_SUFFIX = "-relay"  # s.yaml's relay-facing functions: gpupool-<name>-relay
_SECRET_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a Kubernetes Secret's name
_RAM_ROLE_NAME = re.compile(r"[A-Za-z0-9.-]{1,64}")  # RAM CreateRole's RoleName
# What `gpupool values` reads from template.yaml's Outputs (RelayRoleArn only when the relay has a role).
STACK_OUTPUTS = (
    "LaunchUrl",
    "BindUrl",
    "CompactUrl",
    "ClusterName",
    "Region",
    "RelayIdentity",
    "RelayServiceAccount",
    "FunctionsKubernetesGroup",
)
USABLE_STACK_STATUSES = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE")
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"


def register(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--stack", metavar="NAME", help="AWS: the stack `sam deploy` created (DescribeStacks)"
    )
    source.add_argument(
        "--stack-description",
        metavar="FILE",
        type=Path,
        help="AWS: the JSON `aws cloudformation describe-stacks --stack-name NAME` printed ('-' for stdin)",
    )
    source.add_argument(
        "--s-info",
        metavar="FILE",
        type=Path,
        help="Alibaba Cloud: the JSON `s info -o json` printed beside s.yaml ('-' for stdin)",
    )
    parser.add_argument("--region", help="with --stack: the stack's region (default: the AWS CLI's)")
    parser.add_argument(
        "--release",
        help="AWS: the chart's release name; the relay runs as <release>-scheduler "
        f"(default {DEFAULT_RELEASE})",
    )
    parser.add_argument(
        "--namespace", help=f"AWS: the namespace the chart is installed in (default {DEFAULT_NAMESPACE})"
    )
    identity = parser.add_mutually_exclusive_group()
    identity.add_argument(
        "--credentials-secret",
        metavar="NAME",
        help="Alibaba Cloud: the Secret in the chart's namespace holding the relay's RAM AccessKey as files "
        f"ak and sk (default {DEFAULT_CREDENTIALS_SECRET})",
    )
    identity.add_argument(
        "--rrsa-role",
        metavar="ROLE",
        help="Alibaba Cloud: sign with RRSA instead of an AccessKey, as this RAM role (annotates the "
        f"relay's ServiceAccount {RRSA_ANNOTATION})",
    )


# ---- AWS -------------------------------------------------------------------------------------
def _describe_stack(name: str, region: str | None) -> dict[str, Any]:
    """The stack as DescribeStacks answers it (one clear line for each way that can fail)."""
    try:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError
    except ImportError:
        raise UserError("--stack needs boto3: pip install 'gpupool[aws]'") from None
    try:
        client = boto3.client("cloudformation", region_name=region)
        stacks = client.describe_stacks(StackName=name).get("Stacks") or []
    except NoRegionError:
        raise UserError("no AWS region: pass --region or set AWS_REGION") from None
    except NoCredentialsError:
        raise UserError(
            "no AWS credentials: configure the AWS CLI (aws configure) or set AWS_PROFILE"
        ) from None
    except ClientError as exc:
        message = exc.response.get("Error", {}).get("Message") or str(exc)
        raise UserError(f"stack {name}: {message}") from None
    except BotoCoreError as exc:
        raise UserError(f"stack {name}: {exc}") from None
    if len(stacks) != 1:
        raise UserError(f"stack {name}: DescribeStacks answered {len(stacks)} stacks")
    stack: dict[str, Any] = stacks[0]
    return stack


def _stack_from_description(text: str, path: Path) -> Mapping[str, Any]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    stacks = document.get("Stacks") if isinstance(document, Mapping) else None
    if not isinstance(stacks, list) or len(stacks) != 1 or not isinstance(stacks[0], Mapping):
        raise UserError(
            f"{path}: expected the output of `aws cloudformation describe-stacks --stack-name NAME` "
            '({"Stacks": [one stack]})'
        )
    stack: Mapping[str, Any] = stacks[0]
    return stack


def _outputs(stack: Mapping[str, Any]) -> dict[str, str]:
    outputs: dict[str, str] = {}
    for output in stack.get("Outputs") or []:
        if isinstance(output, Mapping) and isinstance(output.get("OutputKey"), str):
            outputs[output["OutputKey"]] = str(output.get("OutputValue") or "")
    return outputs


def _https(url: str, where: str) -> str:
    if not url.startswith("https://"):
        raise UserError(f"{where}: {url!r} is not an https:// URL")
    return url


def values_from_stack(stack: Mapping[str, Any], *, release: str, namespace: str) -> dict[str, Any]:
    """The chart's values for the functions of one template.yaml stack (UserError when unusable)."""
    name = str(stack.get("StackName") or "the stack")
    status = str(stack.get("StackStatus") or "")
    if status not in USABLE_STACK_STATUSES:
        raise UserError(
            f"stack {name} is {status or 'of unknown status'}, not complete: wait for it "
            "(aws cloudformation wait stack-create-complete) or fix and redeploy it"
        )
    outputs = _outputs(stack)
    missing = [key for key in STACK_OUTPUTS if key not in outputs]
    if missing:
        raise UserError(
            f"stack {name} has no output {', '.join(missing)}: deploy it from this repository's template.yaml"
        )
    identity = outputs["RelayIdentity"]
    role = outputs.get("RelayRoleArn", "")
    if not role:
        raise UserError(
            f"stack {name} gives the relay no role, so it could not call the Function URLs: deploy it with "
            "RelayIdentity=pod-identity (or irsa, or RelayPrincipalArn=<your role>)"
        )
    service_account = f"{namespace}/{release}-scheduler"
    if identity in ("pod-identity", "irsa") and outputs["RelayServiceAccount"] != service_account:
        raise UserError(
            f"stack {name} trusts the ServiceAccount {outputs['RelayServiceAccount']}, but release {release} "
            f"in namespace {namespace} runs the relay as {service_account}: install with that release and "
            "namespace (--release, --namespace), or redeploy with RelayNamespace and RelayServiceAccount"
        )
    forward: dict[str, Any] = {
        "urls": {
            function: _https(outputs[f"{function.capitalize()}Url"], f"stack {name}")
            for function in FUNCTIONS
        },
        "auth": "sigv4",
        "region": outputs["Region"],
        "cluster": outputs["ClusterName"],
    }
    scheduler: dict[str, Any] = {"forward": forward}
    if identity == "irsa":
        scheduler["serviceAccountAnnotations"] = {IRSA_ANNOTATION: role}
    values: dict[str, Any] = {}
    if outputs["FunctionsKubernetesGroup"]:
        values["functionsRbac"] = {"group": outputs["FunctionsKubernetesGroup"]}
    values["scheduler"] = scheduler
    return values


def _stack_notes(stack: Mapping[str, Any]) -> list[str]:
    outputs = _outputs(stack)
    notes = []
    if outputs.get("RelayIdentity") == "none":
        notes.append(
            f"the relay must run with the role {outputs.get('RelayRoleArn')} (RelayIdentity=none: give it "
            "yourself, e.g. scheduler.serviceAccountAnnotations for IRSA)"
        )
    if not outputs.get("FunctionsKubernetesGroup"):
        notes.append(
            "the stack maps the functions' roles (output FunctionRoleArns) to no Kubernetes group: map "
            "them to functionsRbac.group yourself (EKS access entries or aws-auth)"
        )
    return notes


# ---- Alibaba Cloud -----------------------------------------------------------------------------
def _function_of(name: str) -> str | None:
    """The function a relay-facing function (…-<function>-relay) serves; None for any other."""
    if not name.endswith(FC_RELAY_SUFFIX):
        return None
    last = name.removesuffix(FC_RELAY_SUFFIX).rsplit("-", 1)[-1]
    return last if last in FUNCTIONS else None


def _environment(function: Mapping[str, Any]) -> Mapping[str, Any]:
    environment = function.get("environmentVariables")
    return environment if isinstance(environment, Mapping) else {}


def values_from_s_info(
    info: Any, *, credentials_secret: str | None = None, rrsa_role: str | None = None
) -> dict[str, Any]:
    """The chart's values for the FC functions `s info -o json` describes (UserError when unusable):
    the relay signs for FC with the AccessKey in `credentials_secret` or, given `rrsa_role`, RRSA."""
    if not isinstance(info, Mapping):
        raise UserError("expected the output of `s info -o json`: an object keyed by s.yaml's resources")
    urls: dict[str, str] = {}
    regions: set[str] = set()
    clusters: set[str] = set()
    for resource, item in info.items():
        function = item.get("function") if isinstance(item, Mapping) else None
        if not isinstance(function, Mapping):
            continue  # not a function (the RAM role, …)
        function_name = str(function.get("functionName") or "")
        which = _function_of(function_name)
        if which is None:
            continue
        if which in urls:
            raise UserError(
                f"two functions end in -{which}{FC_RELAY_SUFFIX}: keep one gpupool deployment per s.yaml"
            )
        where = f"{resource} ({function_name})"
        triggers = list(item.get("triggers") or [])
        http = [t for t in triggers if isinstance(t, Mapping) and t.get("triggerType") == "http"]
        if len(http) != 1:
            raise UserError(f"{resource}: expected one HTTP trigger on {function_name}, found {len(http)}")
        others = sorted(
            {str(t.get("triggerType") if isinstance(t, Mapping) else t) for t in triggers if t is not http[0]}
        )
        if others:
            raise UserError(
                f"{where}: it also has {', '.join(others)} triggers: the relay may invoke "
                "it directly with such an event, around the signature check; deploy this repository's "
                "s.yaml, whose relay-facing functions have an HTTP trigger only"
            )
        only = str(_environment(function).get(FC_HTTP_ONLY) or "")
        if only != "true":
            raise UserError(
                f"{where}: {FC_HTTP_ONLY} is {only or 'unset'!r}, not true, so the function would act on "
                "an event the relay invoked it with directly: deploy it from this repository's s.yaml"
            )
        trigger = http[0]
        config = trigger.get("triggerConfig")
        auth_type = str(config.get("authType") if isinstance(config, Mapping) else "")
        if auth_type == "anonymous":
            raise UserError(
                f"{where}: its HTTP trigger is anonymous, so anyone could call it: deploy this repository's "
                "s.yaml, whose triggers take only calls FC verified (authType function)"
            )
        if auth_type != FC_TRIGGER_AUTH:
            raise UserError(
                f"{where}: HTTP trigger authType {auth_type!r}: the relay signs only for authType function"
            )
        checks = str(_environment(function).get("GPUPOOL_HTTP_AUTH") or "")
        if checks != FC_FUNCTION_AUTH:
            raise UserError(
                f"{where}: GPUPOOL_HTTP_AUTH is {checks or 'unset'!r}, not {FC_FUNCTION_AUTH}, so the "
                "function would not check the signed body: deploy it from this repository's s.yaml"
            )
        url = str((trigger.get("httpTrigger") or {}).get("urlInternet") or "")
        urls[which] = _https(url, f"{where} urlInternet")
        regions.add(str(item.get("region") or ""))
        clusters.add(str(_environment(function).get("GPUPOOL_CLUSTER_NAME") or ""))
    missing = [function for function in FUNCTIONS if function not in urls]
    if missing:
        raise UserError(
            f"`s info` shows no {', '.join(f'{m}{FC_RELAY_SUFFIX}' for m in missing)} function: run it "
            "beside s.yaml after `s deploy`"
        )
    if len(regions) != 1 or "" in regions:
        raise UserError(f"the functions are in {len(regions)} regions: deploy them to one")
    if len(clusters) != 1 or "" in clusters:
        raise UserError(
            "the functions disagree on GPUPOOL_CLUSTER_NAME (or lack it): deploy them from one s.yaml"
        )
    forward: dict[str, Any] = {"urls": {function: urls[function] for function in FUNCTIONS}, "auth": "fc"}
    scheduler: dict[str, Any] = {"forward": forward}
    if rrsa_role is not None:
        if not _RAM_ROLE_NAME.fullmatch(rrsa_role):
            raise UserError(
                f"--rrsa-role {rrsa_role!r} is not a RAM role name (1 to 64 letters, digits, '.' or '-')"
            )
        scheduler["serviceAccountAnnotations"] = {RRSA_ANNOTATION: rrsa_role}
    else:
        secret = DEFAULT_CREDENTIALS_SECRET if credentials_secret is None else credentials_secret
        if not _SECRET_NAME.fullmatch(secret):
            raise UserError(
                f"--credentials-secret {secret!r} is not a Secret name (lower-case letters, digits, '-', '.')"
            )
        forward["alibabaCredentialsSecret"] = secret
    forward["cluster"] = clusters.pop()
    return {"scheduler": scheduler}


def _s_info_header(values: dict[str, Any]) -> list[str]:
    scheduler = values["scheduler"]
    if "serviceAccountAnnotations" in scheduler:
        identity = (
            f"RRSA: the RAM role {scheduler['serviceAccountAnnotations'][RRSA_ANNOTATION]}, trusted for the "
            "relay's ServiceAccount, with s.yaml's vars.relayInvokePolicy."
        )
    else:
        identity = (
            f"the AccessKey in Secret {scheduler['forward']['alibabaCredentialsSecret']} (files ak, sk) in "
            "the chart's namespace, of a RAM user with s.yaml's vars.relayInvokePolicy."
        )
    return [
        "Chart values for gpupool's Function Compute functions, from `gpupool values --s-info`.",
        f"The relay signs each delivery for FC (ACS3-HMAC-SHA256) with {identity}",
    ]


# ---- the command -----------------------------------------------------------------------------
def _refuse_flags(args: argparse.Namespace, source: str, flags: dict[str, str]) -> None:
    given = [flag for attribute, flag in flags.items() if getattr(args, attribute) is not None]
    if given:
        raise UserError(f"{', '.join(given)} does not apply to {source}")


def _render(values: dict[str, Any], header: list[str]) -> str:
    import yaml

    body = yaml.safe_dump(values, sort_keys=False, default_flow_style=False)
    return "".join(f"# {line}\n" for line in header) + body


def run(args: argparse.Namespace) -> int:
    if args.s_info is not None:
        _refuse_flags(
            args, "--s-info", {"region": "--region", "release": "--release", "namespace": "--namespace"}
        )
        text = read_text(args.s_info, what="the output of `s info -o json`", allow_stdin=True)
        try:
            info = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"{args.s_info}: not JSON ({exc.msg}, line {exc.lineno})") from None
        values = values_from_s_info(
            info, credentials_secret=args.credentials_secret, rrsa_role=args.rrsa_role
        )
        print(_render(values, _s_info_header(values)), end="")
        return 0
    _refuse_flags(
        args, "an AWS stack", {"credentials_secret": "--credentials-secret", "rrsa_role": "--rrsa-role"}
    )
    if args.stack_description is not None:
        _refuse_flags(args, "--stack-description", {"region": "--region"})
        text = read_text(args.stack_description, what="a stack description", allow_stdin=True)
        stack: Mapping[str, Any] = _stack_from_description(text, args.stack_description)
    else:
        stack = _describe_stack(args.stack, args.region)
    release = args.release or DEFAULT_RELEASE
    namespace = args.namespace or DEFAULT_NAMESPACE
    values = values_from_stack(stack, release=release, namespace=namespace)
    for note in _stack_notes(stack):
        print(f"gpupool values: note: {note}", file=sys.stderr)
    header = [
        f"Chart values for the functions of stack {stack.get('StackName')}, from `gpupool values`.",
        f"Install as release {release} in namespace {namespace} (the ServiceAccount the stack trusts).",
    ]
    print(_render(values, header), end="")
    return 0
