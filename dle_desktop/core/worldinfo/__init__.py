"""SillyTavern World Info books in and out: reading books and cards, the note mapping, the export.

Pure: no I/O. The service layer (dle_desktop/worldinfo) reads files and writes notes.
"""

from dle_desktop.core.worldinfo.convert import book_notes, convert_book, convert_entry
from dle_desktop.core.worldinfo.export import export_book
from dle_desktop.core.worldinfo.model import (
    MAX_BOOK_BYTES,
    ExportDefaults,
    ExportLine,
    ExportReport,
    NoteSpec,
    WiBook,
    WiEntry,
    WorldInfoError,
)
from dle_desktop.core.worldinfo.reader import read_book_bytes, read_book_value

__all__ = [
    "MAX_BOOK_BYTES",
    "ExportDefaults",
    "ExportLine",
    "ExportReport",
    "NoteSpec",
    "WiBook",
    "WiEntry",
    "WorldInfoError",
    "book_notes",
    "convert_book",
    "convert_entry",
    "export_book",
    "read_book_bytes",
    "read_book_value",
]
