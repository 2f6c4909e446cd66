"""Our own lore API under /api/dle/v1."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.errors import DleError
from dle_desktop.server.schemas import parse_query
from dle_desktop.server.schemas_lore import EntriesQuery, SyncQuery
from dle_desktop.server.services import engine as _engine


async def status(request: Request) -> JSONResponse:
    return JSONResponse(_engine(request).status())


async def list_entries(request: Request) -> JSONResponse:
    snap = _engine(request).snapshot
    if snap is None:
        return JSONResponse({"entries": [], "ready": False})
    query = parse_query(EntriesQuery, request.query_params)
    q, vault = query.q.strip().lower(), query.vault
    entries = [
        e.to_json(with_content=False)
        for e in snap.entries
        if (not vault or e.vault == vault) and (not q or q in e.title.lower() or any(q in k.lower() for k in e.keys))
    ]
    return JSONResponse({"entries": entries, "ready": True, "index_version": snap.version})


async def get_entry(request: Request) -> JSONResponse:
    snap = _engine(request).snapshot
    vault, path = request.path_params["vault"], request.path_params["path"]
    entry = snap.by_uid.get(f"{vault}\x00{path}") if snap else None
    if entry is None:
        return JSONResponse({"error": f"no entry at {vault}:{path}"}, status_code=404)
    return JSONResponse(entry.to_json())


async def health(request: Request) -> JSONResponse:
    return JSONResponse(_engine(request).health().to_json())


async def skipped(request: Request) -> JSONResponse:
    snap = _engine(request).snapshot
    return JSONResponse(
        {
            "skipped": [s.to_json() for s in snap.skipped] if snap else [],
            "warnings": list(snap.warnings) if snap else [],
        }
    )


async def sync(request: Request) -> JSONResponse:
    engine = _engine(request)
    force = parse_query(SyncQuery, request.query_params).force
    try:
        result = await engine.sync_now(force=force == "1")
    except DleError as exc:
        return JSONResponse({"error": str(exc)}, status_code=exc.http_status)
    if result is None:
        return JSONResponse({"error": engine.last_error or "sync failed"}, status_code=502)
    return JSONResponse(
        {"changes": result.changes.to_json(), "seconds": round(result.seconds, 4), "entries": len(result.snapshot)}
    )


routes = [
    Route("/api/dle/v1/status", status, methods=["GET"]),
    Route("/api/dle/v1/entries", list_entries, methods=["GET"]),
    Route("/api/dle/v1/entries/{vault}/{path:path}", get_entry, methods=["GET"]),
    Route("/api/dle/v1/health", health, methods=["GET"]),
    Route("/api/dle/v1/skipped", skipped, methods=["GET"]),
    Route("/api/dle/v1/sync", sync, methods=["POST"]),
]
