"""SillyTavern World Info in and out of the vault under /api/dle/v1/worldinfo, for the bridge's
`/dle-import` and any other client: a book previewed (nothing written), then imported as one
batch (one Undo, one re-index), an import undone, and the vault exported as a book.

The import plans again from the same body and writes only when that plan is the one previewed
(its `digest`), so a note created or edited between the preview and the confirmation is never
overwritten unseen."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.core.worldinfo import MAX_BOOK_BYTES, WiBook, WorldInfoError, read_book_value
from dle_desktop.errors import InputError, NotAvailableHere, NotFound, WriteConflict
from dle_desktop.server.routes_chat import read_json
from dle_desktop.server.schemas import parse_body, parse_query
from dle_desktop.server.schemas_worldinfo import (
    WorldInfoExportQuery,
    WorldInfoImportConfirm,
    WorldInfoImportRequest,
    WorldInfoUndoRequest,
)
from dle_desktop.server.services import LoreEngine, WorldInfoPort, engine

if TYPE_CHECKING:
    from dle_desktop.vault.writer import BatchUndo
    from dle_desktop.worldinfo.model import ImportPlan

API = "/api/dle/v1"
WORLDINFO = f"{API}/worldinfo"
UNNAMED = "unnamed book"


def _too_large(request_size: int) -> JSONResponse | None:
    """The answer to a body bigger than a book may be, before it is parsed (the server's own body
    limit is larger: it serves other routes too)."""
    if request_size <= MAX_BOOK_BYTES:
        return None
    message = (
        f"the book is {request_size / (1024 * 1024):.0f} MB; a World Info book is at most "
        f"{MAX_BOOK_BYTES // (1024 * 1024)} MB, so it was not read (nothing was imported)"
    )
    return JSONResponse({"error": message}, status_code=413)


def _worldinfo(request: Request) -> WorldInfoPort:
    return engine(request).worldinfo


def _default_vault(lore: LoreEngine) -> str:
    enabled = [s.name for s in lore.sources if s.enabled]
    if not enabled:
        raise NotAvailableHere("no vault is open to import into; add one in DLE Desktop's Settings")
    return enabled[0]


def _book(body: WorldInfoImportRequest) -> WiBook:
    """The body's book. One the reader cannot take as a whole (a card whose character_book is
    damaged, ...) becomes an empty book whose problem the preview shows: the request itself has
    the shape the document asks for."""
    try:
        book = read_book_value(body.book, name=body.name)
    except WorldInfoError as exc:
        return WiBook(name=body.name or UNNAMED, kind="unreadable", entries=(), problems=(str(exc),))
    return book if book.name else dataclasses.replace(book, name=UNNAMED)


async def _plan(request: Request, body: WorldInfoImportRequest) -> tuple[WiBook, ImportPlan]:
    lore = engine(request)
    book = _book(body)
    vault = body.vault if body.vault is not None else _default_vault(lore)
    plan = await lore.worldinfo.plan_import(book, vault=vault, folder=body.folder, collision=body.on_collision)
    return book, plan


def plan_digest(plan: ImportPlan) -> str:
    """What the user saw: every row's entry, note, action, the version it overwrites and the
    text it writes."""
    rows = [[r.uid, r.path, r.action, r.base_hash, r.text] for r in plan.rows]
    blob = json.dumps([plan.vault, plan.folder, rows], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def preview_json(book: WiBook, plan: ImportPlan) -> dict[str, Any]:
    return {
        "vault": plan.vault,
        "folder": plan.folder,
        "book": plan.book,
        "kind": book.kind,
        "counts": plan.counts(),
        "writes": plan.writes,
        "rows": [
            {
                "uid": r.uid,
                "title": r.title,
                "path": r.path,
                "action": r.action,
                "diff": r.diff,
                "warnings": list(r.warnings),
                "kept": list(r.kept),
                "text": r.text,
            }
            for r in plan.rows
        ],
        "problems": list(plan.problems),
        "notes": list(plan.notes),
        "digest": plan_digest(plan),
    }


async def preview(request: Request) -> JSONResponse:
    refused = _too_large(len(await request.body()))
    if refused is not None:
        return refused
    body = parse_body(WorldInfoImportRequest, await read_json(request))
    book, plan = await _plan(request, body)
    return JSONResponse(preview_json(book, plan))


async def run_import(request: Request) -> JSONResponse:
    refused = _too_large(len(await request.body()))
    if refused is not None:
        return refused
    body = parse_body(WorldInfoImportConfirm, await read_json(request))
    _book_read, plan = await _plan(request, body)
    if body.digest is not None and body.digest != plan_digest(plan):
        raise WriteConflict(
            "the vault changed since the preview (a note was created or edited where this import writes); "
            "nothing was written: preview the import again",
            vault=plan.vault,
            path=plan.folder,
            expected_hash=body.digest,
            expected_text=None,
            current_text=None,
            proposed_text=None,
        )
    result = await _worldinfo(request).run_import(plan)
    return JSONResponse(
        {
            "batch": result.batch,
            "vault": plan.vault,
            "folder": plan.folder,
            "book": plan.book,
            "written": list(result.written),
            "skipped": list(result.skipped),
            "cancelled": result.cancelled,
            "removed": list(result.removed),
            "left": list(result.left),
            "counts": plan.counts(),
            "problems": list(plan.problems),
        }
    )


def undo_json(undo: BatchUndo) -> dict[str, Any]:
    return {
        "batch": undo.batch,
        "undone": [r.path for r in undo.undone],
        "conflicts": [f"{c.path}: {c}" for c in undo.conflicts],
        "refused": [str(e) for e in undo.refused],
        "complete": undo.complete,
    }


async def undo(request: Request) -> JSONResponse:
    body = parse_body(WorldInfoUndoRequest, await read_json(request))
    return JSONResponse(undo_json(await _worldinfo(request).undo_import(body.batch)))


async def export(request: Request) -> JSONResponse:
    query = parse_query(WorldInfoExportQuery, request.query_params)
    try:
        book, report = await _worldinfo(request).export(folder=query.folder, tag=query.tag, vault=query.vault)
    except InputError as exc:
        # The query's shape was checked above: what is left is a filter that matches no entry.
        raise NotFound(str(exc)) from None
    return JSONResponse(
        {
            "book": book,
            "report": {
                "entries": report.entries,
                "lines": [{"title": line.title, "path": line.path, "lost": list(line.lost)} for line in report.lines],
            },
        }
    )


routes = [
    Route(f"{WORLDINFO}/import/preview", preview, methods=["POST"]),
    Route(f"{WORLDINFO}/import", run_import, methods=["POST"]),
    Route(f"{WORLDINFO}/import/undo", undo, methods=["POST"]),
    Route(f"{WORLDINFO}/export", export, methods=["GET"]),
]
