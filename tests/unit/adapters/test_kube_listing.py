"""`VersionedList` against scripted fetchers (no server): the first read lists in full, page by
page; later reads list metadata only and GET just the objects whose resourceVersion changed or that
are new; a vanished object (404 on GET) is left out, a deleted one forgotten; when many changed it
lists in full again; an unreadable object is reported and skipped on either path."""

from __future__ import annotations

import json
from typing import Any

from gpupool.adapters.kube_listing import VersionedList
from gpupool.core.model.foreign import Node
from gpupool.core.model.unreadable import UnreadableObject


class Server:
    """Nodes by name, each with a uid and resourceVersion; answers pages and GETs, and counts them."""

    def __init__(self, count: int, *, page_size: int = 3) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.page_size = page_size
        self.requests: list[str] = []
        self.version = 0
        for index in range(count):
            self.put(f"n{index:02d}")

    def put(self, name: str, **status: Any) -> None:
        self.version += 1
        uid = self.nodes.get(name, {}).get("metadata", {}).get("uid", f"uid-{name}")
        meta = {"name": name, "uid": uid, "resourceVersion": str(self.version)}
        self.nodes[name] = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": status}

    def _page(self, token: str | None, *, metadata_only: bool) -> bytes:
        names = sorted(self.nodes)
        start = names.index(token) if token else 0
        chunk = names[start : start + self.page_size]
        rest = names[start + self.page_size : start + self.page_size + 1]
        items = [{"metadata": self.nodes[n]["metadata"]} if metadata_only else self.nodes[n] for n in chunk]
        return json.dumps({"metadata": {"continue": rest[0] if rest else ""}, "items": items}).encode()

    def full_page(self, token: str | None) -> bytes:
        self.requests.append("list")
        return self._page(token, metadata_only=False)

    def metadata_page(self, token: str | None) -> bytes:
        self.requests.append("list metadata")
        return self._page(token, metadata_only=True)

    def get_one(self, _namespace: str | None, name: str) -> bytes | None:
        self.requests.append(f"get {name}")
        found = self.nodes.get(name)
        return json.dumps(found).encode() if found is not None else None


def _listing(server: Server, reported: list[UnreadableObject] | None = None) -> VersionedList[Node]:
    return VersionedList(
        Node,
        kind="Node",
        full_page=server.full_page,
        metadata_page=server.metadata_page,
        get_one=server.get_one,
        report=(reported if reported is not None else []).append,
        max_single_reads=3,
    )


def _names(nodes: list[Node]) -> list[str]:
    return [n.name for n in nodes]


def test_the_first_read_lists_in_full_following_continue() -> None:
    server = Server(7)
    nodes = _listing(server).read()
    assert _names(nodes) == [f"n{i:02d}" for i in range(7)]
    assert server.requests == ["list", "list", "list"]


def test_a_second_read_lists_metadata_and_gets_only_what_changed() -> None:
    server = Server(40)
    listing = _listing(server)
    first = listing.read()
    server.put("n05", phase="Changed")
    server.requests.clear()
    second = listing.read()
    assert server.requests.count("get n05") == 1
    assert [r for r in server.requests if r.startswith("get")] == ["get n05"]
    assert "list" not in server.requests  # metadata pages only
    assert _names(second) == _names(first)
    assert second[5].metadata.resource_version == server.nodes["n05"]["metadata"]["resourceVersion"]
    assert all(second[i] is first[i] for i in range(40) if i != 5)  # unchanged objects reused


def test_new_objects_are_read_and_deleted_ones_forgotten() -> None:
    server = Server(40)
    listing = _listing(server)
    listing.read()
    server.put("n99")
    del server.nodes["n00"]
    nodes = listing.read()
    assert _names(nodes)[-1] == "n99" and "n00" not in _names(nodes)
    assert len(nodes) == 40


def test_an_object_gone_between_the_list_and_its_get_is_left_out() -> None:
    server = Server(40)
    listing = _listing(server)
    listing.read()
    server.put("n03")
    answer = server.get_one
    server.get_one = lambda namespace, name: None if name == "n03" else answer(namespace, name)  # type: ignore[method-assign]
    listing = VersionedList(
        Node,
        kind="Node",
        full_page=server.full_page,
        metadata_page=server.metadata_page,
        get_one=lambda namespace, name: server.get_one(namespace, name),
        report=[].append,
    )
    listing.read()  # kept: every node at its current version
    server.put("n03")  # changed again, and deleted before its GET answers
    nodes = listing.read()
    assert "n03" not in _names(nodes) and len(nodes) == 39


def test_many_changes_list_in_full_again() -> None:
    server = Server(100)
    listing = _listing(server)
    listing.read()
    for index in range(4):  # more than max_single_reads=3
        server.put(f"n{index:02d}", phase="Changed")
    server.requests.clear()
    nodes = listing.read()
    assert not [r for r in server.requests if r.startswith("get")]
    assert "list" in server.requests
    assert [n.metadata.resource_version for n in nodes[:4]] == [
        server.nodes[f"n{i:02d}"]["metadata"]["resourceVersion"] for i in range(4)
    ]


def test_an_unreadable_object_is_reported_and_skipped_each_time() -> None:
    server = Server(40)
    server.nodes["n07"]["status"] = {"conditions": "not a list"}
    reported: list[UnreadableObject] = []
    listing = _listing(server, reported)
    assert "n07" not in _names(listing.read())
    assert "n07" not in _names(listing.read())  # not kept: read (and reported) again
    assert [r.name for r in reported] == ["n07", "n07"]
