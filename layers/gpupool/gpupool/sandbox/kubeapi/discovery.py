"""Discovery documents: /version, /api, /apis, /apis/GROUP, /api/v1 and /apis/GROUP/VERSION.

They list exactly what the registry serves, so the official client and kubectl see CRD
resources appear and disappear with their CRDs. Subresources are listed the way upstream
lists them (`pods/status`, `pods/binding`, `pods/eviction`, `<crd plural>/status`).

Must not: change state.
"""

from __future__ import annotations

from typing import Any

from gpupool.sandbox.kubeapi.registry import Registry
from gpupool.sandbox.kubeapi.resources import ResourceType

JsonObject = dict[str, Any]
VERSION_INFO: JsonObject = {
    "major": "1",
    "minor": "30",
    "gitVersion": "v1.30.0-gpupool.sandbox",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.22 (gpupool embedded API server, Python)",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def core_versions(server_address: str) -> JsonObject:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str, versions: list[str]) -> JsonObject:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def group_list(registry: Registry) -> JsonObject:
    groups = [_group(name, versions) for name, versions in registry.group_versions().items() if name]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(registry: Registry, name: str) -> JsonObject | None:
    versions = registry.group_versions().get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _resource(rt: ResourceType) -> list[JsonObject]:
    main: JsonObject = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
        "storageVersionHash": "",
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    found = [main]
    if rt.has_status:
        found.append(
            {
                "name": f"{rt.plural}/status",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    if "binding" in rt.subresources:
        found.append(
            {
                "name": f"{rt.plural}/binding",
                "singularName": "",
                "namespaced": True,
                "kind": "Binding",
                "verbs": ["create"],
            }
        )
    if "eviction" in rt.subresources:
        found.append(
            {
                "name": f"{rt.plural}/eviction",
                "singularName": "",
                "namespaced": True,
                "group": "policy",
                "version": "v1",
                "kind": "Eviction",
                "verbs": ["create"],
            }
        )
    return found


def resource_list(registry: Registry, group_name: str, version: str) -> JsonObject | None:
    types = registry.resources(group_name, version)
    if not types:
        return None
    group_version = f"{group_name}/{version}" if group_name else version
    resources = [entry for rt in types for entry in _resource(rt)]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }
