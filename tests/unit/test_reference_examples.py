"""Every YAML example of the reference documents passes `gpupool validate`; a bad quantity fails.

The examples live in tests/fixtures/reference/ (extracted from the workplace's
../shared/reference/ documents by `extract_examples`, so a clone without ../shared runs this).

The reference documents are doc-site text (Chinese): examples sit in ``` fences (Markdown)
or as indented blocks in plain text, with site markers such as `// [!code highlight]`, and a
simulate-schedule example inside a `curl -d '…'` argument. The extractor finds each block
that starts at an `apiVersion:` line and ends where the YAML does, strips the markers, and
the test asserts a minimum count so a broken extractor fails rather than passing vacuously.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from gpupool.cli.main import main

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "reference"
MIN_EXAMPLES = 15

_MARKER = re.compile(r"\s*//\s*\[!code [^\]]*\]\s*$")
_API_VERSION = re.compile(r"^(?P<indent>\s*)(?P<curl>-d\s+')?apiVersion:\s*\S")
# A YAML line at the block's own indentation: a key, a list item, a comment or a separator.
_YAML_LINE = re.compile(r"^(?:[A-Za-z0-9_.\-/\"']+:(?:\s|$)|- |-$|#|---)")


def _clean(line: str) -> str:
    return _MARKER.sub("", line.rstrip())


def _blocks_in_text(lines: list[str]) -> list[str]:
    """Indented or top-level YAML blocks starting at an `apiVersion:` line."""
    blocks: list[str] = []
    index = 0
    while index < len(lines):
        match = _API_VERSION.match(lines[index])
        if match is None:
            index += 1
            continue
        if match["curl"]:  # curl -d 'apiVersion: v1 … ends at the line closing the quote
            body = [lines[index].strip()[len(match["curl"]) :]]
            index += 1
            while index < len(lines) and not lines[index].rstrip().endswith("'"):
                body.append(lines[index])
                index += 1
            if index < len(lines):
                body.append(lines[index].rstrip()[:-1])
            blocks.append("\n".join(body))
            index += 1
            continue
        indent = len(match["indent"])
        body = []
        while index < len(lines):
            line = _clean(lines[index])
            stripped = line.strip()
            if stripped.startswith("```"):
                break
            if stripped:
                line_indent = len(line) - len(line.lstrip())
                if line_indent < indent:
                    break
                if line_indent == indent and not _YAML_LINE.match(stripped):
                    break
            body.append(line[indent:] if len(line) >= indent else "")
            index += 1
        blocks.append("\n".join(body).rstrip() + "\n")
    return blocks


def _documents_with_kind(block: str) -> list[str]:
    return [
        doc for doc in re.split(r"^---\s*$", block, flags=re.MULTILINE) if re.search(r"^kind:", doc, re.M)
    ]


def extract_examples(text: str) -> list[str]:
    """The YAML documents in a reference text that have both `apiVersion:` and `kind:`."""
    lines = html.unescape(text).splitlines()
    examples: list[str] = []
    for block in _blocks_in_text(lines):
        examples.extend(doc for doc in _documents_with_kind(block) if "apiVersion:" in doc)
    return examples


def _all_examples() -> list[tuple[str, str]]:
    return [(path.name, path.read_text(encoding="utf-8")) for path in sorted(REFERENCE.glob("*.yaml"))]


SAMPLE = """说明文字
```yaml
apiVersion: tensor-fusion.ai/v1
kind: GPUPool // [!code highlight]
metadata:
  name: a
```
    apiVersion: v1
    kind: Pod
    metadata:
      name: b
    正文
curl -X POST http://127.0.0.1/simulate \\
  -d 'apiVersion: v1
kind: Pod
metadata:
  name: c'
"""


def test_extractor_handles_fences_markers_indented_blocks_and_curl_bodies() -> None:
    examples = extract_examples(SAMPLE)
    assert [re.search(r"name: (\w)", e).group(1) for e in examples] == ["a", "b", "c"]  # type: ignore[union-attr]
    assert "[!code" not in examples[0] and "正文" not in examples[1] and "'" not in examples[2]


def test_extractor_finds_the_examples() -> None:
    examples = _all_examples()
    assert len(examples) >= MIN_EXAMPLES, [name for name, _ in examples]
    kinds = {re.search(r"^kind:\s*(\S+)", text, re.M).group(1) for _, text in examples}  # type: ignore[union-attr]
    assert {"TensorFusionCluster", "GPUNodeClass", "NodePool", "EC2NodeClass", "Pod"} <= kinds


def test_validate_accepts_every_reference_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = []
    for name, text in _all_examples():
        file = tmp_path / name.replace("#", "_")
        file.write_text(text, encoding="utf-8")
        files.append(str(file))
    code = main(["validate", *files])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.count(": valid") >= 4  # the TensorFusion kinds were checked in depth


def _first_cluster_example() -> str:
    for _, text in _all_examples():
        if "kind: TensorFusionCluster" in text and "minResources" in text:
            return text
    pytest.fail("no TensorFusionCluster example with capacityConfig in the reference documents")


def test_validate_rejects_a_bad_tflops_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = _first_cluster_example()
    broken = re.sub(r'(minResources:\s*\n\s*tflops:\s*)"[^"]*"', r'\1"abc"', example, count=1)
    assert broken != example
    file = tmp_path / "bad.yaml"
    file.write_text(broken, encoding="utf-8")
    assert main(["validate", str(file)]) == 1
    out = capsys.readouterr().out
    assert "spec.gpuPools[0].specTemplate.capacityConfig.minResources.tflops: not a quantity: 'abc'" in out


def test_validate_rejects_a_bad_tflops_in_a_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "pool.yaml"
    file.write_text(
        "apiVersion: tensor-fusion.ai/v1\nkind: GPUPool\nmetadata:\n  name: p\nspec:\n"
        '  capacityConfig:\n    minResources:\n      tflops: "abc"\n      vram: 16Gi\n',
        encoding="utf-8",
    )
    assert main(["validate", str(file)]) == 1
    out = capsys.readouterr().out
    assert "GPUPool/p" in out
    assert "spec.capacityConfig.minResources.tflops: not a quantity: 'abc'" in out
