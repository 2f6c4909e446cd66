"""Requests of the World Info routes (routes_worldinfo.py): a SillyTavern book to preview or
import into the vault, an import to undo, and the vault to export as a book. See schemas.py for
how the models become both the checks and the document.

The book's schema names the shapes SillyTavern writes (a World Info export, an array of entries,
a character card with its `character_book`) and the check below holds a body to exactly those
shapes; what is inside each entry is the reader's to judge (core/worldinfo: an unreadable entry is
listed among the preview's problems, never a refused request)."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, WithJsonSchema

from dle_desktop.server.schemas import NOT_BLANK, QueryModel, RequestModel, nullable, text

MAX_BOOK_NAME = 200
MAX_FOLDER = 500
MAX_VAULT = 200
MAX_TAG = 200
MAX_DIGEST = 64

#: A vault-relative folder: '/'-separated names, none starting with '.' (the index skips those),
#: no control character, backslash or ':' (a drive letter on Windows); '' is the vault's top.
#: A name is at most 63 characters: 252 bytes in UTF-8 at worst, within the 255 bytes a file
#: system allows for one name (the service refuses a longer one, so the document must too).
#: The same text as the document's `pattern` (no look-arounds: both regex dialects read it alike).
_SEGMENT = r"[^/\\\x00-\x1f\x7f.:][^/\\\x00-\x1f\x7f:]{0,62}"
FOLDER_PATTERN = rf"^({_SEGMENT}(/{_SEGMENT})*/?)?$"
_FOLDER = re.compile(FOLDER_PATTERN)
#: The batch id an import answers (worldinfo.service: wi-YYYYmmdd-HHMMSS-<8 hex>).
BATCH_PATTERN = r"^wi-[0-9]{8}-[0-9]{6}-[0-9a-f]{8}$"
BATCH = re.compile(BATCH_PATTERN)
DIGEST_PATTERN = r"^[0-9a-f]{64}$"
_DIGEST = re.compile(DIGEST_PATTERN)

_OBJECTS = {"type": "array", "items": {"type": "object"}}
_CHARACTER_BOOK = {"type": "object", "required": ["entries"], "properties": {"entries": _OBJECTS}}
BOOK_SCHEMA: dict[str, Any] = {
    "description": 'the book as SillyTavern writes it: a World Info export (`{"entries": {"0": {...}}}`, '
    "what /api/worldinfo/get answers), an array of entries, or a character card (V2/V3 JSON) with its "
    "`character_book`",
    "anyOf": [
        {
            "type": "object",
            "required": ["entries"],
            "properties": {
                "entries": {"anyOf": [{"type": "object", "additionalProperties": {"type": "object"}}, _OBJECTS]}
            },
        },
        _OBJECTS,
        {
            "type": "object",
            "required": ["data"],
            "properties": {
                "data": {
                    "type": "object",
                    "required": ["character_book"],
                    "properties": {"character_book": _CHARACTER_BOOK},
                }
            },
        },
        {"type": "object", "required": ["character_book"], "properties": {"character_book": _CHARACTER_BOOK}},
    ],
}
_SHAPES = 'send a World Info book ({"entries": {...}}), an array of entries, or a character card with a character_book'


def _objects(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def _character_book(value: Any) -> bool:
    return isinstance(value, dict) and "entries" in value and _objects(value["entries"])


def book_shape_ok(value: Any) -> bool:
    """Whether `value` is one of BOOK_SCHEMA's shapes (the same test, in Python)."""
    if isinstance(value, list):
        return _objects(value)
    if not isinstance(value, dict):
        return False
    if "entries" in value:
        entries = value["entries"]
        if _objects(entries) or (isinstance(entries, dict) and all(isinstance(v, dict) for v in entries.values())):
            return True
    data = value.get("data")
    if isinstance(data, dict) and "character_book" in data and _character_book(data["character_book"]):
        return True
    return "character_book" in value and _character_book(value["character_book"])


def _book(value: Any) -> Any:
    if not book_shape_ok(value):
        raise ValueError(f"book is no lorebook: {_SHAPES}")
    return value


def _folder(value: Any) -> str:
    folder = text(value, "folder", MAX_FOLDER)
    if not _FOLDER.match(folder):
        raise ValueError(
            f"folder {folder[:80]!r} is not a folder inside the vault: use '/' between names of at most 63 "
            "characters, no name may start with '.', and no control characters, '\\' or ':'"
        )
    return folder


def _vault(value: Any) -> str | None:
    return None if value is None else text(value, "vault", MAX_VAULT, blank_ok=False)


def _digest(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _DIGEST.match(value):
        raise ValueError("digest must be the preview's `digest` (64 hexadecimal digits)")
    return value


def _collision(value: Any) -> str:
    if value not in ("rename", "skip", "overwrite"):
        raise ValueError("on_collision must be one of rename, skip, overwrite")
    return str(value)


def _confirm(value: Any) -> bool:
    if value is not True:
        raise ValueError(
            "confirm must be true: preview the import first (POST /worldinfo/import/preview), then confirm it"
        )
    return True


Book = Annotated[Any, BeforeValidator(_book), WithJsonSchema(BOOK_SCHEMA)]
BookName = Annotated[
    str,
    BeforeValidator(lambda v: text(v, "name", MAX_BOOK_NAME)),
    WithJsonSchema(
        {
            "type": "string",
            "maxLength": MAX_BOOK_NAME,
            "default": "",
            "description": "the book's name as SillyTavern lists it (default: the card's book or character name)",
        }
    ),
]
Folder = Annotated[
    str,
    BeforeValidator(_folder),
    WithJsonSchema(
        {
            "type": "string",
            "maxLength": MAX_FOLDER,
            "pattern": FOLDER_PATTERN,
            "default": "",
            "description": "the vault folder the notes go into ('' = the vault's top)",
        }
    ),
]
Vault = Annotated[
    str | None,
    BeforeValidator(_vault),
    WithJsonSchema(
        {
            "type": ["string", "null"],
            "maxLength": MAX_VAULT,
            "pattern": NOT_BLANK,
            "description": "the vault to import into, by name (default: the first vault)",
        }
    ),
]
OnCollision = Annotated[
    Literal["rename", "skip", "overwrite"],
    BeforeValidator(_collision),
    WithJsonSchema(
        {
            "type": "string",
            "enum": ["rename", "skip", "overwrite"],
            "default": "rename",
            "description": "a note name already taken: rename (DLE's `_imported`, `_imported_2` … names), skip the "
            "entry, or overwrite the note (the preview shows the diff)",
        }
    ),
]


class WorldInfoImportRequest(RequestModel):
    """POST /worldinfo/import/preview: what importing the book would write; nothing is written."""

    shape: ClassVar[str] = 'send {"book": {...}, "name": "<book>", "folder": "<vault folder>"}'
    missing: ClassVar[dict[str, str]] = {"book": f"book is required: {_SHAPES}"}

    book: Book
    name: BookName = ""
    folder: Folder = ""
    vault: Vault = None
    on_collision: OnCollision = "rename"


class WorldInfoImportConfirm(WorldInfoImportRequest):
    """POST /worldinfo/import: the same body as the preview, with `confirm: true`."""

    shape: ClassVar[str] = 'send the preview\'s body with "confirm": true (and its "digest")'
    missing: ClassVar[dict[str, str]] = {
        "book": f"book is required: {_SHAPES}",
        "confirm": "confirm is required: preview the import first, then send the same body with confirm: true",
    }

    confirm: Annotated[
        bool,
        BeforeValidator(_confirm),
        WithJsonSchema({"const": True, "description": "true: the user saw the preview and wants it written"}),
    ]
    digest: Annotated[
        str | None,
        BeforeValidator(_digest),
        WithJsonSchema(
            {
                "type": ["string", "null"],
                "pattern": DIGEST_PATTERN,
                "description": "the preview's `digest`: the import is refused (409) when its plan is no longer "
                "the one previewed (the vault changed meanwhile)",
            }
        ),
    ] = None


def _batch(value: Any) -> str:
    if not isinstance(value, str) or not BATCH.match(value):
        raise ValueError("batch must be an import's `batch` (wi-YYYYmmdd-HHMMSS-xxxxxxxx)")
    return value


class WorldInfoUndoRequest(RequestModel):
    """POST /worldinfo/import/undo: take a whole import back."""

    shape: ClassVar[str] = 'send {"batch": "<the import\'s batch>"}'
    missing: ClassVar[dict[str, str]] = {"batch": shape}

    batch: Annotated[
        str,
        BeforeValidator(_batch),
        WithJsonSchema({"type": "string", "pattern": BATCH_PATTERN, "description": "the import's `batch`"}),
    ]


class WorldInfoExportQuery(QueryModel):
    """GET /worldinfo/export: which entries become the book (all of them by default)."""

    folder: Annotated[
        str | None,
        BeforeValidator(lambda v: None if v is None else _folder(v)),
        WithJsonSchema(
            nullable(
                {"type": "string", "maxLength": MAX_FOLDER, "pattern": FOLDER_PATTERN},
                "only the entries in this vault folder (and below)",
            )
        ),
    ] = None
    tag: Annotated[
        str | None,
        BeforeValidator(lambda v: None if v is None else text(v, "tag", MAX_TAG)),
        WithJsonSchema(nullable({"type": "string", "maxLength": MAX_TAG}, "only the entries with this tag")),
    ] = None
    vault: Annotated[
        str | None,
        BeforeValidator(_vault),
        WithJsonSchema(
            nullable({"type": "string", "maxLength": MAX_VAULT, "pattern": NOT_BLANK}, "only the entries of this vault")
        ),
    ] = None
