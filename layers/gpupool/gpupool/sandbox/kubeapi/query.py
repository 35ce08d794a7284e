"""Query parameters of an API request, parsed the way kube-apiserver parses them.

Booleans follow upstream's query conversion: `0` and `false` in any case (and an empty value)
are false, every other value is true — so `watch=True` (the official Python client up to
36.x), `watch=true` and `watch=1` all start a watch. Numbers must be integers; enumerated
options (`fieldValidation`, `dryRun`, `propagationPolicy`) accept exactly upstream's values.
Every bad value is a 400 `BadRequest` Status naming the parameter — except the list options
(`resourceVersionMatch`, `sendInitialEvents`), which upstream checks only on lists and watches,
together, as 422 Invalid `ListOptions` (`list_problems`, apimachinery's ValidateListOptions).

Must not: look at storage or resource types; it only turns a query string into options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from gpupool.sandbox.kubeapi import errors

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")
PROPAGATION = ("Background", "Foreground", "Orphan")
RESOURCE_VERSION_MATCH = ("NotOlderThan", "Exact")


@dataclass
class WriteOptions:
    """What a write request asks for beyond its body; `warnings` collects `Warning` headers."""

    dry_run: bool = False
    field_validation: str = "Warn"  # upstream's default when the client names none
    field_manager: str = ""
    force: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Query:
    watch: bool = False
    timeout_seconds: int | None = None
    resource_version: str = ""
    resource_version_match: str = ""
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None
    limit: int = 0
    continue_token: str = ""
    label_selector: str = ""
    field_selector: str = ""
    field_validation: str = ""
    dry_run: bool = False
    propagation_policy: str | None = None
    field_manager: str = ""
    force: bool = False
    grace_period_seconds: int | None = None

    def write_options(self) -> WriteOptions:
        return WriteOptions(
            dry_run=self.dry_run,
            field_validation=self.field_validation or "Warn",
            field_manager=self.field_manager,
            force=self.force,
        )


def parse_bool(value: str) -> bool:
    """Upstream's rule: `0`, `false` (any case) and empty are false; anything else is true."""
    return not (value == "" or value == "0" or value.lower() == "false")


def _integer(raw: Mapping[str, str], name: str, *, minimum: int = 0) -> int | None:
    if name not in raw or raw[name] == "":
        return None
    try:
        value = int(raw[name])
    except ValueError as exc:
        raise errors.bad_request(f'invalid value for {name}: "{raw[name]}" is not an integer') from exc
    if value < minimum:
        raise errors.bad_request(f"invalid value for {name}: {value} must not be less than {minimum}")
    return value


def _choice(raw: Mapping[str, str], name: str, allowed: tuple[str, ...]) -> str:
    value = raw.get(name, "")
    if value and value not in allowed:
        supported = ", ".join(f'"{choice}"' for choice in allowed)
        raise errors.bad_request(f'{name}: Unsupported value: "{value}": supported values: {supported}')
    return value


def _dry_run(values: list[str]) -> bool:
    for value in values:
        if value != "All":
            raise errors.bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return bool(values)


def _forbidden(name: str, why: str) -> tuple[str, str]:
    return (name, f"Forbidden: {why}")


def _not_supported(name: str, value: str, supported: tuple[str, ...]) -> tuple[str, str]:
    listed = ", ".join(f'"{choice}"' for choice in supported)
    return (name, f'Unsupported value: "{value}": supported values: {listed}')


def list_problems(query: Query) -> list[tuple[str, str]]:
    """What upstream's ValidateListOptions refuses in a list or watch's options (the server
    answers 422 Invalid for `ListOptions.meta.k8s.io`); other verbs never read these options."""
    match, version = query.resource_version_match, query.resource_version
    problems: list[tuple[str, str]] = []
    if not query.watch:
        if match:
            if not version:
                problems.append(
                    _forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    )
                )
            if query.continue_token:
                problems.append(
                    _forbidden(
                        "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"
                    )
                )
            if match not in RESOURCE_VERSION_MATCH:
                problems.append(_not_supported("resourceVersionMatch", match, ("Exact", "NotOlderThan", "")))
            if match == "Exact" and version == "0":
                problems.append(
                    _forbidden(
                        "resourceVersionMatch",
                        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                    )
                )
        if query.send_initial_events is not None:
            problems.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
        return problems
    if query.send_initial_events is not None and match != "NotOlderThan":
        problems.append(
            _forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if match:
        if query.send_initial_events is None:
            problems.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                )
            )
        if match != "NotOlderThan":
            problems.append(_not_supported("resourceVersionMatch", match, ("NotOlderThan",)))
        if query.continue_token:
            problems.append(
                _forbidden(
                    "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"
                )
            )
    return problems


def parse_query(query_string: str) -> Query:
    """Parse a request's query string; the last value wins for repeated single parameters."""
    multi = parse_qs(query_string, keep_blank_values=True)
    raw = {key: values[-1] for key, values in multi.items()}
    watch = parse_bool(raw["watch"]) if "watch" in raw else False
    resource_version = raw.get("resourceVersion", "")
    match = raw.get("resourceVersionMatch", "")  # checked with the list options (`list_problems`)
    send_initial = parse_bool(raw["sendInitialEvents"]) if "sendInitialEvents" in raw else None
    propagation = _choice(raw, "propagationPolicy", PROPAGATION) or None
    return Query(
        watch=watch,
        timeout_seconds=_integer(raw, "timeoutSeconds"),
        resource_version=resource_version,
        resource_version_match=match,
        allow_watch_bookmarks=parse_bool(raw.get("allowWatchBookmarks", "")),
        send_initial_events=send_initial,
        limit=_integer(raw, "limit") or 0,
        continue_token=raw.get("continue", ""),
        label_selector=raw.get("labelSelector", ""),
        field_selector=raw.get("fieldSelector", ""),
        field_validation=_choice(raw, "fieldValidation", FIELD_VALIDATION),
        dry_run=_dry_run(multi.get("dryRun", [])),
        propagation_policy=propagation,
        field_manager=raw.get("fieldManager", ""),
        force=parse_bool(raw.get("force", "")),
        grace_period_seconds=_integer(raw, "gracePeriodSeconds"),
    )
