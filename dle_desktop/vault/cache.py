"""The on-disk index cache: what each vault parsed to last time, so the app starts with its
last index at once and re-parses only what changed.

One file per vault and parse configuration, written atomically. Pickle is used because the
cache is our own file in the user's data folder and loading 10k entries must take well
under half a second; anything unexpected in it is treated as a cache miss, never as data.

The records are pickled in chunks of a few hundred: one `pickle.load` of 10,000 entries held
the interpreter lock for half a second while the engine thread read it, and the window, which
needs that lock to run at all, froze for as long. Between two chunks it gets its turn.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dle_desktop.core.entry import Entry, Skip
from dle_desktop.core.user_activity import GiveWay, no_wait
from dle_desktop.fileio import atomic_file
from dle_desktop.vault.collector import collector_paused

log = logging.getLogger(__name__)

#: 5: finalized entries saved as their derived fields (issue 24); older files are re-indexed once.
CACHE_FORMAT = 5
#: Records per separately pickled chunk (each loads in a few milliseconds).
CHUNK = 250


@dataclass(frozen=True)
class FileRecord:
    """One vault file as last seen: its change stamp, content hash, and what it parsed to."""

    stamp: str | None
    content_hash: str
    result: Entry | Skip


def _chunked(mapping: dict[Any, Any], give_way: GiveWay = no_wait) -> list[bytes]:
    """`mapping` pickled CHUNK items at a time: the window gets the interpreter between two, and
    while the user acts (or waits for a picture) the save waits there (`give_way`)."""
    items = list(mapping.items())
    chunks = []
    for i in range(0, len(items), CHUNK):
        if i:
            give_way()
        chunks.append(pickle.dumps(dict(items[i : i + CHUNK]), protocol=pickle.HIGHEST_PROTOCOL))
    return chunks


def _joined(meta_chunks: Any) -> dict[str, dict[Any, Any]]:
    """The mappings `_chunked` made, by name (a cache saved before meta chunks has none)."""
    out: dict[str, dict[Any, Any]] = {}
    for name, chunks in (meta_chunks or {}).items():
        merged: dict[Any, Any] = {}
        for chunk in chunks:
            merged.update(pickle.loads(chunk))
        out[name] = merged
    return out


class IndexCache:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _file(self, key: str) -> Path:
        return self.directory / f"{hashlib.sha256(key.encode('utf-8')).hexdigest()[:32]}.idx"

    def load(self, key: str) -> tuple[dict[str, FileRecord], dict[str, Any]] | None:
        """(records, meta) as saved under `key`, or None on a miss or any damage."""
        path = self._file(key)
        # The collector would scan the ~100k objects being created several times over for
        # nothing (they are all live): pausing it makes start-up about a third faster.
        with collector_paused():
            return self._load(path, key)

    def _load(self, path: Path, key: str) -> tuple[dict[str, FileRecord], dict[str, Any]] | None:
        try:
            with open(path, "rb") as fh:
                payload = pickle.load(fh)
            if not (isinstance(payload, dict) and payload.get("format") == CACHE_FORMAT and payload.get("key") == key):
                return None
            chunks = payload.get("chunks")
            if not isinstance(chunks, list) or not all(isinstance(c, bytes) for c in chunks):
                log.warning("index cache %s has unexpected contents; doing a full index", path.name)
                return None
            records: dict[str, Any] = {}
            for chunk in chunks:  # the window gets the interpreter between two chunks
                records.update(pickle.loads(chunk))
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - any damage means "rebuild"
            log.warning("index cache %s unreadable (%s); doing a full index", path.name, exc)
            return None
        if not all(isinstance(r, FileRecord) for r in records.values()):
            log.warning("index cache %s has unexpected contents; doing a full index", path.name)
            return None
        meta = payload.get("meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        try:
            meta.update(_joined(payload.get("meta_chunks")))
        except Exception as exc:  # noqa: BLE001 - damaged extras: the records alone still make the index
            log.warning("index cache %s: its saved links are unreadable (%s); resolving them again", path.name, exc)
            for name in payload.get("meta_chunks") or ():
                meta.pop(name, None)
        return records, meta

    def save(
        self, key: str, records: dict[str, FileRecord], meta: dict[str, Any] | None = None, give_way: GiveWay = no_wait
    ) -> None:
        """`give_way`: called between pieces of the pickling (a save runs in the background)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._file(key)
        chunks = _chunked(records, give_way)
        small = {k: v for k, v in (meta or {}).items() if not (isinstance(v, dict) and len(v) > CHUNK)}
        # A large mapping of the meta (saved links per entry, the title table) is pickled in chunks
        # like the records: pickling it whole held the interpreter lock ~0.1-0.3 s at 10,000 entries,
        # while the window was filling its table.
        meta_chunks = {k: _chunked(v, give_way) for k, v in (meta or {}).items() if k not in small}
        payload = {"format": CACHE_FORMAT, "key": key, "chunks": chunks, "meta": small, "meta_chunks": meta_chunks}
        with atomic_file(path, private=True) as fh:
            pickle.dump(payload, fh, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def read_file(path: Path) -> tuple[str, dict[str, FileRecord]]:
        """(its key, its records) of one cache file, whatever its key (diagnostics); raises on damage."""
        with open(path, "rb") as fh:
            payload = pickle.load(fh)
        if not isinstance(payload, dict) or payload.get("format") != CACHE_FORMAT:
            raise ValueError(f"not an index cache of format {CACHE_FORMAT}")
        records: dict[str, FileRecord] = {}
        for chunk in payload.get("chunks") or ():
            records.update(pickle.loads(chunk))
        return str(payload.get("key", "")), records

    def clear(self) -> int:
        removed = 0
        if self.directory.is_dir():
            for f in self.directory.glob("*.idx"):
                f.unlink(missing_ok=True)
                removed += 1
        return removed
