"""Reading and parsing one batch of notes: in a worker thread, or for a big index in worker
processes.

A first index of 10,000 notes spends seconds of Python in reading, hashing and parsing. Run in
the app's own threads, that work holds the interpreter lock the window needs to paint, and a
thread pool cannot use a second core. `BatchProcesses` runs the same batches in spawned worker
processes (no Qt, no inherited threads); only the parsed records come back, in pickled form.
Small syncs (the watcher's few notes) stay in a thread: starting processes costs about a second.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Mapping
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass

from dle_desktop.core.entry import Entry, Skip, TagConfig
from dle_desktop.core.fields import FieldDefinitions
from dle_desktop.core.note_parser import parse_note
from dle_desktop.errors import NoteOutsideVault, VaultError
from dle_desktop.vault.sources import FolderSource

log = logging.getLogger(__name__)

#: A folder sync reads this many notes or more in worker processes.
PROCESS_MIN_NOTES = 1000
#: Worker processes for a big sync: the machine's cores, at most this many.
MAX_PROCESSES = 4

#: What a read gives back per note: (change stamp, content hash, parse). The parse is None when
#: the hash is the one `BatchJob.prior_hashes` gave: the caller keeps the parse it already has.
ReadRecord = tuple[str | None, str, Entry | Skip | None]


@dataclass(frozen=True)
class ParseSettings:
    """What a note's parse depends on besides its text (picklable, for worker processes)."""

    tags: TagConfig
    field_definitions: FieldDefinitions
    lenient: bool
    force: bool = False  # re-parse even a note whose hash did not change


@dataclass(frozen=True)
class BatchJob:
    vault: str
    paths: tuple[str, ...]
    stamps: Mapping[str, str | None]
    prior_hashes: Mapping[str, str]
    settings: ParseSettings


def record_of(
    job: BatchJob, path: str, text: str | None, error: str | None, code: str = "SKIP_READ_ERROR"
) -> ReadRecord:
    """One note's record: its skip when it could not be read, else its hash and (unless the hash
    is unchanged) its parse."""
    stamp = job.stamps.get(path)
    if error is not None:
        return stamp, "", Skip(job.vault, path, code, error)
    assert text is not None  # a file is either read or has an error
    # Imported here: the hash needs numpy, which a warm `dle-desktop index` (no note read) never loads.
    from dle_desktop.core.hashing import simple_hash

    digest = simple_hash(text)
    if not job.settings.force and job.prior_hashes.get(path) == digest:
        return stamp, digest, None
    s = job.settings
    return stamp, digest, parse_note(job.vault, path, text, s.tags, s.field_definitions, s.lenient, content_hash=digest)


def read_folder_batch(source: FolderSource, job: BatchJob) -> dict[str, ReadRecord]:
    """Read and parse `job.paths` from a folder vault. A note that vanished since the listing is
    left out; one that cannot be read becomes a skip saying why."""
    out: dict[str, ReadRecord] = {}
    real_folders: dict[str, str] = {}  # for this batch only: links may change later
    for path in job.paths:
        try:
            out[path] = record_of(job, path, source.read_sync(path, real_folders), None)
        except FileNotFoundError:
            continue  # vanished between listing and reading
        except NoteOutsideVault as exc:
            out[path] = record_of(job, path, None, str(exc).removeprefix(f"{path}: "), "SKIP_OUTSIDE_VAULT")
        except VaultError as exc:
            out[path] = record_of(job, path, None, str(exc))
    return out


class BatchProcesses:
    """Worker processes for one big sync; `close` ends them (they are not kept: a big sync is a
    first index or a forced one, and each idle worker holds tens of MB)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or max(1, min(MAX_PROCESSES, os.cpu_count() or 1))
        self._pool: ProcessPoolExecutor | None = None

    def executor(self) -> Executor:
        if self._pool is None:
            # spawn: a fork of the app would copy its Qt and engine threads' state into the child
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            # not waiting: a cancelled sync returns at once; a worker ends after its current batch
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
