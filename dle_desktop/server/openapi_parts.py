"""The pieces the OpenAPI document's operations are made of (openapi.py and openapi_steer.py use
them): references, JSON answers and errors, query parameters from a query model, the chat-id path
parameter, and one operation."""

from __future__ import annotations

from typing import Any

from dle_desktop.server import schemas

API = "/api/dle/v1"
STR = {"type": "string"}


def ref_to(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def query_params(model: type[schemas.QueryModel]) -> list[dict[str, Any]]:
    """The query parameters of `model` (all optional: each has a default)."""
    out = []
    for name, prop in schemas.request_schema(model)["properties"].items():
        prop = dict(prop)
        description = prop.pop("description", None)
        # A query parameter is absent or text: its null alternative means "absent".
        prop = next((s for s in prop.pop("anyOf") if s != {"type": "null"}), {}) | prop if "anyOf" in prop else prop
        param: dict[str, Any] = {"name": name, "in": "query", "required": False, "schema": prop}
        out.append(param | ({"description": description} if description else {}))
    return out


def json_answer(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def error_answer(description: str) -> dict:
    return json_answer(ref_to("Error"), description)


CHAT_ID_PARAM = {
    "name": "chat_id",
    "in": "path",
    "required": True,
    "schema": ref_to("ChatId"),
    "description": "the chat's id, percent-encoded. A `/` in it may be sent as is (`chats/group/abc`) or "
    "as `%2F`; only before a part's name (`.../records`, `.../pins`, ...) must it be `%2F`, "
    "else the name is read as that part",
}
BAD_CHAT_ID = {
    "400": error_answer("bad chat id (empty, over 512 characters, a control character, or whitespace at an end)")
}
BODY_ERRORS = {
    "400": error_answer("the body is empty, not UTF-8, not JSON, or has the wrong shape; `error` names the problem"),
    "413": error_answer("the body is over the server's limit (64 MiB)"),
}


def operation(
    op_id: str,
    summary: str,
    ok: dict,
    *,
    tag: str,
    params: list | None = None,
    body: dict | None = None,
    errors: dict | None = None,
    description: str | None = None,
) -> dict:
    out: dict[str, Any] = {
        "operationId": op_id,
        "summary": summary,
        "tags": [tag],
        "responses": {"200": ok, **(errors or {})},
    }
    if description:
        out["description"] = description
    if params:
        out["parameters"] = params
    if body is not None:
        out["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    return out
