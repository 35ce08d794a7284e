"""The `gpupool` command behaves: every option of every command has help; a flag that does not
apply to what runs is one line and exit 2 (demo), nothing run; an event of the other cloud is
refused by `invoke` with the flag that fixes it; a missing sandbox env file says to run
`gpupool sandbox up` first; a closed pipe ends a command with exit 141 and no traceback.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from gpupool.cli.main import build_parser, main

EVENTS = Path(__file__).resolve().parents[2] / "events"


def _options(parser: argparse.ArgumentParser, prefix: str) -> list[tuple[str, argparse.Action]]:
    found: list[tuple[str, argparse.Action]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                found.append((f"{prefix} {choice.dest}", choice))
            for name, sub in action.choices.items():
                found += _options(sub, f"{prefix} {name}")
        elif not isinstance(action, argparse._HelpAction):
            found.append((prefix, action))
    return found


def test_every_option_of_every_command_has_help() -> None:
    options = _options(build_parser(), "gpupool")
    assert len(options) > 100  # the walk reached the subcommands' own options
    missing = [f"{where} {'/'.join(a.option_strings) or a.dest}" for where, a in options if not a.help]
    assert missing == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--story", "never-join", "--mode", "autoselect"], "--story plays in provisioned mode"),
        (["--cloud", "alibaba", "--mode", "karpenter"], "--mode karpenter plays on AWS only"),
        (["--json", "--verbose"], "--verbose applies to the printed timeline"),
        (["--prepare-sandbox", "e", "--join-nodes", "e"], "separate steps"),
        (
            ["--prepare-sandbox", "e", "--story", "scale"],
            "--story applies to the story, not to --prepare-sandbox",
        ),
        (["--join-nodes", "e", "--json"], "--json applies to the story, not to --join-nodes"),
        (["--join-nodes", "e", "--mode", "karpenter"], "--mode applies to the story, not to --join-nodes"),
    ],
)
def test_a_demo_flag_that_does_not_apply_is_an_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and len(captured.err.strip().splitlines()) == 1
    assert captured.out == ""


@pytest.mark.parametrize(
    ("event", "cloud", "message"),
    [
        (
            "aws/scheduled-event.json",
            "alibaba",
            "an AWS schedule event, which the alibaba functions never receive",
        ),
        ("aws/ec2-spot-interruption-warning.json", "alibaba", "run it with --cloud aws"),
        (
            "alibaba/fc-timer.json",
            "aws",
            "an Alibaba Cloud timer event, which the aws functions never receive",
        ),
        ("alibaba/ecs-instance-state-change.json", "aws", "run it with --cloud alibaba"),
    ],
)
def test_an_event_of_the_other_cloud_is_refused(
    event: str, cloud: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["invoke", "launch", str(EVENTS / event), "--cloud", cloud]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_missing_sandbox_env_file_says_to_start_the_sandbox(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / ".gpupool" / "sandbox" / "env"
    assert main(["invoke", "launch", str(EVENTS / "aws/scheduled-event.json"), "--env", str(env)]) == 2
    assert "run `gpupool sandbox up --background` first" in capsys.readouterr().err
    assert main(["demo", "--join-nodes", str(env)]) == 2
    assert "run `gpupool sandbox up --background` first" in capsys.readouterr().err


def test_a_stopped_sandbox_says_to_start_it_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = tmp_path / "env"
    env.write_text(
        f"KUBECONFIG={tmp_path}/kubeconfig\nGPUPOOL_KUBE_API_URL=http://127.0.0.1:{port}\n"
        f"AWS_ENDPOINT_URL=http://127.0.0.1:{port}\nAWS_REGION=us-east-1\n"
        f"GPUPOOL_SANDBOX_DIR={tmp_path}\nGPUPOOL_CLUSTER_NAME=tensor-fusion\n"
    )
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    assert main(["invoke", "launch", str(EVENTS / "aws/scheduled-event.json"), "--env", str(env)]) == 2
    err = capsys.readouterr().err
    assert f"no sandbox answers at http://127.0.0.1:{port}" in err
    assert f"gpupool sandbox up --background --dir {tmp_path}" in err


@pytest.mark.parametrize(
    "argv", [["catalog", "--cloud", "aws", "--json"], ["crds"], ["validate", "--compat-table"], ["demo"]]
)
def test_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    # `gpupool … | head`: the reader is gone before the command writes.
    process = subprocess.Popen(
        [sys.executable, "-m", "gpupool.cli.main", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141
    assert err == ""
