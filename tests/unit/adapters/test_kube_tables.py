"""GPUNode summaries from a `Table` page (`kube.tables.GPUNodeSummaryDecoder`): each row's status
read from the printer columns by name; rows with the same cells share one frozen status, while a
cell of another JSON type never takes a status read from a lookalike (a `true` where a `1` was is
still reported unreadable and skipped, not read as the `1`'s status)."""

from __future__ import annotations

import json
from typing import Any

from gpupool.adapters.kube.tables import GPUNodeSummaryDecoder
from gpupool.core.model.unreadable import UnreadableObject

COLUMNS = [
    "Name",
    "Phase",
    "Total TFlops",
    "Total VRAM",
    "Available TFlops",
    "Available VRAM",
    "GPU Count",
    "Age",
]


def _page(*rows: tuple[str, list[Any]]) -> bytes:
    return json.dumps(
        {
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "7"},
            "columnDefinitions": [{"name": name, "type": "string"} for name in reversed(COLUMNS)],
            "rows": [
                {"cells": list(reversed([name, *cells, "1d"])), "object": {"metadata": {"name": name}}}
                for name, cells in rows
            ],
        }
    ).encode()


def test_rows_with_the_same_cells_share_a_status_and_each_reads_its_own() -> None:
    reported: list[UnreadableObject] = []
    decoder = GPUNodeSummaryDecoder(report=reported.append)
    page = decoder.page(
        _page(
            ("g1", ["Running", "1000", "192Gi", "250", "48Gi", 8]),
            ("g2", ["Running", "1000", "192Gi", "250", "48Gi", 8]),
            ("g3", ["Running", "1000", "192Gi", "1000", "192Gi", 8]),
        )
    )
    by_name = {key[1]: summary for key, summary in page.objects}
    g1, g2, g3 = (by_name[n].status for n in ("g1", "g2", "g3"))
    assert g1 is not None and g2 is not None and g3 is not None
    assert g1 is g2 and g3 is not g1
    assert (str(g1.available_tflops), str(g3.available_tflops), g3.total_gpus, g3.phase) == (
        "250",
        "1k",
        8,
        "Running",
    )
    assert page.resource_version == "7" and reported == []


def test_a_cell_of_another_type_is_judged_on_its_own() -> None:
    reported: list[UnreadableObject] = []
    decoder = GPUNodeSummaryDecoder(report=reported.append)
    page = decoder.page(
        _page(
            ("g1", ["Running", 1, "1Gi", 1, "1Gi", 1]),
            ("g2", ["Running", True, "1Gi", 1, "1Gi", 1]),  # equal to 1 in Python, not a quantity
            ("g3", ["Running", 1, "1Gi", 1, "1Gi", True]),  # not a GPU count
        )
    )
    assert [key[1] for key, _ in page.objects] == ["g1"]
    assert [r.name for r in reported] == ["g2", "g3"]


def test_short_rows_rows_without_metadata_and_cells_of_any_json_shape() -> None:
    # A row short of a column reads it as null; a row without its object is named "" (as a whole
    # object without metadata is); a list or object in a cell is no quantity: reported and skipped.
    reported: list[UnreadableObject] = []
    decoder = GPUNodeSummaryDecoder(report=reported.append)
    columns = COLUMNS[:-1]  # "GPU Count" last: a short row lacks it
    full = ["Running", "1000", "192Gi", "250", "48Gi", 8]

    def row(name: str | None, cells: list[Any]) -> dict[str, Any]:
        return {"cells": cells} if name is None else {"cells": cells, "object": {"metadata": {"name": name}}}

    raw = {
        "kind": "Table",
        "metadata": {"resourceVersion": "9"},
        "columnDefinitions": [{"name": name} for name in columns],
        "rows": [
            row("short", ["short", *full[:-1]]),
            row(None, ["", *full]),
            row("odd", ["odd", "Running", "1000", ["a"], "250", "48Gi", 8]),
            row("phase", ["phase", {"x": 1}, "1000", "192Gi", "250", "48Gi", 8]),
        ],
    }
    page = decoder.page(json.dumps(raw).encode())
    by_name = {key[1]: summary for key, summary in page.objects}
    assert sorted(by_name) == ["", "phase", "short"]
    short_status = by_name["short"].status
    assert short_status is not None and short_status.total_gpus is None and short_status.phase == "Running"
    phase_status = by_name["phase"].status
    assert phase_status is not None and phase_status.phase == "Pending"
    assert [r.name for r in reported] == ["odd"] and "not a quantity" in reported[0].message


def test_a_watchs_later_events_carry_null_column_definitions() -> None:
    """kube-apiserver announces a Table watch's columns in the first event only; the later ones
    carry `columnDefinitions: null` (NoHeaders), read with the columns the first announced."""
    decoder = GPUNodeSummaryDecoder(report=lambda _unreadable: None)

    def event(name: str, *, headers: bool) -> bytes:
        table = json.loads(_page((name, ["Running", "1000", "192Gi", "250", "48Gi", 8])))
        if not headers:
            table["columnDefinitions"] = None
        return json.dumps({"type": "ADDED", "object": table}).encode()

    first = decoder.change(event("a", headers=True))
    later = decoder.change(event("b", headers=False))
    assert first.obj is not None and later.obj is not None and later.obj.status is not None
    assert later.obj.status.total_gpus == 8
