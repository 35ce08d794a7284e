"""The reads behind `KubeCluster`'s lists: paged, parsed from the bytes, kept current by short watches.

Role: `KubeReader(api_client, …)` lists tensor-fusion.ai objects, nodes and pods the way a client
that reads big clusters must: every list is paged (`limit` = `PAGE_SIZE`, `KEPT_PAGE_SIZE` for the
kinds kept, then `continue`), so no response holds more than one page, and each page is parsed
straight from its bytes into gpupool's models (`kube.reading.read_page`). The kinds the functions
read on every invocation — claims, node and GPUNode summaries (Table rows, `kube.tables`) — go
through `kube.listing.WatchedList`: listed in full once per warm function, then brought up to date
by a watch from the list's resourceVersion (`allowWatchBookmarks`, `timeoutSeconds` =
`WATCH_TIMEOUT_S`) whose stream is read until the server has sent nothing for `quiet_s` (the replay
of what changed comes at once; a quiet stream means it is over) or for at most `WATCH_LIMIT_S` (a
busy kind keeps streaming; what came by then is a consistent state at the last event's
resourceVersion), then closed. Selectors are sent to the API server: pods by `spec.nodeName` /
`status.phase`, nodes by equality labels.

Must not: decide anything, retry, or keep anything but parsed objects at the resourceVersion the
server gave them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from kubernetes.client.exceptions import ApiException
from pydantic import BaseModel

from gpupool.adapters.kube.errors import translated
from gpupool.adapters.kube.listing import (
    Expired,
    ListPage,
    ObjectDecoder,
    OpenWatch,
    WatchedList,
    stream_lines,
)
from gpupool.adapters.kube.reading import read_page
from gpupool.adapters.kube.tables import (
    TABLE,
    GPUNodeSummaryDecoder,
    MissingColumns,
    NodeSummaryDecoder,
    node_summary,
)
from gpupool.adapters.kube.transport import KubeTransport, core_path, group_path
from gpupool.core.model.constants import API_GROUP
from gpupool.core.model.foreign import Node, Pod, PodDisruptionBudget
from gpupool.core.model.node import GPUNode
from gpupool.core.model.unreadable import UnreadableObject

__all__ = [
    "KEPT_PAGE_SIZE",
    "PAGE_SIZE",
    "QUIET_S",
    "WATCH_LIMIT_S",
    "WATCH_TIMEOUT_S",
    "KubeReader",
    "label_selector",
]

VERSION = "v1"
# Items per list request: client-go's pager and kubectl use 500 (a page of pods: ~1 MB).
PAGE_SIZE = 500
# Items per list request of a kept kind (listed once per warm function, then watched): a 10,000-node
# cluster in one page (claims ~0.8 KB, node rows ~1.2 KB, GPUNodes ~1 KB each: under 12 MB a page).
KEPT_PAGE_SIZE = 10_000
# A refreshing watch ends once the server sent nothing for this long…
QUIET_S = 0.1
# … or once it has been read this long (wall seconds)…
WATCH_LIMIT_S = 0.5
# … and the server ends it after this many seconds in any case (its `timeoutSeconds`).
WATCH_TIMEOUT_S = 5

Model = TypeVar("Model", bound=BaseModel)


def label_selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


class KubeReader:
    def __init__(
        self,
        api_client: Any,
        *,
        request_timeout_s: float,
        report: Callable[[UnreadableObject], None],
        quiet_s: float = QUIET_S,
    ) -> None:
        self._http = KubeTransport(api_client)
        self._timeout = request_timeout_s
        self._quiet = quiet_s
        self._report = report
        self._watched: dict[str, WatchedList[Any]] = {}
        self._gpu_node_rows = True  # False once the server's GPUNode table lacked a column

    # ---- fetching ------------------------------------------------------------------------
    def _pages(
        self,
        action: str,
        path: str,
        *,
        accept: str | None = None,
        size: int = PAGE_SIZE,
        selectors: Mapping[str, str] | None = None,
    ) -> ListPage:
        def page(token: str | None) -> bytes:
            query: dict[str, object] = {**(selectors or {}), "limit": size}
            if token:
                query["continue"] = token
            with translated(action):
                return self._http.call("GET", path, query=query, accept=accept, timeout=self._timeout)

        return page

    def _watch(self, action: str, path: str, *, accept: str | None = None) -> OpenWatch:
        def open_watch(resource_version: str) -> Iterator[bytes]:
            query = {
                "watch": True,
                "resourceVersion": resource_version,
                "allowWatchBookmarks": True,
                "timeoutSeconds": WATCH_TIMEOUT_S,
            }
            try:
                with translated(action):
                    response = self._http.open(
                        "GET", path, query=query, accept=accept, timeout=(self._timeout, self._quiet)
                    )
            except Exception as error:  # 410 Gone at the start: the history no longer reaches back
                cause = error.__cause__
                if isinstance(cause, ApiException) and cause.status == 410:
                    raise Expired(str(cause.reason)) from error
                raise
            return stream_lines(response, deadline=time.monotonic() + WATCH_LIMIT_S, quiet_ends=True)

        return open_watch

    def _all(self, model: type[Model], pages: ListPage, *, kind: str) -> list[Model]:
        objects: list[Model] = []
        token: str | None = None
        while True:
            page, meta = read_page(model, pages(token), kind=kind, report=self._report)
            objects.extend(page)
            token = meta.continue_ or None
            if not token:
                return objects

    def _kept(self, key: str, build: Callable[[], WatchedList[Any]]) -> list[Any]:
        watched = self._watched.get(key)
        if watched is None:
            watched = self._watched[key] = build()
        return watched.read()

    # ---- tensor-fusion.ai objects -----------------------------------------------------------
    def custom_objects(self, model: type[Model], plural: str, *, kept: bool = False) -> list[Model]:
        """Every object of a cluster-scoped tensor-fusion.ai kind; `kept`: through WatchedList."""
        kind = str(getattr(model, "KIND", plural))
        path = group_path(API_GROUP, VERSION, plural)
        if not kept:
            return self._all(model, self._pages(f"list {plural}", path), kind=kind)
        pages = self._pages(f"list {plural}", path, size=KEPT_PAGE_SIZE)
        decoder = ObjectDecoder(model, kind=kind, report=self._report)
        watch = self._watch(f"watch {plural}", path)
        found: list[Model] = self._kept(
            plural, lambda: WatchedList(decoder, list_page=pages, open_watch=watch)
        )
        return found

    def gpu_nodes(self, *, summary: bool) -> list[GPUNode]:
        """Every GPUNode, kept by a WatchedList: whole, or (`summary`) as Table rows — or, when
        the server's GPUNode table lacks a column a row is read from, whole ones trimmed to a row."""
        if summary and self._gpu_node_rows:
            path = group_path(API_GROUP, VERSION, GPUNode.PLURAL)
            decoder = GPUNodeSummaryDecoder(report=self._report)
            pages = self._pages("list gpunodes", path, accept=TABLE, size=KEPT_PAGE_SIZE)
            watch = self._watch("watch gpunodes", path, accept=TABLE)
            try:
                rows: list[GPUNode] = self._kept(
                    "gpunodes:summary", lambda: WatchedList(decoder, list_page=pages, open_watch=watch)
                )
                return rows
            except MissingColumns:
                self._gpu_node_rows = False
                self._watched.pop("gpunodes:summary", None)
        whole = self.custom_objects(GPUNode, GPUNode.PLURAL, kept=True)
        return [g.printed() for g in whole] if summary else whole

    # ---- nodes and pods ----------------------------------------------------------------------
    def nodes(self, *, summary: bool, labels: Mapping[str, str] | None) -> list[Node]:
        """Nodes by equality labels; `summary` without labels: Table rows kept by a WatchedList."""
        path = core_path("nodes")
        if not summary or labels:
            selectors = {"labelSelector": label_selector(labels)} if labels else {}
            full = self._all(Node, self._pages("list nodes", path, selectors=selectors), kind="Node")
            return [self._summary(n) for n in full] if summary else full
        decoder = NodeSummaryDecoder(report=self._report)
        pages = self._pages("list nodes", path, accept=TABLE, size=KEPT_PAGE_SIZE)
        watch = self._watch("watch nodes", path, accept=TABLE)
        found: list[Node] = self._kept(
            "nodes:summary", lambda: WatchedList(decoder, list_page=pages, open_watch=watch)
        )
        return found

    @staticmethod
    def _summary(node: Node) -> Node:
        """A full Node read as its Table row would give it (a labelled list is read in full)."""
        ready = next((c for c in node.status.conditions if c.type == "Ready"), None)
        cell = "Unknown" if ready is None else ("Ready" if ready.status == "True" else "NotReady")
        return node_summary(node.metadata, cell + (",SchedulingDisabled" if node.spec.unschedulable else ""))

    def pod_disruption_budgets(self) -> list[PodDisruptionBudget]:
        """PodDisruptionBudgets in all namespaces (policy/v1)."""
        path = group_path("policy", "v1", "poddisruptionbudgets")
        pages = self._pages("list poddisruptionbudgets", path)
        return self._all(PodDisruptionBudget, pages, kind="PodDisruptionBudget")

    def pods(self, *, field_selector: str | None) -> list[Pod]:
        """Pods in all namespaces, by field selector (sent to the server)."""
        selectors = {"fieldSelector": field_selector} if field_selector else {}
        return self._all(Pod, self._pages("list pods", core_path("pods"), selectors=selectors), kind="Pod")
