"""The registry of served resource types: built-ins plus whatever CRDs are installed.

Lookups by (group, version, plural) drive routing; discovery reads `group_versions()` and
`resources()`. Installing a CRD's types replaces earlier types of the same CRD.

Must not: hold objects or know about HTTP.
"""

from __future__ import annotations

import re
import threading

from gpupool.sandbox.kubeapi.resources import BUILTIN_TYPES, ResourceType

TypeKey = tuple[str, str, str]


class Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._types: dict[TypeKey, ResourceType] = {}
        self._by_crd: dict[str, list[TypeKey]] = {}
        for rt in BUILTIN_TYPES:
            self._types[(rt.group, rt.version, rt.plural)] = rt

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            return self._types.get((group, version, plural))

    def install(self, crd_name: str, types: list[ResourceType]) -> None:
        with self._lock:
            for key in self._by_crd.pop(crd_name, []):
                self._types.pop(key, None)
            keys = [(rt.group, rt.version, rt.plural) for rt in types]
            for key, rt in zip(keys, types, strict=True):
                self._types[key] = rt
            self._by_crd[crd_name] = keys

    def uninstall(self, crd_name: str) -> list[ResourceType]:
        with self._lock:
            return [rt for key in self._by_crd.pop(crd_name, []) if (rt := self._types.pop(key, None))]

    def group_versions(self) -> dict[str, list[str]]:
        """Group → served versions, the first being the preferred one."""
        with self._lock:
            found: dict[str, list[str]] = {}
            for group, version, _plural in self._types:
                versions = found.setdefault(group, [])
                if version not in versions:
                    versions.append(version)
            return {
                group: sorted(versions, key=_version_priority) for group, versions in sorted(found.items())
            }

    def resources(self, group: str, version: str) -> list[ResourceType]:
        with self._lock:
            return [rt for (g, v, _p), rt in sorted(self._types.items()) if g == group and v == version]


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version order: GA before beta before alpha, higher numbers first."""
    found = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if found is None:
        return (3, 0, 0)
    major, stage, minor = found.groups()
    stage_rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (stage_rank, -int(major), -int(minor or 0))
