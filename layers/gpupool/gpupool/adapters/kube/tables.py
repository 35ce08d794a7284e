"""Summaries from `Table` answers: a kind's rows as the API server prints them, not whole objects.

Role: `TABLE` is the Accept header that asks the API server to print a list (or a watch's events)
as `meta.k8s.io/v1 Table` rows: each row's cells, as the server's own printer fills them, and the
object's metadata (`includeObject=Metadata`, the default). Two decoders read those pages and
events for `kube.listing.WatchedList`:

- `NodeSummaryDecoder` → `Node` summaries (metadata, `spec.unschedulable`, one Ready condition)
  from the row's Status cell, which kube-apiserver's node printer writes as `Ready` (condition
  Ready is True), `NotReady` (False or Unknown) or `Unknown` (no Ready condition), then
  `,SchedulingDisabled` when `spec.unschedulable` is set (`pkg/printers/internalversion`,
  `printNode`);
- `GPUNodeSummaryDecoder` → `GPUNode` summaries (metadata and the status the decisions read:
  phase, total and available TFLOPS and VRAM, GPU count) from the printer columns both
  TensorFusion's GPUNode CRD and gpupool's declare (Phase, Total TFlops, Total VRAM, Available
  TFlops, Available VRAM, GPU Count); apiextensions-apiserver prints a string column's value as
  text and a missing one as null.

A row is a few hundred bytes of cells beside the metadata, where the whole object carries
capacity, conditions, addresses, images, device lists and node info. A Table whose columns lack
one the decoder reads raises `MissingColumns` (the reader then reads whole objects instead).

Must not: read a cell other than those named here, or guess a column the server did not define.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from typing_extensions import TypedDict

from gpupool.adapters.kube.listing import Change, Page, object_key, watch_event
from gpupool.adapters.kube.reading import ListMeta
from gpupool.core.model.base import Condition, ObjectMeta
from gpupool.core.model.foreign import Node, NodeSpec, NodeStatus
from gpupool.core.model.node import GPUNode, GPUNodeSpec, GPUNodeStatus
from gpupool.core.model.unreadable import UnreadableObject
from gpupool.core.quantity import Quantity, QuantityError

__all__ = [
    "TABLE",
    "GPUNodeSummaryDecoder",
    "MissingColumns",
    "NodeSummaryDecoder",
    "node_summary",
]

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
# Distinct GPUNode statuses a decoder keeps to share (a bound, whatever the cells hold).
_STATUSES_KEPT = 4096
Model = TypeVar("Model", bound=BaseModel)

_SPECS = {flag: NodeSpec(unschedulable=flag) for flag in (False, True)}
_STATUSES = {
    "Ready": NodeStatus(conditions=[Condition(type="Ready", status="True")]),
    "NotReady": NodeStatus(conditions=[Condition(type="Ready", status="False")]),
    "Unknown": NodeStatus(),
}


class MissingColumns(Exception):
    """The server's Table for a kind lacks a column a summary is read from."""


# A page's rows are read as plain dicts (a model instance per row and per row object would cost
# more than the row's own metadata); each row's metadata is an ObjectMeta as on a whole object.
class _RowObject(TypedDict, total=False):
    metadata: ObjectMeta


class _Row(TypedDict, total=False):
    cells: list[Any]
    object: _RowObject


class _Column(TypedDict, total=False):
    name: str


class _Table(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    metadata: ListMeta = Field(default_factory=ListMeta)
    # null in a watch's later events: kube-apiserver prints the headers once (NoHeaders after).
    column_definitions: list[_Column] | None = Field(default=None, alias="columnDefinitions")
    rows: list[_Row] | None = None


_NO_METADATA = ObjectMeta()


def node_summary(meta: ObjectMeta, status_cell: str) -> Node:
    """The summary of a node whose row's Status cell reads `status_cell`."""
    spec, status = _node_shape(status_cell)
    return Node(metadata=meta, spec=spec, status=status)


@lru_cache(maxsize=64)
def _node_shape(status_cell: str) -> tuple[NodeSpec, NodeStatus]:
    """The spec and status a Status cell gives (a cluster's nodes share a few cells)."""
    parts = [part.strip() for part in status_cell.split(",")]
    readiness = next((p for p in parts if p in _STATUSES), "Unknown")
    return _SPECS["SchedulingDisabled" in parts], _STATUSES[readiness]


class _TableDecoder(Generic[Model]):
    """Pages and watch events of one kind's Table, each row read by `summary` from its cells
    in `columns` (None where a row is short of one)."""

    kind = ""
    columns: tuple[str, ...] = ()

    def __init__(self, *, report: Callable[[UnreadableObject], None]) -> None:
        self._report = report
        self._positions: tuple[int, ...] | None = None  # a watch's later events carry no definitions

    def summary(self, meta: ObjectMeta, cells: tuple[Any, ...]) -> Model:
        raise NotImplementedError

    def _columns(self, table: _Table) -> tuple[int, ...]:
        if table.column_definitions:
            names = [column.get("name", "") for column in table.column_definitions]
            missing = [c for c in self.columns if c not in names]
            if missing:
                raise MissingColumns(f"the API server's {self.kind} table has no {', '.join(missing)} column")
            self._positions = tuple(names.index(c) for c in self.columns)
        if self._positions is None:
            raise RuntimeError(f"a {self.kind} table row came before the table's column definitions")
        return self._positions

    def _rows(self, table: _Table) -> list[tuple[tuple[str, str], Model]]:
        if not table.rows:
            return []
        positions = self._columns(table)
        width = max(positions) + 1
        found = []
        for row in table.rows:
            meta = (row.get("object") or {}).get("metadata") or _NO_METADATA
            cells = row.get("cells") or []
            if len(cells) < width:
                cells = [*cells, *[None] * (width - len(cells))]
            try:
                found.append((object_key(meta), self.summary(meta, tuple([cells[i] for i in positions]))))
            except (ValueError, ValidationError) as error:
                message = f"{self.kind}/{meta.name} cannot be read, skipped: {error}"
                self._report(
                    UnreadableObject(kind=self.kind, name=meta.name or "", namespace=None, message=message)
                )
        return found

    def page(self, raw: bytes) -> Page[Model]:
        table = _Table.model_validate_json(raw)
        return Page(self._rows(table), table.metadata.resource_version, table.metadata.continue_ or None)

    def change(self, line: bytes) -> Change[Model]:
        kind, raw = watch_event(line, self.kind)
        if kind == "BOOKMARK":
            return Change(kind, None, None, str((raw.get("metadata") or {}).get("resourceVersion") or ""))
        table = _Table.model_validate(raw)
        rows = table.rows or []
        if not rows:
            return Change(kind, None, None, table.metadata.resource_version)
        meta = (rows[0].get("object") or {}).get("metadata") or _NO_METADATA
        version = meta.resource_version or table.metadata.resource_version
        if kind == "DELETED":
            return Change(kind, object_key(meta), None, version)
        summaries = self._rows(table)
        return Change(kind, object_key(meta), summaries[0][1] if summaries else None, version)


class NodeSummaryDecoder(_TableDecoder[Node]):
    kind = "Node"
    columns = ("Status",)

    def summary(self, meta: ObjectMeta, cells: tuple[Any, ...]) -> Node:
        (status,) = cells
        if not isinstance(status, str):
            raise ValueError(f"its Status cell is {status!r}")
        return node_summary(meta, status)


class GPUNodeSummaryDecoder(_TableDecoder[GPUNode]):
    kind = "GPUNode"
    columns = ("Phase", "Total TFlops", "Total VRAM", "Available TFlops", "Available VRAM", "GPU Count")

    def __init__(self, *, report: Callable[[UnreadableObject], None]) -> None:
        super().__init__(report=report)
        # One status per distinct row of cells: a cluster's GPUNodes repeat a few (full, empty,
        # the same GPU model), and a status is frozen, so rows with the same cells share it. The
        # key holds each cell's type beside it, so "8" and 8 (or 1, 1.0 and true) never share.
        self._statuses: dict[tuple[tuple[Any, ...], tuple[type, ...]], GPUNodeStatus | None] = {}

    def summary(self, meta: ObjectMeta, cells: tuple[Any, ...]) -> GPUNode:
        key = (cells, tuple(map(type, cells)))
        try:
            status = self._statuses.get(key, _UNSEEN)
        except TypeError:  # a list or object in a cell: no key, and no quantity or count either
            status = _status(cells)
        if status is _UNSEEN:
            status = _status(cells)
            if len(self._statuses) < _STATUSES_KEPT:
                self._statuses[key] = status
        return GPUNode(metadata=meta, spec=_NO_SPEC, status=status)


_UNSEEN: Any = object()
_NO_SPEC = GPUNodeSpec()


def _status(cells: tuple[Any, ...]) -> GPUNodeStatus | None:
    """The status a GPUNode row's cells give (None: no status at all); ValueError for a bad cell."""
    phase, total_tflops, total_vram, available_tflops, available_vram, count = cells
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
        raise ValueError(f"its GPU Count cell is {count!r}")
    if all(cell is None for cell in cells):
        return None
    return GPUNodeStatus(
        phase=phase if isinstance(phase, str) else "Pending",
        total_tflops=_quantity(total_tflops),
        total_vram=_quantity(total_vram),
        available_tflops=_quantity(available_tflops),
        available_vram=_quantity(available_vram),
        total_gpus=count,
    )


def _quantity(cell: Any) -> Quantity | None:
    if cell is None:
        return None
    try:
        return Quantity.parse(cell)
    except QuantityError as error:
        raise ValueError(str(error)) from error
