"""Node summaries from `Table` answers: what `kubectl get nodes` reads, not the whole Node.

Role: `TABLE` is the Accept header that asks the API server to print a list (or a watch's
events) as `meta.k8s.io/v1 Table` rows: each row's cells, as the server's own printer fills them,
and the object's metadata (`includeObject=Metadata`, the default). `NodeSummaryDecoder` reads
those pages and events into `Node` summaries — the metadata, `spec.unschedulable` and one Ready
condition — from the row's `Status` cell, which kube-apiserver's node printer writes as `Ready`
(condition Ready is True), `NotReady` (False or Unknown) or `Unknown` (no Ready condition), then
`,SchedulingDisabled` when `spec.unschedulable` is set (`pkg/printers/internalversion`,
`printNode`). A node's row is a few hundred bytes of cells beside its metadata, where the whole
Node carries its capacity, conditions, addresses, images and node info. Shared spec and status
objects are reused across rows (the models are frozen).

Must not: read any cell but Status, or guess a column the server did not define (a Table without
a Status column is an error, not an empty status).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpupool.adapters.kube_listing import Change, Expired, Page, expired_status, object_key
from gpupool.adapters.kube_reading import ListMeta
from gpupool.core.model.base import Condition, ObjectMeta
from gpupool.core.model.foreign import Node, NodeSpec, NodeStatus
from gpupool.core.model.unreadable import UnreadableObject

__all__ = ["TABLE", "NodeSummaryDecoder", "node_summary"]

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
STATUS_COLUMN = "Status"

_SPECS = {flag: NodeSpec(unschedulable=flag) for flag in (False, True)}
_STATUSES = {
    "Ready": NodeStatus(conditions=[Condition(type="Ready", status="True")]),
    "NotReady": NodeStatus(conditions=[Condition(type="Ready", status="False")]),
    "Unknown": NodeStatus(),
}


class _Column(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = ""


class _RowObject(BaseModel):
    model_config = ConfigDict(extra="ignore")

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore")

    cells: list[Any] = Field(default_factory=list)
    object: _RowObject = Field(default_factory=_RowObject)


class _Table(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    metadata: ListMeta = Field(default_factory=ListMeta)
    column_definitions: list[_Column] = Field(default_factory=list, alias="columnDefinitions")
    rows: list[_Row] | None = None


def node_summary(meta: ObjectMeta, status_cell: str) -> Node:
    """The summary of a node whose row's Status cell reads `status_cell`."""
    parts = [part.strip() for part in status_cell.split(",")]
    readiness = next((p for p in parts if p in _STATUSES), "Unknown")
    return Node.model_construct(
        metadata=meta, spec=_SPECS["SchedulingDisabled" in parts], status=_STATUSES[readiness]
    )


class NodeSummaryDecoder:
    """Table pages and watch events of Nodes, read into summaries (`node_summary`)."""

    def __init__(self, *, report: Callable[[UnreadableObject], None]) -> None:
        self._report = report
        self._status_index: int | None = None  # a watch's later events carry no column definitions

    def _index(self, table: _Table) -> int:
        if table.column_definitions:
            names = [column.name for column in table.column_definitions]
            if STATUS_COLUMN not in names:
                raise RuntimeError(f"the API server's Node table has no {STATUS_COLUMN} column: {names}")
            self._status_index = names.index(STATUS_COLUMN)
        if self._status_index is None:
            raise RuntimeError("a Node table row came before the table's column definitions")
        return self._status_index

    def _summaries(self, table: _Table) -> list[tuple[tuple[str, str], Node]]:
        if not table.rows:
            return []
        index = self._index(table)
        found = []
        for row in table.rows:
            meta = row.object.metadata
            cell = row.cells[index] if index < len(row.cells) else None
            if not isinstance(cell, str):
                message = f"Node/{meta.name} cannot be read, skipped: its Status cell is {cell!r}"
                self._report(
                    UnreadableObject(kind="Node", name=meta.name or "", namespace=None, message=message)
                )
                continue
            found.append((object_key(meta), node_summary(meta, cell)))
        return found

    def page(self, raw: bytes) -> Page[Node]:
        table = _Table.model_validate_json(raw)
        return Page(self._summaries(table), table.metadata.resource_version, table.metadata.continue_ or None)

    def change(self, line: bytes) -> Change[Node]:
        event = json.loads(line)
        kind, raw = str(event.get("type") or ""), event.get("object") or {}
        if kind == "ERROR":
            if expired_status(raw):
                raise Expired(str(raw.get("message") or "resourceVersion too old"))
            raise RuntimeError(f"watch nodes: {raw.get('message') or raw}")
        if kind == "BOOKMARK":
            version = str((raw.get("metadata") or {}).get("resourceVersion") or "")
            return Change(kind, None, None, version)
        table = _Table.model_validate(raw)
        rows = table.rows or []
        if not rows:
            return Change(kind, None, None, table.metadata.resource_version)
        meta = rows[0].object.metadata
        version = meta.resource_version or table.metadata.resource_version
        if kind == "DELETED":
            return Change(kind, object_key(meta), None, version)
        summaries = self._summaries(table)
        return Change(kind, object_key(meta), summaries[0][1] if summaries else None, version)
