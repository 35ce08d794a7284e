"""Listing a kind cheaply when most of it has not changed: objects kept by uid and resourceVersion.

Role: `VersionedList(model, kind=…, full_page=…, metadata_page=…, get_one=…, report=…)`;
`read()` returns every listed object, parsed. The first read lists the kind in full, page by
page (`limit` / `continue`), and keeps each parsed object under its uid with its
resourceVersion. Later reads list metadata only (a `PartialObjectMetadataList`: name, uid,
resourceVersion, labels — a fraction of a pod's or a node's bytes) and reuse each kept object
whose resourceVersion is the listed one: the API server gives an object a new resourceVersion
with every change, so a kept object at the listed version is exactly the listed object. The few
that changed or are new are read with GET; when many changed (more than `max_single_reads`, or
more than 5 % of the list, and more than one) the kind is listed in full again. Objects no longer listed are
forgotten. Each read thus returns exactly the objects the list names, each as fresh as the
list or fresher — what a full list returns, without parsing what did not change.

Must not: decide anything, retry, translate errors (the fetchers do), or reuse an object
without a uid and resourceVersion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from gpupool.adapters.kube_reading import ListMeta, read_page
from gpupool.core.model.unreadable import UnreadableObject

__all__ = ["VersionedList"]

Model = TypeVar("Model", bound=BaseModel)
# continue token (None: the first page) → the raw JSON of one page
PageFetcher = Callable[[str | None], bytes]
# (namespace or None, name) → the raw JSON of the object, None when it is gone (404)
ObjectFetcher = Callable[[str | None, str], bytes | None]

_CHANGED_SHARE = 0.05


class _Identity(BaseModel):
    """What a metadata-only list tells of one object (labels, annotations… are not parsed)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str = ""
    namespace: str | None = None
    uid: str = ""
    resource_version: str = Field(default="", alias="resourceVersion")


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore")

    metadata: _Identity = Field(default_factory=_Identity)


class _MetadataPage(BaseModel):
    """A `PartialObjectMetadataList` page: its items' identities and the `continue` token."""

    model_config = ConfigDict(extra="ignore")

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[_Item] | None = None

    @property
    def identities(self) -> list[_Identity]:
        return [item.metadata for item in self.items or []]


def _identity(meta: Any) -> tuple[str, str] | None:
    uid, version = getattr(meta, "uid", None), getattr(meta, "resource_version", None)
    return (uid, version) if uid and version else None


class VersionedList(Generic[Model]):
    def __init__(
        self,
        model: type[Model],
        *,
        kind: str,
        full_page: PageFetcher,
        metadata_page: PageFetcher,
        get_one: ObjectFetcher,
        report: Callable[[UnreadableObject], None],
        max_single_reads: int = 50,
    ) -> None:
        self._model, self._kind, self._report = model, kind, report
        self._full_page, self._metadata_page, self._get_one = full_page, metadata_page, get_one
        self._max_single_reads = max_single_reads
        self._kept: dict[str, tuple[str, Model]] = {}  # uid → (resourceVersion, object)

    def read(self) -> list[Model]:
        if not self._kept:
            return self._read_full()
        listed = self._listed_metadata()
        missing = [(ns, name) for ns, name, uid, version in listed if self._kept_at(uid, version) is None]
        allowed = min(self._max_single_reads, max(1, int(len(listed) * _CHANGED_SHARE)))
        if len(missing) > allowed:
            return self._read_full()
        fetched = {key: self._read_one(*key) for key in missing}
        kept: dict[str, tuple[str, Model]] = {}
        objects: list[Model] = []
        for ns, name, uid, version in listed:
            found = self._kept_at(uid, version)
            if found is None:
                found = fetched.get((ns, name))
                if found is None:  # gone since the list, or unreadable (reported)
                    continue
            identity = _identity(getattr(found, "metadata", None))
            if identity is not None:
                kept[identity[0]] = (identity[1], found)
            objects.append(found)
        self._kept = kept
        return objects

    def _kept_at(self, uid: str, version: str) -> Model | None:
        kept = self._kept.get(uid)
        return kept[1] if kept is not None and kept[0] == version else None

    def _read_full(self) -> list[Model]:
        objects: list[Model] = []
        token: str | None = None
        while True:
            page, token = read_page(self._model, self._full_page(token), kind=self._kind, report=self._report)
            objects.extend(page)
            if not token:
                break
        kept: dict[str, tuple[str, Model]] = {}
        for found in objects:
            identity = _identity(getattr(found, "metadata", None))
            if identity is not None:
                kept[identity[0]] = (identity[1], found)
        self._kept = kept
        return objects

    def _listed_metadata(self) -> list[tuple[str | None, str, str, str]]:
        """(namespace, name, uid, resourceVersion) of every listed object, in list order."""
        listed: list[tuple[str | None, str, str, str]] = []
        token: str | None = None
        while True:
            page = _MetadataPage.model_validate_json(self._metadata_page(token))
            listed.extend((m.namespace, m.name, m.uid, m.resource_version) for m in page.identities)
            token = page.metadata.continue_
            if not token:
                return listed

    def _read_one(self, namespace: str | None, name: str) -> Model | None:
        raw = self._get_one(namespace, name)
        if raw is None:
            return None
        wrapped = b'{"items":[' + raw + b"]}"
        page, _ = read_page(self._model, wrapped, kind=self._kind, report=self._report)
        return page[0] if page else None
