"""`WatchedList` against a scripted server (no HTTP): the first read lists in full, page by page,
at the first page's resourceVersion; later reads watch from the version reached and apply the
events (changed objects replaced, unchanged ones kept as the same objects, new ones added, deleted
ones forgotten, bookmarks moving the version on); an expired history — an ERROR event with a 410
Status or a 410 answer — lists in full again; an unreadable object is reported and left out on
either path; the stream is closed when a read is done."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from gpupool.adapters.kube.listing import Expired, ObjectDecoder, WatchedList
from gpupool.core.model.foreign import Node
from gpupool.core.model.unreadable import UnreadableObject


class Server:
    """Nodes by name with a global resourceVersion; answers list pages and watches from history."""

    def __init__(self, count: int, *, page_size: int = 3) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.page_size = page_size
        self.requests: list[str] = []
        self.version = 0
        self.history: list[tuple[int, str, dict[str, Any]]] = []
        self.oldest = 0  # watches from before this version are too old (410)
        self.closed = 0
        for index in range(count):
            self.put(f"n{index:02d}")

    def put(self, name: str, **status: Any) -> None:
        self.version += 1
        kind = "MODIFIED" if name in self.nodes else "ADDED"
        meta = {"name": name, "uid": f"uid-{name}", "resourceVersion": str(self.version)}
        self.nodes[name] = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": status}
        self.history.append((self.version, kind, self.nodes[name]))

    def delete(self, name: str) -> None:
        self.version += 1
        gone = self.nodes.pop(name)
        self.history.append(
            (
                self.version,
                "DELETED",
                {**gone, "metadata": {**gone["metadata"], "resourceVersion": str(self.version)}},
            )
        )

    def list_page(self, token: str | None) -> bytes:
        self.requests.append("list")
        names = sorted(self.nodes)
        start = names.index(token) if token else 0
        chunk = names[start : start + self.page_size]
        rest = names[start + self.page_size : start + self.page_size + 1]
        meta = {"continue": rest[0] if rest else "", "resourceVersion": str(self.version)}
        return json.dumps({"metadata": meta, "items": [self.nodes[n] for n in chunk]}).encode()

    def open_watch(self, since: str) -> Iterator[bytes]:
        self.requests.append(f"watch {since}")
        if int(since) < self.oldest:
            raise Expired("too old")
        return self._stream(int(since))

    def _stream(self, since: int) -> Iterator[bytes]:
        try:
            for version, kind, obj in self.history:
                if version > since:
                    yield json.dumps({"type": kind, "object": obj}).encode()
        finally:
            self.closed += 1


def _listing(server: Server, reported: list[UnreadableObject] | None = None) -> WatchedList[Node]:
    decoder = ObjectDecoder(Node, kind="Node", report=(reported if reported is not None else []).append)
    return WatchedList(decoder, list_page=server.list_page, open_watch=server.open_watch)


def _names(nodes: list[Node]) -> list[str]:
    return [n.name for n in nodes]


def test_the_first_read_lists_in_full_following_continue() -> None:
    server = Server(7)
    listing = _listing(server)
    nodes = listing.read()
    assert _names(nodes) == [f"n{i:02d}" for i in range(7)]
    assert server.requests == ["list", "list", "list"]
    assert listing.resource_version == "7"


def test_a_second_read_watches_from_the_list_and_keeps_unchanged_objects() -> None:
    server = Server(40)
    listing = _listing(server)
    first = listing.read()
    server.put("n05", phase="Changed")
    server.requests.clear()
    second = listing.read()
    assert server.requests == ["watch 40"]
    assert _names(second) == _names(first)
    assert second[5].metadata.resource_version == "41"
    assert all(second[i] is first[i] for i in range(40) if i != 5)  # unchanged objects kept
    assert listing.resource_version == "41" and server.closed == 1
    server.requests.clear()
    listing.read()
    assert server.requests == ["watch 41"]  # the next watch starts where this one ended


def test_new_objects_are_added_and_deleted_ones_forgotten() -> None:
    server = Server(40)
    listing = _listing(server)
    listing.read()
    server.put("n99")
    server.delete("n00")
    nodes = listing.read()
    assert _names(nodes)[-1] == "n99" and "n00" not in _names(nodes)
    assert len(nodes) == 40 and _names(nodes) == sorted(_names(nodes))


def test_a_bookmark_moves_the_version_on() -> None:
    server = Server(3)
    listing = _listing(server)
    listing.read()
    server.version = 90
    server.history.append(
        (90, "BOOKMARK", {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": "90"}})
    )
    assert _names(listing.read()) == ["n00", "n01", "n02"]
    assert listing.resource_version == "90"


@pytest.mark.parametrize("how", ["an ERROR event", "a 410 answer"])
def test_an_expired_history_lists_in_full_again(how: str) -> None:
    server = Server(10)
    listing = _listing(server)
    listing.read()
    server.put("n03", phase="Changed")
    if how == "an ERROR event":
        status = {
            "kind": "Status",
            "status": "Failure",
            "code": 410,
            "reason": "Expired",
            "message": "too old",
        }
        server.history = [(11, "ERROR", status)]
    else:
        server.oldest = 11
    server.requests.clear()
    nodes = listing.read()
    assert server.requests[0] == "watch 10" and server.requests[1:] == ["list"] * 4
    assert nodes[3].status.model_dump(exclude_none=True) == Node.model_validate(
        server.nodes["n03"]
    ).status.model_dump(exclude_none=True)
    assert listing.resource_version == "11"


def test_an_unreadable_object_is_reported_and_skipped_on_either_path() -> None:
    server = Server(5)
    server.nodes["n02"]["status"] = {"conditions": "not a list"}
    reported: list[UnreadableObject] = []
    listing = _listing(server, reported)
    assert "n02" not in _names(listing.read())
    server.put("n03", conditions="not a list either")  # readable before, unreadable now: left out
    server.put("n04", phase="Fine")
    nodes = listing.read()
    assert _names(nodes) == ["n00", "n01", "n04"]
    assert [r.name for r in reported] == ["n02", "n03"]
