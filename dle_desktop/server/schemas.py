"""Requests declared once, as pydantic models: the routes validate with them (`parse_body`,
`parse_query`) and openapi.py generates the document's request schemas and query parameters from
them, so the two cannot disagree. This module holds what every model shares; the models are in
schemas_lore.py (lore API, gaps, the bridge), schemas_chat.py (retrieval and chat state) and
schemas_vectors.py (SillyTavern's routes).

Each field keeps the message the API has always given: a `mode="before"` validator says what is
wrong in the API's words, and the declared type and limits (which the document shows) then hold
by construction."""

from __future__ import annotations

import re
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.json_schema import models_json_schema

from dle_desktop.errors import InputError

#: Python's whitespace (`str.isspace`, what `strip` drops), spelled out: regex engines disagree on
#: `\s` (ECMAScript's has U+FEFF and lacks U+001C-U+001F), and the document's readers must agree with us.
WHITESPACE = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: the same test the document states (`pattern`), so both agree on what "blank" is
NOT_BLANK = rf"[^{WHITESPACE}]"
_NOT_BLANK = re.compile(NOT_BLANK)


def not_blank(value: str) -> bool:
    return _NOT_BLANK.search(value) is not None


Model = TypeVar("Model", bound="RequestModel")


def ref(name: str) -> dict[str, str]:
    """A reference to a component of the document; `$ref` only once `request_schema` has made it
    (pydantic would try to resolve it among its own definitions)."""
    return {_REF: name}


_REF = "x-component"


def request_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The document's schema of `model`: components referenced by name, no generated titles and
    no null defaults (fields left out mean "not given")."""
    return _finish(model.model_json_schema(ref_template="#/components/schemas/{model}"))


def components(models: list[type[BaseModel]]) -> dict[str, dict[str, Any]]:
    """The document's components for `models` and every model they use, by class name."""
    _, found = models_json_schema([(m, "validation") for m in models], ref_template="#/components/schemas/{model}")
    return {name: _finish(schema) for name, schema in found.get("$defs", {}).items()}


def _finish(node: Any, in_properties: bool = False) -> Any:
    if isinstance(node, list):
        return [_finish(v) for v in node]
    if not isinstance(node, dict):
        return node
    if in_properties:
        return {k: _finish(v) for k, v in node.items()}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == _REF:
            out["$ref"] = f"#/components/schemas/{value}"
        elif (key == "title" and isinstance(value, str)) or (key == "default" and value is None):
            continue
        else:
            out[key] = _finish(value, in_properties=key == "properties")
    return out


# -- the messages -----------------------------------------------------------------------------------


def text(value: Any, name: str, limit: int, *, blank_ok: bool = True) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text")
    if len(value) > limit:
        raise ValueError(f"{name} is {len(value)} characters; the limit is {limit}")
    if not blank_ok and not not_blank(value):
        raise ValueError(f"{name} must not be blank")
    return value


def texts(value: Any, name: str, limit: int, item_limit: int, *, min_items: int = 0) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a list of text")
    if not min_items <= len(value) <= limit:
        raise ValueError(f"{name} has {len(value)} items; send {min_items} to {limit}")
    for v in value:
        if len(v) > item_limit:
            raise ValueError(f"an item of {name} is {len(v)} characters; the limit is {item_limit}")
    return value


def one_of(value: Any, name: str, allowed: tuple[str, ...]) -> Any:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}")
    return value


def nullable(schema: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"anyOf": [schema, {"type": "null"}]}
    return out | ({"description": description} if description else {})


# -- the models -------------------------------------------------------------------------------------


class RequestModel(BaseModel):
    """A JSON object; unknown fields are refused unless `unknown_ok`."""

    # defer_build: a model compiles its validator on first use, not at import: compiling all of them
    # held the interpreter for a second while the window filled its table.
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False, defer_build=True)
    #: the answer to a body that is not an object (and, without `unknown_message`, nothing else)
    shape: ClassVar[str] = "send an object"
    #: when set, the answer to unknown fields instead of naming them
    unknown_message: ClassVar[str | None] = None
    #: the answer to a missing required field, by field name
    missing: ClassVar[dict[str, str]] = {}
    unknown_ok: ClassVar[bool] = False


def _field_names(model: type[RequestModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


def parse_body(model: type[Model], data: Any) -> Model:
    """`data` (parsed JSON) as `model`, or InputError in the API's words."""
    if not isinstance(data, dict):
        raise InputError(model.shape)
    if not model.unknown_ok:
        unknown = sorted(set(data) - _field_names(model))
        if unknown:
            raise InputError(model.unknown_message or f"unknown field(s): {', '.join(u[:100] for u in unknown[:20])}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(_message(model, exc)) from None


def parse_query(model: type[Model], params: Any) -> Model:
    """A query string as `model`: parameters the model does not name are ignored."""
    names = _field_names(model)
    return parse_body(model, {k: v for k, v in params.items() if k in names})


def _message(model: type[RequestModel], exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    name = ".".join(str(p) for p in first["loc"])
    error = (first.get("ctx") or {}).get("error")
    if isinstance(error, (ValueError, InputError)):
        return str(error)
    if first["type"] == "missing":
        return model.missing.get(name, f"{name} is required")
    return f"{name}: {first['msg']}" if name else first["msg"]


# -- query strings ----------------------------------------------------------------------------------


class QueryModel(RequestModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    unknown_ok: ClassVar[bool] = True


def whole_number(raw: str, low: int, high: int, *, zero_padding_ok: bool = True) -> int:
    """`raw` as a number from `low` to `high`, or ValueError. Ten digits or more are out of range
    (and never reach `int`), leading zeros counted unless `zero_padding_ok`."""
    digits = raw.lstrip("0") if zero_padding_ok else raw
    limit = int(raw) if raw.isascii() and raw.isdigit() and len(digits) < 10 else 0
    if not low <= limit <= high:
        raise ValueError(f"limit must be a whole number from {low} to {high}, not {raw[:40]!r}")
    return limit


def zero_or_one(raw: str, name: str) -> str:
    if raw not in ("0", "1"):
        raise ValueError(f"{name} must be 0 or 1, not {raw[:40]!r}")
    return raw
