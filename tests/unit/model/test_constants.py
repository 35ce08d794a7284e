"""TensorFusion names: every label/annotation in the facts file is declared, and the helpers build names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpupool.core.model import constants as c

# The facts file's "Labels and annotations" section, kept in the repository (tests/fixtures).
FACTS = Path(__file__).resolve().parents[2] / "fixtures" / "tensorfusion-labels.md"


def _declared() -> set[str]:
    return {value for value in vars(c).values() if isinstance(value, str)}


def test_every_label_and_annotation_in_the_facts_is_declared() -> None:
    text = FACTS.read_text(encoding="utf-8")
    section = text.split("## Labels and annotations", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for token in re.findall(r"`([^`]+)`", section):
        name = re.split(r"[=:<\s]", token, maxsplit=1)[0]
        if "|" in name:  # `tflops-request|limit` names tflops-request and tflops-limit
            first, *others = name.split("|")
            stem = first.rsplit("-", 1)[0]
            names.update([first, *(f"{stem}-{other}" for other in others)])
        elif re.fullmatch(r"[a-z][a-z0-9._-]*(/[a-z0-9._-]+)?", name) and "index_" not in name:
            names.add(name)
    missing = []
    for name in sorted(names):
        full = name if "/" in name or name == "managed-by" else f"{c.DOMAIN}/{name}"
        if full not in _declared() and not full.startswith(c.LABEL_POOL_PREFIX):
            missing.append(full)
    assert len(names) >= 30
    assert missing == []


def test_helpers() -> None:
    assert c.pool_label("elastic") == "tensor-fusion.ai/pool-elastic"
    assert c.index_resource(0) == "tensor-fusion.ai/index_0"
    assert c.index_resource(15) == "tensor-fusion.ai/index_f"
    with pytest.raises(ValueError, match=r"0\.\.15"):
        c.index_resource(16)
