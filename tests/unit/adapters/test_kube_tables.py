"""GPUNode summaries from a `Table` page (`kube_tables.GPUNodeSummaryDecoder`): each row's status
read from the printer columns by name; rows with the same cells share one frozen status, while a
cell of another JSON type never takes a status read from a lookalike (a `true` where a `1` was is
still reported unreadable and skipped, not read as the `1`'s status)."""

from __future__ import annotations

import json
from typing import Any

from gpupool.adapters.kube_tables import GPUNodeSummaryDecoder
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
