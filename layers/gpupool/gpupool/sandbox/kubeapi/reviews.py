"""TokenReview, SubjectAccessReview and SelfSubjectAccessReview for the embedded API server.

Role: a sandbox has no identity provider and no authorizer, so each `ApiOperations` gets a
`ReviewBook` (`book_of(cluster)`) that a test or the sandbox fills:
- `add_token(token, user, groups, audiences)`: the tokens the sandbox knows (any other token is
  unauthenticated, as a real API server answers for a token it did not issue), each valid for its
  `audiences` (default the API server's own, `API_AUDIENCES`). A review's `spec.audiences` (empty:
  the API server's) must share one with the token, else it is unauthenticated; an authenticated
  review's `status.audiences` is that intersection — kube-apiserver's TokenReview REST and its
  service-account authenticator, rule by rule;
- `bind(subjects, rules)`: RBAC the way a ClusterRoleBinding grants a ClusterRole — `subjects`
  and `rules` in their rbac.authorization.k8s.io/v1 shapes (User, Group, ServiceAccount;
  apiGroups / resources / resourceNames / verbs, or nonResourceURLs / verbs, `*` wildcards and
  a trailing `*` on a URL), so a chart's rendered ClusterRole can be loaded as is.
`token_review`, `access_review` and `self_access_review` answer `POST
/apis/authentication.k8s.io/v1/tokenreviews` and `/apis/authorization.k8s.io/v1/{subject,
selfsubject}accessreviews` (the latter for the caller's own bearer token) through
`endpoints.CREATE_ONLY_HANDLERS`, returning the review with its `status` filled, as
kube-apiserver does (201); other verbs get 405.

Must not: guard the rest of the API (the embedded server still answers everyone on 127.0.0.1)
or touch the object store.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpupool.sandbox.kubeapi import errors

__all__ = ["API_AUDIENCES", "ReviewBook", "access_review", "book_of", "self_access_review", "token_review"]

JsonObject = dict[str, Any]
API_AUDIENCES = ("https://kubernetes.default.svc",)


@dataclass
class ReviewBook:
    tokens: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    audiences: dict[str, tuple[str, ...]] = field(default_factory=dict)
    bindings: list[tuple[tuple[Mapping[str, Any], ...], tuple[Mapping[str, Any], ...]]] = field(
        default_factory=list
    )

    def add_token(
        self, token: str, user: str, groups: Iterable[str] = (), audiences: Iterable[str] = API_AUDIENCES
    ) -> None:
        if not token or not user:
            raise ValueError("a sandbox token needs a non-empty token and user")
        self.tokens[token] = (user, (*groups, "system:authenticated"))
        self.audiences[token] = tuple(audiences)

    def bind(self, subjects: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, Any]]) -> None:
        self.bindings.append((tuple(subjects), tuple(rules)))

    def allowed(
        self, user: str, groups: Sequence[str], attributes: Mapping[str, Any], *, resource: bool
    ) -> bool:
        return any(
            any(_subject_matches(s, user, groups) for s in subjects)
            and any(_rule_matches(rule, attributes, resource=resource) for rule in rules)
            for subjects, rules in self.bindings
        )


_books: weakref.WeakKeyDictionary[object, ReviewBook] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def book_of(cluster: object) -> ReviewBook:
    with _lock:
        book = _books.get(cluster)
        if book is None:
            book = _books[cluster] = ReviewBook()
        return book


def _subject_matches(subject: Mapping[str, Any], user: str, groups: Sequence[str]) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(name == user)
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        return user == f"system:serviceaccount:{subject.get('namespace')}:{name}"
    return False


def _any(patterns: Iterable[str], value: str) -> bool:
    return any(p == "*" or p == value for p in patterns)


def _rule_matches(rule: Mapping[str, Any], attributes: Mapping[str, Any], *, resource: bool) -> bool:
    if not _any(rule.get("verbs") or [], str(attributes.get("verb") or "")):
        return False
    if not resource:
        path = str(attributes.get("path") or "")
        urls = rule.get("nonResourceURLs") or []
        return any(u == path or u == "*" or (u.endswith("*") and path.startswith(u[:-1])) for u in urls)
    plural = str(attributes.get("resource") or "")
    if attributes.get("subresource"):
        plural += "/" + str(attributes["subresource"])
    names = rule.get("resourceNames") or []
    return (
        _any(rule.get("apiGroups") or [], str(attributes.get("group") or ""))
        and _any(rule.get("resources") or [], plural)
        and (not names or attributes.get("name") in names)
    )


def _bearer(authorization: str) -> str:
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _review(body: Any, kind: str) -> JsonObject:
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise errors.bad_request(f"a {kind} needs a spec object")
    group = "authentication.k8s.io" if kind == "TokenReview" else "authorization.k8s.io"
    return {
        "apiVersion": f"{group}/v1",
        "kind": kind,
        "metadata": body.get("metadata") or {},
        "spec": body["spec"],
    }


def _access(book: ReviewBook, review: JsonObject, user: str, groups: Sequence[str]) -> JsonObject:
    spec = review["spec"]
    resource, plain = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if not isinstance(resource, dict) and not isinstance(plain, dict):
        raise errors.bad_request("resourceAttributes or nonResourceAttributes is required")
    attributes = resource if isinstance(resource, dict) else plain
    assert isinstance(attributes, dict)
    allowed = book.allowed(user, groups, attributes, resource=isinstance(resource, dict))
    reason = "allowed by a sandbox RBAC binding" if allowed else "no sandbox RBAC binding allows it"
    return review | {"status": {"allowed": allowed, "reason": reason}}


def token_review(cluster: object, body: Any) -> JsonObject:
    """A TokenReview answered from the cluster's token table."""
    review = _review(body, "TokenReview")
    book, token = book_of(cluster), str(review["spec"].get("token") or "")
    known = book.tokens.get(token)
    if known is None:
        return review | {"status": {"authenticated": False, "error": "token not known to the sandbox"}}
    wanted = [str(a) for a in review["spec"].get("audiences") or ()] or list(API_AUDIENCES)
    has = book.audiences.get(token, API_AUDIENCES)
    shared = [a for a in has if a in wanted]
    if not shared:
        error = f"token audiences {list(has)!r} is invalid for the target audiences {wanted!r}"
        return review | {"status": {"authenticated": False, "error": error}}
    user, groups = known
    status = {"authenticated": True, "user": {"username": user, "groups": list(groups)}, "audiences": shared}
    return review | {"status": status}


def access_review(cluster: object, body: Any) -> JsonObject:
    """A SubjectAccessReview answered from the RBAC bindings registered with the cluster."""
    review = _review(body, "SubjectAccessReview")
    spec = review["spec"]
    if not spec.get("user") and not spec.get("groups"):
        raise errors.bad_request("at least one of user or groups must be specified")
    return _access(book_of(cluster), review, str(spec.get("user") or ""), list(spec.get("groups") or []))


def self_access_review(cluster: object, body: Any, authorization: str) -> JsonObject:
    """The caller's own review. While no RBAC binding is registered the sandbox authorises
    every request (it enforces none), so it truthfully answers allowed; once a test registers
    bindings, they decide, for the caller's bearer token (unknown → system:anonymous)."""
    review = _review(body, "SelfSubjectAccessReview")
    book = book_of(cluster)
    if not book.bindings:
        return review | {"status": {"allowed": True, "reason": "the sandbox enforces no authorization"}}
    caller = book.tokens.get(_bearer(authorization))
    user, groups = caller if caller is not None else ("system:anonymous", ("system:unauthenticated",))
    return _access(book, review, user, groups)
