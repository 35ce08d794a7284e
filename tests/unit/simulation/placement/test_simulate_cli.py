"""`gpupool simulate placement`: bad input is one clear line (exit 2) and writes nothing; outputs;
each mode's gap to the best mode (what the plot's lower panel draws)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpupool.cli import simulate_placement
from gpupool.cli.main import main
from gpupool.simulation.placement import PLACEMENTS, PROTOCOLS

DATA = Path(__file__).parent / "data"
NODES = str(DATA / "openb_nodes_slice.csv")
PODS = str(DATA / "openb_pods_slice.csv")


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_the_cli_offers_exactly_the_simulators_placements() -> None:
    assert simulate_placement.PLACEMENTS == PLACEMENTS
    assert simulate_placement.PROTOCOLS == PROTOCOLS


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--nodes", "missing.csv", "--pods", PODS], "missing.csv: the node list: no such file"),
        (["--nodes", NODES, "--pods", PODS, "--placement", "BestFit", "--placement", "RandomFit",
          "--assignments", "{tmp}/out.csv"], "--assignments needs exactly one --placement"),
        (["--nodes", NODES, "--pods", PODS, "--assignments", "{tmp}/no/out.csv", "--placement", "BestFit"],
         "folder"),
        (["--nodes", PODS, "--pods", PODS], "missing column(s) sn"),
        (["--nodes", NODES], "--nodes and --pods go together"),
        (["--pods", PODS], "--nodes and --pods go together"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_writes_nothing(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    assert main(["simulate", "placement", *args]) == 2
    line = _error(capsys)
    assert line.startswith("gpupool simulate: error: ") and message in line
    assert list(tmp_path.rglob("*")) == []


def test_a_bad_row_is_named_by_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = tmp_path / "pods.csv"
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nok,1,1,1,500\nbad,1,1,1,1500\n", encoding="utf-8"
    )
    assert main(["simulate", "placement", "--nodes", NODES, "--pods", str(pods)]) == 2
    assert f"{pods}:3: task bad: gpu_milli must lie in 1..1000" in _error(capsys)


def test_flags_are_checked_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in (["--inflation", "-1"], ["--inflation", "nan"], ["--placement", "Spread"]):
        with pytest.raises(SystemExit) as caught:
            main(["simulate", "placement", "--nodes", NODES, "--pods", PODS, *bad])
        assert caught.value.code == 2
    assert "--inflation" in capsys.readouterr().err


def test_without_a_subcommand_it_says_which_to_use(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate"]) == 2
    assert "gpupool simulate placement --help" in _error(capsys)


def test_plot_without_matplotlib_says_how_to_get_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "plot.png"
    assert main(["simulate", "placement", "--nodes", NODES, "--pods", PODS, "--plot", str(out)]) == 2
    assert "--plot needs matplotlib: pip install 'gpupool[plot]'" in _error(capsys)
    assert not out.exists()


def test_table_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plot.png"
    args = ["--placement", "BestFit", "--placement", "FragmentationAware", "--plot", str(out)]
    assert main(["simulate", "placement", "--nodes", NODES, "--pods", PODS, *args]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:2] == ["placement", "GPUs"]
    assert [line.split()[0] for line in table[1:3]] == ["BestFit", "FragmentationAware"]
    assert table[1].endswith("+0.0 %")
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_the_gap_to_the_best_is_zero_for_the_best_and_the_shortfall_for_the_others() -> None:
    from types import SimpleNamespace

    best = SimpleNamespace(placement="A", curve=((0.0, 0.0), (10.0, 10.0), (20.0, 18.0)))
    worse = SimpleNamespace(placement="B", curve=((0.0, 0.0), (10.0, 9.0), (20.0, 15.0)))
    grid, gaps = simulate_placement.gaps_to_best([best, worse], points=3)  # type: ignore[list-item]
    assert grid == [0.0, 10.0, 20.0]
    assert gaps == {"A": [0.0, 0.0, 0.0], "B": [0.0, 1.0, 3.0]}
