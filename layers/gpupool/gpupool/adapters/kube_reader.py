"""The reads behind `KubeCluster`'s lists: paged, parsed from the bytes, unchanged objects reused.

Role: `KubeReader(api_client, …)` lists tensor-fusion.ai objects, nodes and pods the way a
client that reads big clusters must: every list is paged (`limit` = `PAGE_SIZE`, or
`METADATA_PAGE_SIZE` for metadata-only lists, then `continue`), so no response holds more
than one page; each page is parsed straight from its
bytes into gpupool's models (`kube_reading.read_page`); and the kinds the functions list on
every invocation (claims, nodes, GPUNodes, pods by label) go through `kube_listing.VersionedList`,
which after the first read lists metadata only and re-reads in full just the objects whose
resourceVersion changed. Selectors are sent to the API server (pods by label or `spec.nodeName`).

Must not: decide anything, retry, or keep anything but parsed objects tied to their uid and
resourceVersion (a reused object is always the one the current list names at that version).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client as k8s
from pydantic import BaseModel

from gpupool.adapters.kube_errors import read_body, translated
from gpupool.adapters.kube_listing import ObjectFetcher, PageFetcher, VersionedList
from gpupool.adapters.kube_reading import read_page
from gpupool.core.model.constants import API_GROUP
from gpupool.core.model.unreadable import UnreadableObject
from gpupool.service.errors import NotFound

__all__ = ["METADATA_LIST", "METADATA_PAGE_SIZE", "PAGE_SIZE", "KubeReader"]

VERSION = "v1"
# Items per list request: client-go's pager and kubectl use 500 (a page of pods: ~1 MB).
PAGE_SIZE = 500
# Items per metadata-only list request: a tenth of the bytes per item, so ten times the items.
METADATA_PAGE_SIZE = 5000
# The Accept header that asks for names, uids, resourceVersions and labels only.
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

Model = TypeVar("Model", bound=BaseModel)


class KubeReader:
    def __init__(
        self, api_client: Any, *, request_timeout_s: float, report: Callable[[UnreadableObject], None]
    ) -> None:
        self._custom: Any = k8s.CustomObjectsApi(api_client)
        self._core: Any = k8s.CoreV1Api(api_client)
        self._timeout = request_timeout_s
        self._report = report
        self._versioned: dict[str, VersionedList[Any]] = {}

    # ---- fetching ------------------------------------------------------------------------
    def _fetch(self, action: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> bytes:
        with translated(action):
            return read_body(call(*args, _preload_content=False, _request_timeout=self._timeout, **kwargs))

    def _pages(
        self, action: str, call: Callable[..., Any], *args: Any, metadata_only: bool = False, **kwargs: Any
    ) -> PageFetcher:
        def page(token: str | None) -> bytes:
            extra: dict[str, Any] = {"limit": METADATA_PAGE_SIZE if metadata_only else PAGE_SIZE}
            if token:
                extra["_continue"] = token
            if metadata_only:
                extra["_headers"] = {"Accept": METADATA_LIST}
            return self._fetch(action, call, *args, **kwargs, **extra)

        return page

    def _getter(self, action: str, get: Callable[[str | None, str], Any]) -> ObjectFetcher:
        def get_one(namespace: str | None, name: str) -> bytes | None:
            try:
                with translated(f"{action} {name}"):
                    return read_body(get(namespace, name))
            except NotFound:
                return None

        return get_one

    def _all(self, model: type[Model], pages: PageFetcher, *, kind: str) -> list[Model]:
        objects: list[Model] = []
        token: str | None = None
        while True:
            page, token = read_page(model, pages(token), kind=kind, report=self._report)
            objects.extend(page)
            if not token:
                return objects

    def _versioned_list(
        self,
        key: str,
        model: type[Model],
        *,
        kind: str,
        pages: Callable[[bool], PageFetcher],
        get_one: ObjectFetcher,
    ) -> list[Model]:
        versioned = self._versioned.get(key)
        if versioned is None:
            versioned = VersionedList(
                model,
                kind=kind,
                full_page=pages(False),
                metadata_page=pages(True),
                get_one=get_one,
                report=self._report,
            )
            self._versioned[key] = versioned
        found: list[Model] = versioned.read()
        return found

    # ---- tensor-fusion.ai objects -----------------------------------------------------------
    def custom_objects(self, model: type[Model], plural: str, *, reuse: bool = False) -> list[Model]:
        """Every object of a cluster-scoped tensor-fusion.ai kind; `reuse`: through VersionedList."""
        kind = str(getattr(model, "KIND", plural))
        call = self._custom.list_cluster_custom_object

        def pages(metadata_only: bool) -> PageFetcher:
            return self._pages(
                f"list {plural}", call, API_GROUP, VERSION, plural, metadata_only=metadata_only
            )

        if not reuse:
            return self._all(model, pages(False), kind=kind)

        def get(_namespace: str | None, name: str) -> Any:
            return self._custom.get_cluster_custom_object(
                API_GROUP, VERSION, plural, name, _preload_content=False, _request_timeout=self._timeout
            )

        return self._versioned_list(
            plural, model, kind=kind, pages=pages, get_one=self._getter(f"get {plural}", get)
        )

    # ---- nodes and pods ----------------------------------------------------------------------
    def nodes(self, model: type[Model]) -> list[Model]:
        def pages(metadata_only: bool) -> PageFetcher:
            return self._pages("list nodes", self._core.list_node, metadata_only=metadata_only)

        def get(_namespace: str | None, name: str) -> Any:
            return self._core.read_node(name, _preload_content=False, _request_timeout=self._timeout)

        return self._versioned_list(
            "nodes", model, kind="Node", pages=pages, get_one=self._getter("get node", get)
        )

    def pods(
        self, model: type[Model], *, field_selector: str | None, label_selector: str | None
    ) -> list[Model]:
        """Pods in all namespaces; by field selector (a node's: few, read in full each time) or
        by label selector (kept objects reused)."""
        selectors = {
            key: value
            for key, value in (("field_selector", field_selector), ("label_selector", label_selector))
            if value is not None
        }
        call = self._core.list_pod_for_all_namespaces

        def pages(metadata_only: bool) -> PageFetcher:
            return self._pages("list pods", call, metadata_only=metadata_only, **selectors)

        if field_selector is not None:
            return self._all(model, pages(False), kind="Pod")

        def get(namespace: str | None, name: str) -> Any:
            return self._core.read_namespaced_pod(
                name, namespace or "default", _preload_content=False, _request_timeout=self._timeout
            )

        return self._versioned_list(
            f"pods:{label_selector or ''}",
            model,
            kind="Pod",
            pages=pages,
            get_one=self._getter("get pod", get),
        )
