"""URL paths of the Kubernetes API, parsed into what they address.

`/api/v1/...` is the core group; `/apis/GROUP/VERSION/...` any other. Under either:
`PLURAL[/NAME[/SUBRESOURCE]]` or `namespaces/NS/PLURAL[/NAME[/SUBRESOURCE]]`, except that
`namespaces/NAME/status` and `namespaces/NAME/finalize` address the namespace itself.

Must not: look resources up or touch state.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote


@dataclass(frozen=True)
class ResourcePath:
    group: str
    version: str
    plural: str
    namespace: str | None
    name: str | None
    subresource: str | None


@dataclass(frozen=True)
class DiscoveryPath:
    group: str | None  # None: /apis (the group list); "": /api
    version: str | None


def parse(path: str) -> ResourcePath | DiscoveryPath | None:
    parts = [unquote(part) for part in path.strip("/").split("/") if part]
    if not parts or parts[0] not in ("api", "apis"):
        return None
    if parts[0] == "api":
        if len(parts) == 1:
            return DiscoveryPath("", None)
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) == 1:
            return DiscoveryPath(None, None)
        if len(parts) == 2:
            return DiscoveryPath(parts[1], None)
        group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return DiscoveryPath(group, version)
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    return ResourcePath(group, version, rest[0], namespace, name, subresource)
