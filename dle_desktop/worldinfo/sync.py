"""Mirror a vault folder into a SillyTavern World Info book, and take SillyTavern's edits back.

Each sync keeps a record in the data folder (`worldinfo-sync/<id>.json`): the book's path, the
digest of what we last wrote and that book itself. The record is what makes three promises hold:
- a book we have no record of is never overwritten (it is someone else's);
- a book whose digest no longer matches ours was edited in SillyTavern since, so the user is shown
  the difference and chooses which side wins;
- when SillyTavern wins, only what was changed there (against the book we last wrote) goes back
  into the notes, so fields World Info cannot hold (requires, cascade links...) survive.

Digests are taken over the entries as data (sorted keys, entries by uid), not over the file's
bytes: SillyTavern re-saves a book with its own indentation and key order.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from dle_desktop.core.worldinfo import NoteSpec, WiBook, WorldInfoError, convert_entry, read_book_value
from dle_desktop.errors import DleError
from dle_desktop.fileio import (
    NameTaken,
    make_private_dir,
    parse_json_text,
    read_json_file,
    write_atomic,
    write_private_atomic,
)
from dle_desktop.state.settings.records import WiSyncConfig

log = logging.getLogger(__name__)

#: How long after a vault change the book is rewritten: changes of one save (a note and its
#: attachments, an editor's temp files) land in one rewrite, well inside the 2 s promise.
SETTLE_S = 0.25

Status = Literal["written", "unchanged", "foreign", "conflict", "error", "off"]
Winner = Literal["vault", "sillytavern"]


@dataclass(frozen=True)
class EntryChange:
    """How one entry differs between the book in SillyTavern and what the vault would write."""

    title: str
    kind: Literal["added in SillyTavern", "removed in SillyTavern", "changed in SillyTavern", "changed in the vault"]
    fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class SyncOutcome:
    book: str
    book_path: str
    status: Status
    message: str
    changes: tuple[EntryChange, ...] = ()
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {
            "book": self.book,
            "book_path": self.book_path,
            "status": self.status,
            "message": self.message,
            "changes": [{"title": c.title, "kind": c.kind, "fields": list(c.fields)} for c in self.changes],
            "at": self.at,
        }


class SyncHost(Protocol):
    """What the sync needs of the World Info service and the note writer."""

    async def export_folder(self, vault: str, folder: str) -> tuple[dict[str, Any], dict[str, str]]:
        """The book for `folder` and, for each entry's uid, the note it came from."""
        ...

    async def apply_st_changes(
        self, config: WiSyncConfig, changed: list[tuple[str, NoteSpec, NoteSpec]], added: WiBook | None
    ) -> list[str]:
        """Write SillyTavern's edits into the notes: (note path, spec before, spec after) for each
        changed entry, and import the entries added there; returns problems in words."""
        ...


def _entries(book: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    raw = book.get("entries") if isinstance(book, Mapping) else None
    items: Iterable[Any]
    if isinstance(raw, Mapping):
        items = raw.values()
    elif isinstance(raw, list):
        items = raw
    else:
        return {}
    out: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(items):
        if isinstance(entry, Mapping):
            out[str(entry.get("uid", f"#{i}"))] = entry
    return out


def book_digest(book: Mapping[str, Any]) -> str:
    entries = _entries(book)
    canonical = json.dumps([entries[k] for k in sorted(entries)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _title(entry: Mapping[str, Any], uid: str) -> str:
    comment = entry.get("comment")
    return comment.strip() if isinstance(comment, str) and comment.strip() else f"entry {uid}"


# Fields SillyTavern's editor keeps for itself; a change there is not an edit of the lore.
_EDITOR_ONLY = frozenset({"displayIndex", "addMemo"})


def _changed_fields(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(sorted(k for k in set(a) | set(b) if k not in _EDITOR_ONLY and a.get(k) != b.get(k)))


def compare(st_book: Mapping[str, Any], base: Mapping[str, Any], vault_book: Mapping[str, Any]) -> list[EntryChange]:
    """What SillyTavern changed since `base` (our last write), and what the vault changed since."""
    st, old, new = _entries(st_book), _entries(base), _entries(vault_book)
    changes: list[EntryChange] = []
    for uid, entry in st.items():
        if uid not in old:
            changes.append(EntryChange(_title(entry, uid), "added in SillyTavern"))
        elif fields := _changed_fields(old[uid], entry):
            changes.append(EntryChange(_title(entry, uid), "changed in SillyTavern", fields))
    for uid, entry in old.items():
        if uid not in st:
            changes.append(EntryChange(_title(entry, uid), "removed in SillyTavern"))
    # The vault's side is matched by title: a note added or removed renumbers nothing in SillyTavern's
    # book, but the export is made afresh.
    by_title = {_title(e, u): e for u, e in old.items()}
    for uid, entry in new.items():
        before = by_title.get(_title(entry, uid))
        fields = _changed_fields(before, {**entry, "uid": before.get("uid")}) if before is not None else ("new note",)
        if fields:
            changes.append(EntryChange(_title(entry, uid), "changed in the vault", fields))
    return changes


def stable_uids(
    book: dict[str, Any], paths: dict[str, str], previous: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Give each entry the uid its note had in the book we wrote before (`previous`: uid → note),
    new notes the next free numbers. SillyTavern keys an entry's timed effects (sticky, cooldown)
    and its editor state by uid, so a note must keep its number when others come and go."""
    old_uid = {path: uid for uid, path in previous.items()}
    entries = _entries(book)
    used = {int(u) for u in old_uid.values() if u.isdigit()}
    next_uid = max(used, default=-1) + 1
    out: dict[str, Any] = {}
    out_paths: dict[str, str] = {}
    for uid, entry in entries.items():
        path = paths.get(uid)
        new_uid = old_uid.get(path) if path is not None else None
        if new_uid is None or new_uid in out:
            new_uid = str(next_uid)
            next_uid += 1
        out[new_uid] = {**entry, "uid": int(new_uid)}
        if path is not None:
            out_paths[new_uid] = path
    return {**book, "entries": out}, out_paths


@dataclass
class _Record:
    book_path: str
    digest: str
    book: dict[str, Any]
    paths: dict[str, str]
    #: sha256 of the exact text written: a book still byte for byte ours needs no parsing
    text_sha: str = ""


def _spec(uid: str, entry: Mapping[str, Any]) -> NoteSpec:
    book = read_book_value({"entries": {uid: dict(entry)}}, name="sync")
    return convert_entry(book.entries[0])


class WorldInfoSync:
    """Every World Info sync of the settings, run on the engine loop."""

    def __init__(self, host: SyncHost, records_dir: Path, configs: Iterable[WiSyncConfig]) -> None:
        self._host = host
        self._dir = records_dir
        self.configs = tuple(configs)
        self.outcomes: dict[str, SyncOutcome] = {}
        self._pending: asyncio.TimerHandle | None = None
        self._running: asyncio.Task[Any] | None = None
        self._lock = asyncio.Lock()
        self.on_outcome: Callable[[SyncOutcome], None] | None = None
        self._closed = False

    # -- the record ----------------------------------------------------------------------------
    def _record_path(self, config: WiSyncConfig) -> Path:
        key = hashlib.sha256(os.path.realpath(config.book_path).encode("utf-8")).hexdigest()[:24]
        return self._dir / f"{key}.json"

    def _load(self, config: WiSyncConfig) -> _Record | None:
        path = self._record_path(config)
        if not path.exists():
            return None
        try:
            raw = read_json_file(path, "a World Info sync record")
            return _Record(
                str(raw["book_path"]),
                str(raw["digest"]),
                dict(raw["book"]),
                dict(raw.get("paths", {})),
                str(raw.get("text_sha", "")),
            )
        except (OSError, ValueError, KeyError, TypeError, DleError) as exc:
            # Without a readable record the book cannot be proven ours: it is left alone.
            log.warning("World Info sync record %s is unreadable (%s); the book is treated as not ours", path, exc)
            return None

    def _save(self, config: WiSyncConfig, book: dict[str, Any], paths: dict[str, str], digest: str, text: str) -> None:
        make_private_dir(self._dir)
        record = {
            "book_path": config.book_path,
            "digest": digest,
            "book": book,
            "paths": paths,
            "text_sha": _sha(text),
        }
        write_private_atomic(self._record_path(config), json.dumps(record, ensure_ascii=False))

    # -- triggers ------------------------------------------------------------------------------
    def index_changed(self, changed: Iterable[str] | None) -> None:
        """A re-index finished (`changed`: the notes added, removed or changed, as the index's
        change set names them, `vault:path`; None: all of them, as after a first build): rewrite
        the books those notes belong to once the changes settle. Called on the engine loop."""
        touched = None if changed is None else list(changed)
        if not any(self._covers(c, touched) for c in self.configs if c.enabled):
            return
        loop = asyncio.get_running_loop()
        if self._pending is not None:
            self._pending.cancel()
        self._pending = loop.call_later(SETTLE_S, self._start_all)

    @staticmethod
    def _covers(config: WiSyncConfig, touched: list[str] | None) -> bool:
        if touched is None:
            return True
        # Matched from the vault's side: a vault name may hold a colon too.
        prefix = f"{config.vault}:" + (config.folder.rstrip("/") + "/" if config.folder else "")
        return any(t.startswith(prefix) for t in touched)

    def _start_all(self) -> None:
        self._pending = None
        if not self._closed:
            self._running = asyncio.get_running_loop().create_task(self.sync_all())

    async def close(self) -> None:
        """Stop: a rewrite not started yet is dropped, one under way is cancelled (the book is
        replaced atomically or not at all). Called by the engine when it stops."""
        self._closed = True
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        if self._running is not None and not self._running.done():
            self._running.cancel()
            await asyncio.gather(self._running, return_exceptions=True)

    async def sync_all(self) -> list[SyncOutcome]:
        return [await self.sync(c) for c in self.configs if c.enabled]

    # -- one book ------------------------------------------------------------------------------
    def _done(self, outcome: SyncOutcome) -> SyncOutcome:
        self.outcomes[outcome.book_path] = outcome
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        return outcome

    async def sync(self, config: WiSyncConfig, winner: Winner | None = None) -> SyncOutcome:
        """Bring one book up to date. Without `winner`, a book edited in SillyTavern since our
        last write is not touched: the outcome is a conflict listing the differences."""
        async with self._lock:
            try:
                return self._done(await self._sync(config, winner))
            except (OSError, ValueError, DleError) as exc:
                return self._done(SyncOutcome(config.book, config.book_path, "error", str(exc)))

    async def _sync(self, config: WiSyncConfig, winner: Winner | None) -> SyncOutcome:
        # The reading, parsing, hashing and writing run in a worker thread: a book of a thousand
        # entries is a megabyte of JSON, and the engine loop serves generations meanwhile.
        path = config.book_path
        user_dir = Path(config.st_root) / "data" / config.st_user
        if not config.st_root or not await asyncio.to_thread(user_dir.is_dir):
            return SyncOutcome(config.book, path, "error", f"SillyTavern's user folder {user_dir} was not found")
        record = await asyncio.to_thread(self._load, config)
        seen = await asyncio.to_thread(_read_raw, path)
        if seen is not None and record is None:
            return SyncOutcome(
                config.book,
                path,
                "foreign",
                f"SillyTavern already has a book named “{config.book}” that DLE Desktop did not write; "
                "it is left as it is. Choose another name, or remove that book in SillyTavern.",
            )
        st_book: dict[str, Any] | None = None  # the book as SillyTavern has it, when it differs from ours
        ours_as_written = record is not None and seen is not None and _sha(seen) == record.text_sha
        if record is not None and seen is not None and not ours_as_written:
            on_disk = await asyncio.to_thread(_parse_book, seen)
            if isinstance(on_disk, WorldInfoError):
                if winner != "vault":
                    return SyncOutcome(
                        config.book, path, "conflict", f"The book in SillyTavern is unreadable: {on_disk}"
                    )
            elif await asyncio.to_thread(book_digest, on_disk) != record.digest:
                st_book = on_disk
            else:
                ours_as_written = True  # re-saved by SillyTavern with nothing changed
        if st_book is not None and winner is None:
            assert record is not None
            book, _paths = await self._export(config, record)
            return SyncOutcome(
                config.book,
                path,
                "conflict",
                f"“{config.book}” was edited in SillyTavern since the last sync. Choose which side wins.",
                tuple(await asyncio.to_thread(compare, st_book, record.book, book)),
            )
        problems: list[str] = []
        if st_book is not None and winner == "sillytavern":
            assert record is not None
            problems = await self._take_st_edits(config, record, st_book)
        book, paths = await self._export(config, record)
        digest = await asyncio.to_thread(book_digest, book)
        if ours_as_written and record is not None and digest == record.digest:
            return SyncOutcome(config.book, path, "unchanged", f"“{config.book}” is up to date")
        text = await asyncio.to_thread(self._write, config, book, seen)
        await asyncio.to_thread(self._save, config, book, paths, digest, text)
        count = len(_entries(book))
        message = f"Wrote {count} entries to “{config.book}”"
        if problems:
            message += "; " + "; ".join(problems)
        return SyncOutcome(config.book, path, "written", message)

    async def _export(self, config: WiSyncConfig, record: _Record | None) -> tuple[dict[str, Any], dict[str, str]]:
        book, paths = await self._host.export_folder(config.vault, config.folder)
        return stable_uids(book, paths, record.paths if record is not None else {})

    def _write(self, config: WiSyncConfig, book: dict[str, Any], seen: str | None) -> str:
        """Write the book over `seen` (the file's text when it was judged; None: there was none);
        the text written."""
        path = config.book_path
        os.makedirs(os.path.dirname(path), exist_ok=True)

        def unchanged_since_seen() -> None:
            # SillyTavern may save the book between our look and our rename: then what was judged
            # is gone, nothing is replaced, and the next sync judges the new text.
            if _read_raw(path) != seen:
                raise ValueError(f"“{config.book}” changed in SillyTavern while it was being written; nothing replaced")

        text = json.dumps(book, ensure_ascii=False, indent=4)
        try:
            write_atomic(path, text, exclusive=seen is None, check=None if seen is None else unchanged_since_seen)
        except NameTaken:
            raise ValueError(
                f"a book named “{config.book}” appeared in SillyTavern meanwhile; nothing replaced"
            ) from None
        return text

    async def _take_st_edits(self, config: WiSyncConfig, record: _Record, st_book: dict[str, Any]) -> list[str]:
        old, st = _entries(record.book), _entries(st_book)
        changed: list[tuple[str, NoteSpec, NoteSpec]] = []
        added: dict[str, Any] = {}
        problems: list[str] = []
        for uid, entry in st.items():
            if uid not in old:
                added[uid] = dict(entry)
            elif _changed_fields(old[uid], entry):
                note = record.paths.get(uid)
                if note is None:
                    problems.append(f"“{_title(entry, uid)}”: its note is not known; not taken over")
                    continue
                changed.append((note, _spec(uid, old[uid]), _spec(uid, entry)))
        removed = [_title(e, u) for u, e in old.items() if u not in st]
        if removed:
            problems.append(
                f"{len(removed)} entries removed in SillyTavern are kept in the vault "
                f"({', '.join(removed[:5])}{'…' if len(removed) > 5 else ''}); delete those notes to remove them"
            )
        new_book = read_book_value({"entries": added}, name=config.book) if added else None
        problems += await self._host.apply_st_changes(config, changed, new_book)
        return problems


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _read_raw(path: str) -> str | None:
    """The book file's text as it is now; None when there is none (an unreadable file reads as
    text that is no book, so it is judged, never taken for absent)."""
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def _parse_book(text: str) -> dict[str, Any] | WorldInfoError:
    try:
        raw = parse_json_text(text, "the World Info book")
    except DleError as exc:
        return WorldInfoError(str(exc))
    if not isinstance(raw, dict):
        return WorldInfoError("the book is not a JSON object")
    return raw


def spec_changes(before: NoteSpec, after: NoteSpec) -> tuple[dict[str, Any], list[str], bool]:
    """The frontmatter fields to set, the ones to remove and whether the body changed, going from
    the note `before` describes to the one `after` does."""
    to_set = {k: v for k, v in after.fields.items() if before.fields.get(k) != v}
    to_remove = [k for k in before.fields if k not in after.fields]
    return to_set, to_remove, before.body != after.body
