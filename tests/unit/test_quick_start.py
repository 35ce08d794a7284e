"""The README's Quick start is what CI runs: `.ci/run` executes exactly the README's test command,
neither hides pip's progress (`-q`), and the README says which Python it needs — the one
`pyproject.toml` requires."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _quick_start_lines() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    demo, tests = _quick_start_lines()
    assert demo.endswith(".venv/bin/gpupool demo") and tests.endswith(".venv/bin/python -m pytest -q")
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert tests in ci


def test_pip_shows_its_progress() -> None:
    for line in [*_quick_start_lines(), *(ROOT / ".ci" / "run").read_text().splitlines()]:
        for command in line.split("&&"):
            if "pip install" in command:
                assert not {"-q", "--quiet"} & set(command.split()), command


def test_the_readme_names_the_python_pyproject_requires() -> None:
    required = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    version = required.removeprefix(">=")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"Python {version} or newer" in readme and f'requires-python = "{required}"' in readme
