"""The OpenAPI operations of the World Info routes (routes_worldinfo.py): their paths, answers and
request bodies, merged into the document by openapi.py."""

from __future__ import annotations

from pydantic import BaseModel

from dle_desktop.server import answers_worldinfo, schemas, schemas_worldinfo
from dle_desktop.server.openapi_parts import (
    API,
    BODY_ERRORS,
    error_answer,
    json_answer,
    operation,
    query_params,
    ref_to,
)

ANSWERS: list[type[BaseModel]] = [
    answers_worldinfo.ImportPreview,
    answers_worldinfo.ImportDone,
    answers_worldinfo.ImportUndone,
    answers_worldinfo.WorldInfoExport,
]

REQUEST_BODIES: dict[str, type[schemas.RequestModel]] = {
    "WorldInfoImportRequest": schemas_worldinfo.WorldInfoImportRequest,
    "WorldInfoImportConfirm": schemas_worldinfo.WorldInfoImportConfirm,
    "WorldInfoUndoRequest": schemas_worldinfo.WorldInfoUndoRequest,
}

_PLAN_ERRORS = {
    **BODY_ERRORS,
    "413": error_answer("the body is over 50 MiB (no World Info book is that big) or over the server's limit"),
    "403": error_answer("the vault is read-only (or keeps no write history to undo an import with)"),
    "404": error_answer("no vault has that name"),
    "409": error_answer("no vault is open"),
}
_BOOK = (
    "The book is what SillyTavern's /api/worldinfo/get answers (or a file's JSON: an array of entries, a "
    "character card). Each entry becomes a note by DLE's mapping: title from `comment`, `key` → keys, "
    "`keysecondary` → refine_keys, `order` → priority (lower comes first here, the direction SillyTavern's "
    "order is read in is said in `notes`), the position table, depth, probability, scanDepth, constant → the "
    "always tag, outletName → outlet; fields DLE does not enforce are kept in the frontmatter (`kept`) for "
    "the way back. An entry that cannot be read, or a book that cannot (a card whose character_book is "
    "damaged), is listed in `problems`."
)

PATHS: dict[str, dict] = {
    f"{API}/worldinfo/import/preview": {
        "post": operation(
            "previewWorldInfoImport",
            "What importing a SillyTavern World Info book would write; nothing is written",
            json_answer(ref_to("ImportPreview"), "one row per entry: the note it becomes, collisions, warnings"),
            tag="worldinfo",
            body=ref_to("WorldInfoImportRequest"),
            errors=_PLAN_ERRORS,
            description=_BOOK,
        )
    },
    f"{API}/worldinfo/import": {
        "post": operation(
            "importWorldInfo",
            "Import a SillyTavern World Info book into the vault (after its preview)",
            json_answer(ref_to("ImportDone"), "the notes written, and the batch that undoes them"),
            tag="worldinfo",
            body=ref_to("WorldInfoImportConfirm"),
            errors={
                **_PLAN_ERRORS,
                "409": error_answer(
                    "no vault is open, the plan is no longer the one previewed (`digest`), or a note changed "
                    "while it was written (what the import had written is removed again)"
                ),
            },
            description="Plans the import again from the same body and writes it through the note writer: "
            "atomic notes, one batch in the write history (one Undo), one re-index at the end. An import that "
            "fails on any note removes what it had written.",
        )
    },
    f"{API}/worldinfo/import/undo": {
        "post": operation(
            "undoWorldInfoImport",
            "Take a whole import back (one Undo)",
            json_answer(ref_to("ImportUndone"), "the notes taken back, and those left because they changed since"),
            tag="worldinfo",
            body=ref_to("WorldInfoUndoRequest"),
            errors={
                **BODY_ERRORS,
                "403": error_answer("the import was already undone, or is still running"),
                "404": error_answer("no import with that batch is in the write history"),
            },
        )
    },
    f"{API}/worldinfo/export": {
        "get": operation(
            "exportWorldInfo",
            "The vault (or a folder or tag of it) as a SillyTavern World Info book",
            json_answer(ref_to("WorldInfoExport"), "the book, and what World Info cannot express, entry by entry"),
            tag="worldinfo",
            params=query_params(schemas_worldinfo.WorldInfoExportQuery),
            errors={
                "400": error_answer("a bad folder or an over-long tag or vault name"),
                "404": error_answer("no lore entry matches the vault, folder and tag, or no vault has that name"),
                "409": error_answer("the vault is not indexed yet"),
            },
            description="Keys, refine keys (selective, AND_ANY), order from priority, position, depth, role, "
            "constant, probability, cooldown, outlet (outletName) and the content as the pipeline injects it; "
            "the SillyTavern fields an import kept come back as they were.",
        )
    },
}
