"""GET /api/dle/v1/openapi.json: the document of the whole HTTP API.

The document (openapi.py) is built from a hundred pydantic models; importing it took about a
second of the interpreter while the window filled its first table, so it is built on the first
request for it instead, in a worker thread, and kept."""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.server.openapi_parts import API


@cache
def openapi_document() -> dict[str, Any]:
    from dle_desktop.server import openapi

    return openapi.DOCUMENT


async def openapi_json(request: Request) -> JSONResponse:
    return JSONResponse(await asyncio.to_thread(openapi_document))


routes = [Route(f"{API}/openapi.json", openapi_json, methods=["GET"])]
