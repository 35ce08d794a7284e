"""`gpupool validate`: exit codes, per-document report, shallow foreign kinds, clear input errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupool.cli.main import main

POOL = """\
apiVersion: tensor-fusion.ai/v1
kind: GPUPool
metadata:
  name: elastic
spec:
  capacityConfig:
    minResources:
      tflops: "65"
      vram: 15Gi
  nodeManagerConfig:
    provisioningMode: Provisioned
    nodeProvisioner:
      nodeClass: gpu-nodes
"""


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_valid_files_exit_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deployment = "apiVersion: apps/v1\nkind: Deployment\n# ...\nspec:\n  replicas: 1\n"
    code = main(["validate", _write(tmp_path, "a.yaml", POOL + "---\n" + deployment)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "GPUPool/elastic: valid" in out
    assert "Deployment/<unnamed>: ok (not validated in depth)" in out


def test_invalid_document_exits_one_and_names_each_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = POOL.replace('"65"', '"abc"').replace("Provisioned", "Magic") + "  colour: red\n"
    code = main(["validate", _write(tmp_path, "good.yaml", POOL), _write(tmp_path, "bad.yaml", bad)])
    out = capsys.readouterr().out
    assert code == 1
    assert "bad.yaml#1 GPUPool/elastic: invalid" in out
    assert "  spec.capacityConfig.minResources.tflops: not a quantity: 'abc'" in out
    assert "  spec.nodeManagerConfig.provisioningMode: Input should be" in out
    assert "  spec.colour: unknown field" in out
    assert "good.yaml#1 GPUPool/elastic: valid" in out
    assert "1 invalid document(s)" in out


def test_unknown_kind_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", _write(tmp_path, "w.yaml", "apiVersion: example.com/v1\nkind: Widget\n")])
    assert code == 1
    assert "Widget/<unnamed>: invalid\n  kind: unknown kind 'Widget'" in capsys.readouterr().out


def test_foreign_kind_with_bad_metadata_is_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["validate", _write(tmp_path, "p.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [1]\n")])
    assert code == 1
    assert "metadata: not a mapping" in capsys.readouterr().out


def test_quiet_prints_only_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-q", _write(tmp_path, "a.yaml", POOL)]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.yaml", None, "no such file"),
        ("bad.yaml", "kind: [GPUPool\n", "invalid YAML: line"),
        ("binary.yaml", b"\xff\xfe\x00", "not UTF-8 text"),
    ],
)
def test_unreadable_input_is_one_line_exit_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str | bytes | None, message: str
) -> None:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    code = main(["validate", str(path)])
    captured = capsys.readouterr()
    assert code == 2
    assert message in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert "Traceback" not in captured.err
    assert captured.out == ""


@pytest.mark.parametrize("second", [None, "kind: [\n"])
def test_bad_input_is_reported_before_any_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], second: str | None
) -> None:
    other = _write(tmp_path, "b.yaml", second) if second is not None else str(tmp_path / "nope.yaml")
    code = main(["validate", _write(tmp_path, "a.yaml", POOL), other])
    assert code == 2
    assert capsys.readouterr().out == ""


def test_stdin_is_read_for_dash(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(POOL))
    assert main(["validate", "-"]) == 0
    assert "-#1 GPUPool/elastic: valid" in capsys.readouterr().out


def test_a_pool_name_that_leaves_no_room_for_claim_names_is_invalid_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    longest, too_long = "p" * 54, "p" * 55
    ok = POOL.replace("name: elastic", f"name: {longest}")
    bad = POOL.replace("name: elastic", f"name: {too_long}")
    assert main(["validate", _write(tmp_path, "ok.yaml", ok)]) == 0
    capsys.readouterr()
    assert main(["validate", _write(tmp_path, "bad.yaml", bad)]) == 1
    out = capsys.readouterr().out
    assert f"GPUPool/{too_long}: invalid" in out
    assert "metadata: " in out and "55 characters; at most 54" in out
    assert "tensor-fusion.ai/node-provisioner label value, which may not pass 63 characters" in out


def test_a_provider_config_without_spec_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = "apiVersion: tensor-fusion.ai/v1\nkind: ProviderConfig\nmetadata:\n  name: nvidia\n"
    assert main(["validate", _write(tmp_path, "p.yaml", bare)]) == 0
    assert "ProviderConfig/nvidia: valid" in capsys.readouterr().out
