"""What is wrong with a manifest, said field by field.

Role: `FieldError` (a dotted camelCase path and a reason), `ManifestError` (an object that is
not valid, with each invalid field), `field_errors` (a pydantic ValidationError in those terms)
and `describe` (`kind/name` of a raw manifest). Apart from `registry`, which chooses the model for
a manifest, so reporting an unreadable object does not import every model gpupool defines.

Must not: read files, log, or touch a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

__all__ = ["FieldError", "ManifestError", "describe", "field_errors"]


@dataclass(frozen=True)
class FieldError:
    """One invalid field: a dotted path (`spec.gpuPools[0].name`) and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason


class ManifestError(ValueError):
    """A manifest (or YAML text) that is not a valid object; `errors` lists each field."""

    def __init__(self, what: str, errors: Sequence[FieldError]) -> None:
        self.what = what
        self.errors: tuple[FieldError, ...] = tuple(errors)
        super().__init__(f"{what}: " + "; ".join(str(error) for error in self.errors))


def describe(obj: Mapping[str, Any]) -> str:
    """`kind/name` of a manifest, `<unnamed>` when it has no metadata.name."""
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "<no kind>"
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return f"{kind}/{name if isinstance(name, str) and name else '<unnamed>'}"


def _path(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _reason(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    if kind in ("model_type", "dict_type"):
        return f"expected a mapping, got {type(error.get('input')).__name__}"
    if kind == "list_type":
        return f"expected a list, got {type(error.get('input')).__name__}"
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message


def field_errors(exc: ValidationError) -> list[FieldError]:
    """Each pydantic error as a field path (camelCase, `[i]` for list items) and a reason."""
    errors: list[FieldError] = []
    for error in exc.errors(include_url=False):
        # Pydantic adds the Literal/function name as a location step for some union members.
        loc = tuple(part for part in error["loc"] if not (isinstance(part, str) and "[" in part))
        errors.append(FieldError(_path(loc), _reason(error)))
    return errors
