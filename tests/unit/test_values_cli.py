"""`gpupool values`: a template.yaml stack (from DescribeStacks, answered by moto, or from the saved
`aws cloudformation describe-stacks` JSON) and `s info -o json` on Alibaba Cloud become the chart's
values — the URLs, the signing, the region and cluster, the functions' group, IRSA's annotation; on
Alibaba Cloud FC signing with the relay's AccessKey Secret or an RRSA role — that the chart's schema
accepts and that render into the relay's flags and volumes; every unusable input (an anonymous
trigger, a function that does not check the signed body, …) is one line on stderr (exit 2, nothing
on stdout), flags that do not apply are refused, and nothing of the functions' environment but the
cluster name reaches the output. The fixtures' outputs and functions are checked against
template.yaml and s.yaml so they cannot drift from what the stack and `s deploy` make.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import boto3
import helm_python as helm
import pytest
import yaml
from cfnlint.decode import decode  # type: ignore[import-untyped]
from moto import mock_aws

from gpupool.cli.commands.values import STACK_OUTPUTS
from gpupool.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "install"
DESCRIPTION = json.loads((FIXTURES / "describe-stacks.json").read_text())
S_INFO = json.loads((FIXTURES / "s-info.json").read_text())
URLS = {
    "launch": "https://q3x7bzxvjqcm4d2k5lh6wyt3ru0ofmnb.lambda-url.us-east-1.on.aws/",
    "bind": "https://7c2mfa5rkw4hzd3yq6ev1xgsbo8tnl0p.lambda-url.us-east-1.on.aws/",
    "compact": "https://ke9v2dq4ohw6ts1zb7mrcxyf3au5nl8g.lambda-url.us-east-1.on.aws/",
}
POD_IDENTITY_VALUES = {
    "functionsRbac": {"group": "gpupool"},
    "scheduler": {
        "forward": {"urls": URLS, "auth": "sigv4", "region": "us-east-1", "cluster": "tensor-fusion"}
    },
}


def _write(tmp_path: Path, document: Any, name: str = "input.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def _stack(**changes: Any) -> dict[str, Any]:
    """The fixture's description with its stack changed (outputs given as {key: value or None})."""
    description = copy.deepcopy(DESCRIPTION)
    stack = description["Stacks"][0]
    for key, value in changes.pop("outputs", {}).items():
        stack["Outputs"] = [o for o in stack["Outputs"] if o["OutputKey"] != key]
        if value is not None:
            stack["Outputs"].append({"OutputKey": key, "OutputValue": value})
    stack.update(changes)
    return description


def _values(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["values", *argv]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Chart values for ")
    loaded: dict[str, Any] = yaml.safe_load(out)
    return loaded


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["values", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    return line


def test_a_pod_identity_stack_becomes_urls_sigv4_its_region_cluster_and_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        _values(capsys, "--stack-description", str(FIXTURES / "describe-stacks.json")) == POD_IDENTITY_VALUES
    )


def test_an_irsa_stack_also_annotates_the_relays_service_account(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    role = "arn:aws:iam::123456789012:role/gpupool-RelayRole-Z9x8C7v6B5n4"
    path = _write(tmp_path, _stack(outputs={"RelayIdentity": "irsa"}))
    values = _values(capsys, "--stack-description", path)
    assert values["scheduler"]["serviceAccountAnnotations"] == {"eks.amazonaws.com/role-arn": role}


def test_a_stack_with_its_own_relay_role_and_no_group_says_what_is_left_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path,
        _stack(
            outputs={"RelayIdentity": "none", "RelayServiceAccount": "x/y", "FunctionsKubernetesGroup": ""}
        ),
    )
    assert main(["values", "--stack-description", path]) == 0
    captured = capsys.readouterr()
    values = yaml.safe_load(captured.out)
    assert "functionsRbac" not in values and "serviceAccountAnnotations" not in values["scheduler"]
    assert "RelayIdentity=none" in captured.err and "FunctionRoleArns" in captured.err


def test_describe_stacks_is_asked_for_the_stack_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    stack = DESCRIPTION["Stacks"][0]
    outputs = {o["OutputKey"]: {"Value": o["OutputValue"]} for o in stack["Outputs"]}
    template = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}, "Outputs": outputs}
    with mock_aws():
        boto3.client("cloudformation", region_name="us-east-1").create_stack(
            StackName="gpupool", TemplateBody=json.dumps(template)
        )
        assert _values(capsys, "--stack", "gpupool", "--region", "us-east-1") == POD_IDENTITY_VALUES
        line = _refused(capsys, "--stack", "gpupol", "--region", "us-east-1")
    assert line.startswith("gpupool values: error: stack gpupol: ") and "does not exist" in line


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"StackStatus": "CREATE_IN_PROGRESS"}, "stack gpupool is CREATE_IN_PROGRESS, not complete"),
        ({"StackStatus": "ROLLBACK_COMPLETE"}, "stack gpupool is ROLLBACK_COMPLETE, not complete"),
        ({"outputs": {"RelayIdentity": None}}, "stack gpupool has no output RelayIdentity: deploy it from"),
        (
            {"outputs": {"RelayRoleArn": None}},
            "gives the relay no role, so it could not call the Function URLs",
        ),
        ({"outputs": {"BindUrl": "http://b.lambda-url.us-east-1.on.aws/"}}, "is not an https:// URL"),
        (
            {"outputs": {"RelayServiceAccount": "kube-system/relay"}},
            "trusts the ServiceAccount kube-system/relay",
        ),
    ],
    ids=[
        "in-progress",
        "rolled-back",
        "older-template",
        "no-relay-role",
        "plain-http",
        "other-service-account",
    ],
)
def test_an_unusable_stack_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], message: str
) -> None:
    line = _refused(capsys, "--stack-description", _write(tmp_path, _stack(**change)))
    assert message in line, line


def test_the_release_and_namespace_must_be_the_ones_the_stack_trusts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    description = str(FIXTURES / "describe-stacks.json")
    line = _refused(capsys, "--stack-description", description, "--release", "gp")
    assert "release gp in namespace gpupool-system runs the relay as gpupool-system/gp-scheduler" in line
    line = _refused(capsys, "--stack-description", description, "--namespace", "gpu")
    assert "gpu/gpupool-scheduler" in line
    path = _write(tmp_path, _stack(outputs={"RelayServiceAccount": "gpu/gp-scheduler"}))
    values = _values(capsys, "--stack-description", path, "--release", "gp", "--namespace", "gpu")
    assert values == POD_IDENTITY_VALUES


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--stack-description", "{fixture}", "--region", "us-east-1"],
            "--region does not apply to --stack-description",
        ),
        (
            ["--stack", "gpupool", "--credentials-secret", "x"],
            "--credentials-secret does not apply to an AWS stack",
        ),
        (
            ["--stack-description", "{fixture}", "--rrsa-role", "gpupool-relay"],
            "--rrsa-role does not apply to an AWS stack",
        ),
        (["--s-info", "{s_info}", "--release", "gp"], "--release does not apply to --s-info"),
        (["--s-info", "{s_info}", "--region", "cn-hangzhou"], "--region does not apply to --s-info"),
        (["--stack-description", "{missing}"], "no such file"),
        (["--stack-description", "{not_json}"], "not JSON"),
        (["--stack-description", "{s_info}"], "expected the output of `aws cloudformation describe-stacks"),
        (["--s-info", "{fixture}"], "shows no launch-relay, bind-relay, compact-relay function"),
    ],
    ids=[
        "region",
        "credentials-secret-on-aws",
        "rrsa-role-on-aws",
        "release-on-alibaba",
        "region-on-alibaba",
        "missing",
        "not-json",
        "shape",
        "swap",
    ],
)
def test_bad_input_and_flags_that_do_not_apply_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    (tmp_path / "bad.json").write_text("{oops")
    files = {
        "fixture": str(FIXTURES / "describe-stacks.json"),
        "s_info": str(FIXTURES / "s-info.json"),
        "missing": str(tmp_path / "none.json"),
        "not_json": str(tmp_path / "bad.json"),
    }
    line = _refused(capsys, *(a.format(**files) for a in argv))
    assert message in line, line


def test_one_source_is_required() -> None:
    with pytest.raises(SystemExit) as exited:
        main(["values"])
    assert exited.value.code == 2


def test_the_fixture_has_exactly_the_outputs_template_yaml_declares() -> None:
    template, _ = decode(str(ROOT / "template.yaml"))
    declared = set(template["Outputs"])
    assert {o["OutputKey"] for o in DESCRIPTION["Stacks"][0]["Outputs"]} == declared
    assert set(STACK_OUTPUTS) | {"RelayRoleArn"} <= declared
    parameters = {p["ParameterKey"] for p in DESCRIPTION["Stacks"][0]["Parameters"]}
    assert parameters <= set(template["Parameters"])


def test_the_values_render_into_the_relays_flags(capsys: pytest.CaptureFixture[str]) -> None:
    values = _values(capsys, "--stack-description", str(FIXTURES / "describe-stacks.json"))
    rendered = helm.Chart.load(ROOT / "incluster" / "chart").render(
        values, name="gpupool", namespace="gpupool-system"
    )
    docs = [d for text in rendered.values() for d in yaml.safe_load_all(text) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "gpupool-scheduler"
    (relay,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "relay"]
    assert {f"--forward={f}={u}" for f, u in URLS.items()} <= set(relay["args"])
    assert {"--forward-auth=sigv4", "--region=us-east-1", "--cluster=tensor-fusion"} <= set(relay["args"])


# ---- Alibaba Cloud -----------------------------------------------------------------------------
FC_URLS = {
    "launch": "https://gpupool-launch-relay-kqzrwtbnxa.cn-hangzhou.fcapp.run",
    "bind": "https://gpupool-bind-relay-pvdmxjhelc.cn-hangzhou.fcapp.run",
    "compact": "https://gpupool-compact-relay-fyngsbowqt.cn-hangzhou.fcapp.run",
}


# The timer and EventBridge triggers of bind on its relay-facing twin too.
BIND_TRIGGERS = S_INFO["gpupool-bind"]["triggers"] + S_INFO["gpupool-bind-relay"]["triggers"]


def _s_info(auth_type: str | None = None, **changes: Any) -> dict[str, Any]:
    """The fixture with every HTTP trigger's authType replaced, and resources updated ({name: {key: value}});
    `environment` in a change updates that function's environment variables."""
    info = copy.deepcopy(S_INFO)
    for resource, item in info.items():
        for trigger in item.get("triggers", []):
            if auth_type is not None and trigger["triggerType"] == "http":
                trigger["triggerConfig"]["authType"] = auth_type
        if resource in changes:
            change = dict(changes[resource])
            item["function"]["environmentVariables"].update(change.pop("environment", {}))
            item.update(change)
    return info


def test_s_info_becomes_the_http_trigger_urls_fc_signing_the_credentials_secret_and_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["values", "--s-info", str(FIXTURES / "s-info.json")]) == 0
    captured = capsys.readouterr()
    assert yaml.safe_load(captured.out) == {
        "scheduler": {
            "forward": {
                "urls": FC_URLS,
                "auth": "fc",
                "alibabaCredentialsSecret": "tf-cloud-vendor-credentials",
                "cluster": "tensor-fusion",
            }
        }
    }
    assert "tf-cloud-vendor-credentials (files ak, sk)" in captured.out.splitlines()[1]
    # Nothing of the functions' environment but the cluster name is written, whatever it holds.
    leaky = _s_info(**{"gpupool-bind": {"environment": {"SOME_TOKEN": "FIXTURE-MUST-NOT-LEAK"}}})
    assert main(["values", "--s-info", _write(tmp_path, leaky)]) == 0
    captured = capsys.readouterr()
    assert "MUST-NOT-LEAK" not in captured.out + captured.err
    assert "gpupool/kubeconfig" not in captured.out


def test_the_credentials_secret_can_be_named_or_replaced_by_an_rrsa_role(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fixture = str(FIXTURES / "s-info.json")
    forward = _values(capsys, "--s-info", fixture, "--credentials-secret", "relay-key")["scheduler"][
        "forward"
    ]
    assert forward["alibabaCredentialsSecret"] == "relay-key"
    scheduler = _values(capsys, "--s-info", fixture, "--rrsa-role", "gpupool-relay")["scheduler"]
    assert scheduler["serviceAccountAnnotations"] == {
        "pod-identity.alibabacloud.com/role-name": "gpupool-relay"
    }
    assert scheduler["forward"]["auth"] == "fc" and "alibabaCredentialsSecret" not in scheduler["forward"]
    with pytest.raises(SystemExit) as exited:  # one identity or the other
        main(["values", "--s-info", fixture, "--rrsa-role", "r", "--credentials-secret", "s"])
    assert exited.value.code == 2
    capsys.readouterr()
    assert "is not a Secret name" in _refused(
        capsys, "--s-info", fixture, "--credentials-secret", "Relay_Key"
    )
    assert "is not a RAM role name" in _refused(capsys, "--s-info", fixture, "--rrsa-role", "relay role")


def test_s_info_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO((FIXTURES / "s-info.json").read_text()))
    assert _values(capsys, "--s-info", "-")["scheduler"]["forward"]["urls"] == FC_URLS


@pytest.mark.parametrize(
    ("info", "message"),
    [
        (_s_info(**{"gpupool-bind-relay": {"region": "cn-shanghai"}}), "the functions are in 2 regions"),
        (_s_info("anonymous"), "its HTTP trigger is anonymous, so anyone could call it"),
        (_s_info("basic"), "HTTP trigger authType 'basic'"),
        (
            _s_info(**{"gpupool-compact-relay": {"environment": {"GPUPOOL_HTTP_AUTH": "hmac"}}}),
            "GPUPOOL_HTTP_AUTH is 'hmac', not fc-signature, so the function would not check the signed body",
        ),
        (
            _s_info(**{"gpupool-compact-relay": {"triggers": []}}),
            "expected one HTTP trigger on gpupool-compact-relay, found 0",
        ),
        (
            _s_info(**{"gpupool-bind-relay": {"triggers": BIND_TRIGGERS}}),
            "it also has eventbridge, timer triggers: the relay may invoke it directly",
        ),
        (
            _s_info(**{"gpupool-launch-relay": {"environment": {"GPUPOOL_HTTP_ONLY": "false"}}}),
            "GPUPOOL_HTTP_ONLY is 'false', not true, so the function would act on an event the relay",
        ),
        (
            {k: v for k, v in S_INFO.items() if k != "gpupool-launch-relay"},
            "shows no launch-relay function",
        ),
        ([1, 2], "an object keyed by s.yaml's resources"),
    ],
    ids=[
        "regions",
        "anonymous",
        "auth-type",
        "unchecked-body",
        "no-http-trigger",
        "other-triggers",
        "not-http-only",
        "no-launch",
        "not-an-object",
    ],
)
def test_unusable_s_info_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], info: Any, message: str
) -> None:
    line = _refused(capsys, "--s-info", _write(tmp_path, info))
    assert message in line, line


def _relay(values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """The rendered relay container, its pod spec, and all documents."""
    rendered = helm.Chart.load(ROOT / "incluster" / "chart").render(
        values, name="gpupool", namespace="gpupool-system"
    )
    docs = [d for text in rendered.values() for d in yaml.safe_load_all(text) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (relay,) = [c for c in pod["containers"] if c["name"] == "relay"]
    return relay, pod, docs


def test_the_fc_values_render_into_the_relays_flags_and_its_credentials_volume(
    capsys: pytest.CaptureFixture[str],
) -> None:
    relay, pod, _ = _relay(_values(capsys, "--s-info", str(FIXTURES / "s-info.json")))
    assert {f"--forward={f}={u}" for f, u in FC_URLS.items()} <= set(relay["args"])
    assert {
        "--forward-auth=fc",
        "--fc-credentials-dir=/etc/gpupool/alibaba",
        "--cluster=tensor-fusion",
    } <= set(relay["args"])
    assert not [a for a in relay["args"] if a.startswith(("--hmac", "--region"))]
    (mount,) = [m for m in relay["volumeMounts"] if m["mountPath"] == "/etc/gpupool/alibaba"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["secretName"] == "tf-cloud-vendor-credentials"
    _, _, docs = _relay(_values(capsys, "--s-info", str(FIXTURES / "s-info.json"), "--rrsa-role", "relay"))
    (account,) = [
        d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"] == "gpupool-scheduler"
    ]
    assert account["metadata"]["annotations"] == {"pod-identity.alibabacloud.com/role-name": "relay"}


def test_the_s_info_fixture_is_what_s_yaml_deploys() -> None:
    s_yaml = yaml.safe_load((ROOT / "s.yaml").read_text())
    deployed = {
        name: resource["props"]
        for name, resource in s_yaml["resources"].items()
        if resource["component"] == "fc3"
    }
    described = {name: item for name, item in S_INFO.items() if "function" in item}
    assert set(described) == set(deployed)
    for name, props in deployed.items():
        item = described[name]
        assert item["function"]["functionName"] == props["functionName"]
        assert [t["triggerName"] for t in item["triggers"]] == [t["triggerName"] for t in props["triggers"]]
        assert [t["triggerType"] for t in item["triggers"]] == [t["triggerType"] for t in props["triggers"]]
        for http in [t for t in item["triggers"] if t["triggerType"] == "http"]:  # the -relay ones
            assert http["triggerConfig"]["authType"] == s_yaml["vars"]["http"]["authType"]
        assert props["region"] == "${vars.region}" and item["region"] == s_yaml["vars"]["region"]
        environment = re.fullmatch(r"\$\{vars\.(\w+)\}", props["environmentVariables"])
        assert environment is not None
        expected = {
            key: re.sub(r"\$\{vars\.(\w+)\}", lambda m: str(s_yaml["vars"][m.group(1)]), str(value))
            for key, value in s_yaml["vars"][environment.group(1)].items()
        }
        assert item["function"]["environmentVariables"] == expected
