"""A small JSON Schema checker for the OpenAPI document's schemas (jsonschema is not a dependency).

Covers what dle_desktop/server/openapi.py uses: $ref, allOf/anyOf/oneOf/not, type (also lists),
enum, const, properties/required/additionalProperties, items, min/maxLength, pattern,
minimum/maximum, min/maxItems.
`strict=True` treats an object schema with `properties` and no `additionalProperties` as closed,
so a field the code returns but the document does not mention is reported."""

from __future__ import annotations

import re
from typing import Any

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class SchemaError(AssertionError):
    pass


def resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/"), ref
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**node, **extra}
    return schema


def _properties(schema: dict, root: dict) -> set[str] | None:
    """Names an object schema allows (through allOf too); None if it is open."""
    schema = resolve(schema, root)
    if "allOf" in schema:
        names: set[str] = set()
        for sub in schema["allOf"]:
            p = _properties(sub, root)
            if p is None:
                return None
            names |= p
        return names
    if "properties" not in schema or schema.get("additionalProperties", False) is not False:
        return None
    return set(schema["properties"])


def errors(value: Any, schema: dict, root: dict, strict: bool = True, path: str = "$") -> list[str]:
    schema = resolve(schema, root)
    out: list[str] = []
    if "allOf" in schema:
        for sub in schema["allOf"]:
            out += errors(value, sub, root, False, path)
        if strict and isinstance(value, dict):
            allowed = _properties(schema, root)
            if allowed is not None:
                out += [f"{path}.{k}: not in the document" for k in value if k not in allowed]
    if "anyOf" in schema or "oneOf" in schema:
        subs = schema.get("anyOf") or schema.get("oneOf")
        results = [errors(value, s, root, strict, path) for s in subs]
        passing = sum(1 for r in results if not r)
        if passing == 0:
            out.append(f"{path}: matches none of the alternatives: " + " | ".join("; ".join(r[:2]) for r in results))
        elif "oneOf" in schema and passing > 1:
            out.append(f"{path}: matches {passing} oneOf alternatives")
    if "not" in schema and not errors(value, schema["not"], root, False, path):
        out.append(f"{path}: matches what `not` excludes")
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(_TYPES[x](value) for x in types):
            return out + [f"{path}: {type(value).__name__} {str(value)[:60]!r} is not {'/'.join(types)}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            out.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append(f"{path}: longer than {schema['maxLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            out.append(f"{path}: does not match {schema['pattern']}")
    if _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(f"{path}: below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            out.append(f"{path}: above {schema['maximum']}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            out.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                out += errors(item, schema["items"], root, strict, f"{path}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                out.append(f"{path}: {name} is missing")
        for k, v in value.items():
            if k in props:
                out += errors(v, props[k], root, strict, f"{path}.{k}")
            elif isinstance(schema.get("additionalProperties"), dict):
                out += errors(v, schema["additionalProperties"], root, strict, f"{path}.{k}")
            elif schema.get("additionalProperties") is False or (
                strict and props and "allOf" not in schema and "additionalProperties" not in schema
            ):
                out.append(f"{path}.{k}: not in the document")
    return out


def check(value: Any, schema: dict, root: dict, strict: bool = True) -> None:
    problems = errors(value, schema, root, strict)
    if problems:
        raise SchemaError("\n".join(problems[:20]))
