"""The openb trace reader both simulations use: arrival order, every bad row named by file and
line, missing columns or rows refused, optional columns, and a pod list file read with one
`TraceError` for what cannot be read."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupool.simulation.openb import (
    TraceError,
    TraceTask,
    arrival_order,
    parse_nodes,
    parse_tasks,
    read_pod_list,
    split_csv,
)

NODE_HEADER = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
TASK_HEADER = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "creation_time"]
TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


def _task(name: str, created: int | None = 0) -> TraceTask:
    return TraceTask(name, 1000, 1024, 1, 500, (), created)


def _rows(header: list[str], *rows: tuple[object, ...]) -> list[dict[str, str]]:
    return [dict(zip(header, map(str, row), strict=True)) for row in rows]


def test_arrival_is_creation_time_then_name_or_name_alone() -> None:
    tasks = [_task("b", created=5), _task("c", created=1), _task("a", created=5)]
    assert [t.name for t in arrival_order(tasks)] == ["c", "a", "b"]
    untimed = [_task("b", created=None), _task("c", created=1), _task("a", created=5)]
    assert [t.name for t in arrival_order(untimed)] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (("t", 1000, 1024, 1, 0, "", 0), "gpu_milli must lie in 1..1000"),
        (("t", 1000, 1024, 0, 300, "", 0), "with num_gpu 0"),
        (("t", 1000, 1024, 2, 500, "", 0), "only whole GPUs"),
        (("t", "x", 1024, 1, 500, "", 0), "cpu_milli must be a whole number"),
        (("t", 1000, -5, 1, 500, "", 0), "memory_mib must not be negative"),
        (("", 1000, 1024, 1, 500, "", 0), "name is empty"),
    ],
)
def test_bad_task_rows_are_named_by_file_and_line(row: tuple[object, ...], message: str) -> None:
    rows = _rows(TASK_HEADER, ("ok", 1000, 1024, 1, 500, "", 0), row)
    with pytest.raises(TraceError, match=message) as caught:
        parse_tasks(TASK_HEADER, rows, source="pods.csv")
    assert str(caught.value).startswith("pods.csv:3:")


def test_files_missing_columns_or_rows_are_refused() -> None:
    with pytest.raises(TraceError, match=r"missing column.*gpu_milli"):
        parse_tasks(["name", "cpu_milli", "memory_mib", "num_gpu"], [], source="pods.csv")
    with pytest.raises(TraceError, match="no tasks"):
        parse_tasks(TASK_HEADER, [], source="pods.csv")
    with pytest.raises(TraceError, match="appears twice"):
        parse_tasks(
            TASK_HEADER, _rows(TASK_HEADER, ("t", 1, 1, 0, 0, "", 0), ("t", 1, 1, 0, 0, "", 0)), source="p"
        )
    with pytest.raises(TraceError, match="no node has a GPU"):
        parse_nodes(NODE_HEADER, _rows(NODE_HEADER, ("n", 1000, 1024, 0, "")), source="nodes.csv")
    with pytest.raises(TraceError, match="no model"):
        parse_nodes(NODE_HEADER, _rows(NODE_HEADER, ("n", 1000, 1024, 2, "")), source="nodes.csv")
    tasks = parse_tasks(
        TASK_HEADER, _rows(TASK_HEADER, ("t", 1, 1, 1, 300, "V100M16|V100M32", "")), source="p"
    )
    assert tasks[0].gpu_spec == ("V100M16", "V100M32") and tasks[0].creation_time is None


def test_a_pod_list_file_reads_both_times_and_names_what_it_cannot_read(tmp_path: Path) -> None:
    tasks = {t.name: t for t in read_pod_list(TRACES / "openb_format.csv")}
    assert (tasks["synthetic-share"].creation_time, tasks["synthetic-share"].deletion_time) == (100, 1100)
    assert (
        tasks["synthetic-cpu-only"].gpu_demand_milli == 0
        and tasks["synthetic-eight"].gpu_demand_milli == 8000
    )
    with pytest.raises(TraceError, match=r"absent\.csv: cannot read"):
        read_pod_list(tmp_path / "absent.csv")
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"name,cpu_milli\n\xff\xfe\n")
    with pytest.raises(TraceError, match=r"bad\.csv: cannot read: not UTF-8 text"):
        read_pod_list(bad)


def test_split_csv_gives_the_header_and_the_rows() -> None:
    header, rows = split_csv("sn,gpu\na,1\nb,2\n", source="nodes.csv")
    assert header == ["sn", "gpu"] and rows == [{"sn": "a", "gpu": "1"}, {"sn": "b", "gpu": "2"}]
    assert split_csv("", source="empty.csv") == ([], [])
