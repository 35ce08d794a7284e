"""Resource endpoints: one request on `…/PLURAL[/NAME[/SUBRESOURCE]]` turned into a `ApiOperations` call.

The answer is `(code, body)` or an iterator of watch lines. Gets, lists and watches honour
the response formats clients ask for in `Accept` (a `Table`, `PartialObjectMetadata[List]`);
writes honour `dryRun`, `fieldValidation`, `fieldManager` and `force` through `WriteOptions`.
Subresources other than `status` are looked up in `SUBRESOURCE_HANDLERS`, and create-only
kinds (access reviews) in `CREATE_ONLY_HANDLERS`: tables that take one more entry per addition.
A delete that removes the object answers upstream's Success `Status`, except for the kinds whose
registries return the deleted object (`RETURN_DELETED_OBJECT`).

Must not: touch sockets or parse the query string (see `handler` and `query`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gpupool.sandbox.kubeapi import errors, formats, reviews, tables
from gpupool.sandbox.kubeapi.operations import ApiOperations
from gpupool.sandbox.kubeapi.query import Query, WriteOptions, list_problems
from gpupool.sandbox.kubeapi.resources import ResourceType
from gpupool.sandbox.kubeapi.routes import ResourcePath
from gpupool.sandbox.kubeapi.selectors import parse_field_selector, parse_label_selector
from gpupool.sandbox.kubeapi.watch import watch_lines

JsonObject = dict[str, Any]
Answer = tuple[int, JsonObject | bytes] | Iterator[bytes]
DEFAULT_WATCH_SECONDS = 1800.0
APPLY_PATCH = "application/apply-patch+yaml"


@dataclass(frozen=True)
class Request:
    method: str
    target: ResourcePath
    query: Query
    options: WriteOptions
    body: Any
    accept: str
    content_type: str
    authorization: str = ""  # the caller's Authorization header (a SelfSubjectAccessReview's subject)


SubresourceHandler = Callable[[ApiOperations, ResourceType, str, str, Request], Answer]


def _binding(
    cluster: ApiOperations, _rt: ResourceType, namespace: str, name: str, request: Request
) -> Answer:
    if request.method != "POST":
        raise errors.method_not_allowed(f"{request.method} is not supported on pods/binding")
    return 201, cluster.bind(namespace, name, request.body, request.options)


def _eviction(
    cluster: ApiOperations, _rt: ResourceType, namespace: str, name: str, request: Request
) -> Answer:
    if request.method != "POST":
        raise errors.method_not_allowed(f"{request.method} is not supported on pods/eviction")
    return 201, cluster.evict(namespace, name, request.options, body=request.body)


# (plural, subresource) → handler. A module that adds a subresource adds one line here.
SUBRESOURCE_HANDLERS: dict[tuple[str, str], SubresourceHandler] = {
    ("pods", "binding"): _binding,
    ("pods", "eviction"): _eviction,
}


CreateOnlyHandler = Callable[[ApiOperations, ResourceType, Request], JsonObject]
# (group, plural) → what a POST to a create-only kind answers (201); nothing is stored and every
# other verb is 405. Access reviews (authentication.k8s.io, authorization.k8s.io) plug in here.
CREATE_ONLY_HANDLERS: dict[tuple[str, str], CreateOnlyHandler] = {
    ("authentication.k8s.io", "tokenreviews"): lambda cluster, _rt, request: reviews.token_review(
        cluster, request.body
    ),
    ("authorization.k8s.io", "subjectaccessreviews"): lambda cluster, _rt, request: reviews.access_review(
        cluster, request.body
    ),
    ("authorization.k8s.io", "selfsubjectaccessreviews"): lambda cluster, _rt, request: (
        reviews.self_access_review(cluster, request.body, request.authorization)
    ),
}


def no_such_path() -> errors.ApiError:
    return errors.ApiError(404, "NotFound", "the server could not find the requested resource")


def answer(cluster: ApiOperations, request: Request) -> Answer:
    target = request.target
    rt = cluster.resolve(target.group, target.version, target.plural)
    if rt.namespaced is False and target.namespace is not None:
        raise no_such_path()
    sub = target.subresource
    if sub is not None and not (sub == "status" and rt.has_status) and sub not in rt.subresources:
        raise no_such_path()
    if target.name is None:
        if sub is not None:
            raise no_such_path()
        return _collection(cluster, rt, target.namespace if rt.namespaced else None, request)
    if rt.namespaced and target.namespace is None:
        raise no_such_path()
    namespace = (target.namespace or "") if rt.namespaced else ""
    if sub is not None and sub != "status":
        handler = SUBRESOURCE_HANDLERS.get((rt.plural, sub))
        if handler is None:
            raise no_such_path()
        return handler(cluster, rt, namespace, target.name, request)
    return _single(cluster, rt, namespace, target.name, request)


def _single(cluster: ApiOperations, rt: ResourceType, namespace: str, name: str, request: Request) -> Answer:
    method, sub, options = request.method, request.target.subresource, request.options
    if method == "GET":
        obj = cluster.get(rt, namespace, name)
        return 200, formats.single(obj, rt, request.accept, cluster.clock.now())
    if method == "PUT":
        return 200, cluster.update(rt, namespace, name, request.body, subresource=sub, options=options)
    if method == "PATCH" and request.content_type == APPLY_PATCH:
        applied, created = cluster.apply(rt, namespace, name, request.body, subresource=sub, options=options)
        return (201 if created else 200), applied
    if method == "PATCH":
        return 200, cluster.patch(
            rt, namespace, name, request.body, request.content_type, subresource=sub, options=options
        )
    if method == "DELETE" and sub is None:
        delete_options = dict(request.body) if isinstance(request.body, dict) else {}
        if request.query.propagation_policy is not None:
            delete_options["propagationPolicy"] = request.query.propagation_policy
        last, gone = cluster.delete(rt, namespace, name, delete_options, options=options)
        if gone and (rt.group, rt.plural) not in RETURN_DELETED_OBJECT:
            return 200, deleted_status(rt, last)
        return (200 if gone else 202), last
    raise errors.method_not_allowed(f"{method} is not supported on this path")


# The registries whose DELETE answers with the deleted object itself (upstream's
# `ReturnDeletedObject`); every other kind, custom resources included, answers a Success Status
# once the object is gone. One still held by finalizers answers itself (202) everywhere.
RETURN_DELETED_OBJECT = frozenset(
    {
        ("", "pods"),
        ("", "namespaces"),
        ("", "services"),
        ("", "serviceaccounts"),
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("", "resourcequotas"),
        ("", "podtemplates"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "volumeattachments"),
        ("storage.k8s.io", "volumeattributesclasses"),
        ("resource.k8s.io", "resourceclaims"),
        ("resource.k8s.io", "resourceclaimtemplates"),
        ("resource.k8s.io", "resourceslices"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "devicetaintrules"),
    }
)


def deleted_status(rt: ResourceType, last: JsonObject) -> JsonObject:
    """Upstream's answer to a delete that removed the object: Success, naming it (kind is the
    resource's plural, as upstream fills it)."""
    meta = last.get("metadata") or {}
    details: JsonObject = {"name": meta.get("name")}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    if meta.get("uid"):
        details["uid"] = meta["uid"]
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def _collection(cluster: ApiOperations, rt: ResourceType, namespace: str | None, request: Request) -> Answer:
    method, query = request.method, request.query
    create_only = CREATE_ONLY_HANDLERS.get((rt.group, rt.plural))
    if create_only is not None:
        if method != "POST":
            raise errors.method_not_allowed(f"{method} is not supported on {rt.plural}")
        return 201, create_only(cluster, rt, request)
    if method == "POST":
        if rt.namespaced and namespace is None:
            raise errors.method_not_allowed("create a namespaced object under /namespaces/NAME/")
        return 201, cluster.create(rt, namespace, request.body, options=request.options)
    if method == "GET" and (problems := list_problems(query)):
        raise errors.invalid("ListOptions", "meta.k8s.io", "", problems)
    labels = parse_label_selector(query.label_selector)
    fields = parse_field_selector(query.field_selector, rt.field_paths, rt.kind, custom=not rt.builtin)
    if method == "GET" and query.watch:
        cluster.check_watch_start(query.resource_version)
        return watch_lines(
            cluster,
            rt,
            namespace,
            labels,
            fields,
            resource_version=query.resource_version,
            timeout_seconds=float(query.timeout_seconds or DEFAULT_WATCH_SECONDS),
            bookmarks=query.allow_watch_bookmarks,
            send_initial_events=query.send_initial_events,
            render=formats.watch_renderer(rt, request.accept, cluster.clock.now),
        )
    if method == "GET":
        limit = cluster.check_list_version(
            query.resource_version, query.resource_version_match, limit=query.limit
        )
        if tables.wants_table(request.accept) or formats.wants_metadata(request.accept):
            page, extra, rv = cluster.list_page(
                rt, namespace, labels, fields, limit=limit, continue_token=query.continue_token
            )
            listed = formats.collection(
                [e.obj for e in page], rt, request.accept, str(rv), cluster.clock.now()
            )
            listed.setdefault("metadata", {}).update(extra)
            return 200, listed
        return 200, cluster.list_body(
            rt, namespace, labels, fields, limit=limit, continue_token=query.continue_token
        )
    if method == "DELETE":
        entries, _rv = cluster.matching_entries(rt, namespace, labels, fields)
        delete_options = dict(request.body) if isinstance(request.body, dict) else {}
        if query.propagation_policy is not None:
            delete_options["propagationPolicy"] = query.propagation_policy
        removed = []
        for entry in entries:
            meta = entry.obj["metadata"]
            last, _gone = cluster.delete(
                rt, meta.get("namespace", ""), meta["name"], delete_options, options=request.options
            )
            removed.append(last)
        return 200, {
            "kind": rt.list_kind_name,
            "apiVersion": rt.api_version,
            "metadata": {},
            "items": removed,
        }
    raise errors.method_not_allowed(f"{method} is not supported on a collection")
