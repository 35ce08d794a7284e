"""CustomResourceDefinitions (apiextensions.k8s.io/v1) generated from the models.

Role: `generate_crds()` turns each tensor-fusion.ai/v1 model into a CRD dict with a
structural schema: quantities are int-or-string, loosely typed blocks and controller-owned
statuses preserve unknown fields, our own specs do not; status subresource; scope; short
names; printer columns. The chart's crds/ folder and the embedded API server both use it.

Must not: write files or talk to a cluster (the CLI writes, the API server installs).
"""

from __future__ import annotations

from typing import Any

import yaml

from gpupool.core.model.base import GROUP, TopLevel
from gpupool.core.model.registry import TENSOR_FUSION_KINDS

__all__ = ["SchemaError", "crd_file_name", "crd_for", "generate_crds", "render_crd"]

# apimachinery's quantity syntax, as TensorFusion's own CRDs declare it.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_KEPT_KEYWORDS = ("format", "minimum", "maximum", "minLength", "maxLength", "description")


class SchemaError(ValueError):
    """A model whose JSON schema cannot be expressed as a structural CRD schema."""


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    return dict(defs[ref.rsplit("/", 1)[-1]])


def _structural(node: dict[str, Any], defs: dict[str, Any], where: str) -> dict[str, Any]:
    node = _resolve(node, defs)
    if node.get("x-kubernetes-int-or-string"):
        return {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }
    if node.get("x-kubernetes-preserve-unknown-fields"):
        if "type" not in node:  # any JSON value (a structural schema may leave the type out)
            return {"x-kubernetes-preserve-unknown-fields": True}
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if "anyOf" in node:
        options = [option for option in node["anyOf"] if option.get("type") != "null"]
        if len(options) != 1:
            raise SchemaError(f"{where}: a union of several types is not structural")
        merged = {**_resolve(options[0], defs), **{k: v for k, v in node.items() if k != "anyOf"}}
        return _structural(merged, defs, where)
    out: dict[str, Any] = {key: node[key] for key in _KEPT_KEYWORDS if key in node}
    default = node.get("default")
    if default is not None and not isinstance(default, dict | list):
        out["default"] = default
    if "const" in node:
        out.update(type="string", enum=[node["const"]])
        return out
    if "enum" in node:
        out.update(type="string", enum=list(node["enum"]))
        return out
    kind = node.get("type")
    if kind == "object":
        return {**out, **_object(node, defs, where)}
    if kind == "array":
        out.update(type="array", items=_structural(node.get("items", {}), defs, f"{where}[]"))
        return out
    if kind in ("string", "integer", "number", "boolean"):
        out["type"] = kind
        return out
    raise SchemaError(f"{where}: no structural type for {node!r}")


def _object(node: dict[str, Any], defs: dict[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object"}
    properties = node.get("properties")
    extra = node.get("additionalProperties")
    if properties is not None:
        out["properties"] = {
            name: _structural(schema, defs, f"{where}.{name}") for name, schema in properties.items()
        }
        if node.get("required"):
            out["required"] = list(node["required"])
        if extra is not False:
            # Controller-owned or foreign shapes (extra fields ignored on read): keep what others write.
            out["x-kubernetes-preserve-unknown-fields"] = True
    elif isinstance(extra, dict):
        out["additionalProperties"] = _structural(extra, defs, f"{where}.*")
    else:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _top_level_schema(model: type[TopLevel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    defs = schema.get("$defs", {})
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
    }
    for part in ("spec", "status"):
        if part in schema["properties"]:
            properties[part] = _structural(schema["properties"][part], defs, part)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if "spec" in schema.get("required", []):
        out["required"] = ["spec"]
    return out


def crd_for(model: type[TopLevel]) -> dict[str, Any]:
    """The CustomResourceDefinition for one tensor-fusion.ai/v1 model."""
    version: dict[str, Any] = {
        "name": model.API_VERSION.rsplit("/", 1)[-1],
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": _top_level_schema(model)},
    }
    if "status" in model.model_fields:
        version["subresources"] = {"status": {}}
    columns = [{"name": name, "type": kind, "jsonPath": path} for name, path, kind in model.PRINTER_COLUMNS]
    if columns:
        columns.append({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
        version["additionalPrinterColumns"] = columns
    names: dict[str, Any] = {
        "kind": model.KIND,
        "listKind": f"{model.KIND}List",
        "plural": model.PLURAL,
        "singular": model.KIND.lower(),
    }
    if model.SHORT_NAMES:
        names["shortNames"] = list(model.SHORT_NAMES)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{model.PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": names,
            "scope": "Namespaced" if model.NAMESPACED else "Cluster",
            "versions": [version],
        },
    }


def crd_file_name(crd: dict[str, Any]) -> str:
    """The chart file name for a CRD: `tensor-fusion.ai_<plural>.yaml`."""
    return f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml"


def generate_crds() -> list[dict[str, Any]]:
    """A CRD dict for every tensor-fusion.ai/v1 kind gpupool models, in a stable order."""
    return [crd_for(model) for model in TENSOR_FUSION_KINDS]


def render_crd(crd: dict[str, Any]) -> str:
    """A CRD as the YAML text the chart stores (stable: same models, same bytes)."""
    return yaml.safe_dump(crd, sort_keys=False, width=100, allow_unicode=True)
