"""World Info import and export as a service of the engine: SillyTavern books found and read, an
import previewed and written as one undoable batch, the vault exported as a book. The mapping
itself is pure and lives in core/worldinfo."""

from dle_desktop.worldinfo.books import find_book, list_books, read_book_file, read_book_stream
from dle_desktop.worldinfo.model import BookListing, Collision, ImportPlan, ImportResult, PlanRow
from dle_desktop.worldinfo.service import ImportFailed, WorldInfoService, book_json, export_defaults, save_book

__all__ = [
    "BookListing",
    "Collision",
    "ImportFailed",
    "ImportPlan",
    "ImportResult",
    "PlanRow",
    "WorldInfoService",
    "book_json",
    "export_defaults",
    "find_book",
    "list_books",
    "read_book_file",
    "read_book_stream",
    "save_book",
]
