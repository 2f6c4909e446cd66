"""Immutable index snapshots: entries after multi-vault conflict resolution, resolved links,
dangling references stripped, a link graph and BM25. Readers holding a snapshot are never
disturbed by a rebuild; the engine swaps in a new one atomically."""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dle_desktop.core.bm25 import Bm25Index, document_text
from dle_desktop.core.body import estimate_tokens
from dle_desktop.core.entry import Entry, Skip
from dle_desktop.core.fields import DEFAULT_DEFINITIONS, FieldDefinitions

CONFLICT_MODES = ("all", "first", "last", "merge")
_versions = itertools.count(1)


@dataclass(frozen=True)
class VaultSlice:
    """What one vault contributed to a build, before cross-vault resolution."""

    name: str
    entries: tuple[Entry, ...]
    skipped: tuple[Skip, ...] = ()
    problems: tuple[str, ...] = ()
    error: str | None = None  # the vault could not be read; its previous slice was kept


def _merge_copies(copies: Sequence[Entry]) -> Entry:
    first = copies[0]

    def union(attr: str) -> tuple[Any, ...]:
        return tuple(dict.fromkeys(x for e in copies for x in getattr(e, attr)))

    custom: dict[str, Any] = {}
    for e in copies:
        for k, v in e.custom_fields.items():
            current = custom.get(k)
            if isinstance(v, tuple):  # list fields are united
                base = current if isinstance(current, tuple) else (() if current is None else (current,))
                custom[k] = tuple(dict.fromkeys(base + v))
            elif current is None:  # the first scalar wins
                custom[k] = v
    content = "\n\n---\n\n".join(e.content for e in copies)
    return dataclasses.replace(
        first,
        keys=union("keys"),
        tags=union("tags"),
        links=union("links"),
        original_requires=union("original_requires"),
        original_excludes=union("original_excludes"),
        original_cascade_links=union("original_cascade_links"),
        requires=union("original_requires"),
        excludes=union("original_excludes"),
        cascade_links=union("original_cascade_links"),
        content=content,
        token_estimate=estimate_tokens(content),
        constant=any(e.constant for e in copies),
        seed=any(e.seed for e in copies),
        bootstrap=any(e.bootstrap for e in copies),
        guide=any(e.guide for e in copies),
        summary=next((e.summary for e in copies if e.summary), ""),
        custom_fields=custom,
    )


def resolve_conflicts(slices: Sequence[VaultSlice], mode: str) -> tuple[list[Entry], list[str]]:
    """Apply DLE's multi-vault conflict mode to entries sharing a title (case-insensitive)."""
    entries = [e for s in slices for e in s.entries]
    notes: list[str] = []
    if len(slices) < 2:
        return entries, notes
    groups: dict[str, list[Entry]] = {}
    for e in entries:
        groups.setdefault(e.title.lower(), []).append(e)
    out: list[Entry] = []
    emitted: set[str] = set()
    for e in entries:
        key = e.title.lower()
        copies = groups[key]
        vaults = list(dict.fromkeys(c.vault for c in copies))
        if len(vaults) < 2 or mode == "all":
            out.append(e)
            continue
        if key in emitted:
            continue
        emitted.add(key)
        if mode == "first":
            kept = [c for c in copies if c.vault == vaults[0]]
            out.extend(kept)
            notes.append(f"'{e.title}' is in vaults {', '.join(vaults)}; kept the copy from {vaults[0]} (mode first)")
        elif mode == "last":
            kept = [c for c in copies if c.vault == vaults[-1]]
            out.extend(kept)
            notes.append(f"'{e.title}' is in vaults {', '.join(vaults)}; kept the copy from {vaults[-1]} (mode last)")
        else:
            out.append(_merge_copies(copies))
            notes.append(f"'{e.title}' is in vaults {', '.join(vaults)}; merged their copies (mode merge)")
    return out, notes


_DERIVED = ("resolved_links", "requires", "excludes", "cascade_links")


def _derive(e: Entry, titles: dict[str, str]) -> tuple[tuple[str, ...], ...]:
    if not (e.links or e.original_requires or e.original_excludes or e.original_cascade_links):
        return (), (), (), ()
    get = titles.get
    resolved: list[str] = []
    for t in e.links:
        c = get(t.lower())
        if c is not None and c not in resolved:
            resolved.append(c)
    return (
        tuple(resolved),
        tuple(t for t in e.original_requires if t.lower() in titles) if e.original_requires else (),
        tuple(t for t in e.original_excludes if t.lower() in titles) if e.original_excludes else (),
        tuple(t for t in e.original_cascade_links if t.lower() in titles) if e.original_cascade_links else (),
    )


def _finalize_entry(e: Entry, titles: dict[str, str], reuse: Entry | None = None) -> Entry:
    """Resolve links and strip references to titles that do not exist. Returns `e` itself, or
    `reuse` (the previous snapshot's finalized copy of the same parsed entry), when nothing differs."""
    derived = _derive(e, titles)
    if derived == (e.resolved_links, e.requires, e.excludes, e.cascade_links):
        return e
    if reuse is not None and derived == (reuse.resolved_links, reuse.requires, reuse.excludes, reuse.cascade_links):
        return reuse
    return with_derived(e, derived)


def derived_fields(e: Entry) -> tuple[tuple[str, ...], ...]:
    """What finalizing sets on a parsed entry: resolved links and the references that exist."""
    return (e.resolved_links, e.requires, e.excludes, e.cascade_links)


def with_derived(e: Entry, derived: Sequence[tuple[str, ...]]) -> Entry:
    """`e` with the fields of `derived_fields` replaced, as finalizing would make it."""
    # A shallow copy with four fields swapped: dataclasses.replace would re-run __init__.
    new = object.__new__(Entry)
    new.__dict__.update(e.__dict__)
    new.__dict__.update(zip(_DERIVED, derived))
    return new


class IndexSnapshot:
    """One consistent view of every enabled vault. Treat as read-only."""

    def __init__(
        self,
        entries: Sequence[Entry],
        skipped: Sequence[Skip] = (),
        warnings: Sequence[str] = (),
        field_definitions: FieldDefinitions = DEFAULT_DEFINITIONS,
        slices: Sequence[VaultSlice] = (),
        conflict_mode: str = "all",
        bm25: Bm25Index | None = None,
        built_at: float | None = None,
        by_uid: dict[str, Entry] | None = None,
    ) -> None:
        self.entries: tuple[Entry, ...] = tuple(entries)
        self.skipped: tuple[Skip, ...] = tuple(skipped)
        self.warnings: tuple[str, ...] = tuple(warnings)
        self.field_definitions = field_definitions
        self.slices: tuple[VaultSlice, ...] = tuple(slices)
        self.conflict_mode = conflict_mode
        self.version = next(_versions)
        self.built_at = time.time() if built_at is None else built_at
        self.by_uid: dict[str, Entry] = by_uid if by_uid is not None else {e.uid: e for e in self.entries}
        self._bm25 = bm25
        self._lock = threading.Lock()
        self._backlinks: dict[str, tuple[str, ...]] | None = None
        self._by_title: dict[str, tuple[Entry, ...]] | None = None
        #: lower title → title, and uid → (parsed entry, finalized entry): let the next build
        #: reuse every entry that did not change (set by build_snapshot).
        self._titles: dict[str, str] | None = None
        self._finalized: dict[str, tuple[Entry, Entry]] = {}
        self._positions: dict[str, int] | None = None
        self._patched_from: tuple[IndexSnapshot, tuple[tuple[Entry, Entry], ...]] | None = None

    def position(self, uid: str) -> int | None:
        if self._positions is None:
            self._positions = {e.uid: i for i, e in enumerate(self.entries)}
        return self._positions.get(uid)

    def __len__(self) -> int:
        return len(self.entries)

    def same_entries_as(self, other: IndexSnapshot) -> bool:
        """Whether this snapshot holds the very entries of `other` (the same objects, in order) and
        the same notes not indexed: what the reconcile after a restart publishes when nothing
        changed on disk (only its warnings differ)."""
        if other is self:
            return True
        if len(other.entries) != len(self.entries) or other.skipped != self.skipped:
            return False
        return other.conflict_mode == self.conflict_mode and all(
            a is b for a, b in zip(self.entries, other.entries, strict=True)
        )

    def adopt_lookups(self, other: IndexSnapshot) -> None:
        """Take `other`'s lookups (by title, backlinks, positions) already worked out, when it
        holds the same entries: they depend on nothing else."""
        if other is self or not self.same_entries_as(other):
            return
        with other._lock:
            backlinks = other._backlinks
        with self._lock:
            if self._backlinks is None:
                self._backlinks = backlinks
        if self._by_title is None:
            self._by_title = other._by_title
        if self._positions is None:
            self._positions = other._positions

    @property
    def by_title(self) -> dict[str, tuple[Entry, ...]]:
        """Lower-cased title → entries with that title (several with mode `all`)."""
        if self._by_title is None:
            groups: dict[str, list[Entry]] = {}
            for e in self.entries:
                groups.setdefault(e.title.lower(), []).append(e)
            self._by_title = {k: tuple(v) for k, v in groups.items()}
        return self._by_title

    def find(self, title: str) -> Entry | None:
        hits = self.by_title.get(title.lower())
        return hits[0] if hits else None

    @property
    def bm25(self) -> Bm25Index:
        """Built on first use: only fuzzy search and the Librarian need it."""
        with self._lock:
            if self._bm25 is None:
                self._bm25 = Bm25Index.build({e.uid: document_text(e.title, e.keys, e.content) for e in self.entries})
            return self._bm25

    @property
    def bm25_ready(self) -> bool:
        return self._bm25 is not None

    @property
    def backlinks(self) -> dict[str, tuple[str, ...]]:
        """Title → titles of entries whose resolved links point at it."""
        with self._lock:
            if self._backlinks is None:
                back: dict[str, dict[str, None]] = {}
                for e in self.entries:
                    for target in e.resolved_links:
                        back.setdefault(target, {})[e.title] = None
                self._backlinks = {k: tuple(v) for k, v in back.items()}
            return self._backlinks

    def vault_counts(self) -> dict[str, int]:
        counts = {s.name: 0 for s in self.slices}
        for e in self.entries:
            counts[e.vault] = counts.get(e.vault, 0) + 1
        return counts

    def to_json(self, with_content: bool = True) -> dict[str, Any]:
        return {
            "entries": [e.to_json(with_content) for e in self.entries],
            "skipped": [s.to_json() for s in self.skipped],
            "warnings": list(self.warnings),
        }


def build_snapshot(
    slices: Sequence[VaultSlice],
    field_definitions: FieldDefinitions = DEFAULT_DEFINITIONS,
    conflict_mode: str = "all",
    previous: IndexSnapshot | None = None,
    extra_warnings: Iterable[str] = (),
    reuse: tuple[dict[str, str], dict[str, Entry]] | None = None,
) -> IndexSnapshot:
    """Finalize vault slices into a snapshot. With `previous`, unchanged entries are reused
    and BM25 is updated incrementally. `reuse` = (titles, uid → finalized entry) saved with a
    cache lets a warm start skip finalizing when the titles are the same."""
    if conflict_mode not in CONFLICT_MODES:
        raise ValueError(f"unknown conflict mode {conflict_mode!r}")
    raw, conflict_notes = resolve_conflicts(slices, conflict_mode)
    titles: dict[str, str] = {}
    for e in raw:
        titles.setdefault(e.title.lower(), e.title)
    prior = previous._finalized if previous is not None else {}
    prior_titles = previous._titles if previous is not None else None
    if reuse is not None and previous is None:
        prior_titles = reuse[0]
        prior = {uid: (r, reuse[1][r.uid]) for r in raw if (uid := r.uid) in reuse[1]}
    if prior_titles is not None and prior_titles == titles:
        # Same set of titles: an unchanged parsed entry finalizes exactly as before.
        entries = []
        for e in raw:
            hit = prior.get(e.uid)
            entries.append(hit[1] if hit is not None and hit[0] is e else _finalize_entry(e, titles))
    else:
        entries = []
        for e in raw:
            hit = prior.get(e.uid)
            entries.append(_finalize_entry(e, titles, hit[1] if hit is not None and hit[0] is e else None))
    warnings = [*extra_warnings, *field_definitions.problems]
    for s in slices:
        warnings.extend(f"{s.name}: {p}" for p in s.problems)
        if s.error:
            warnings.append(f"{s.name}: {s.error}")
    warnings.extend(conflict_notes)
    bm25 = None
    if previous is not None and previous.bm25_ready:
        bm25 = _bm25_delta(previous, entries)
    snap = IndexSnapshot(
        entries=entries,
        skipped=[k for s in slices for k in s.skipped],
        warnings=warnings,
        field_definitions=field_definitions,
        slices=slices,
        conflict_mode=conflict_mode,
        bm25=bm25,
    )
    snap._titles = titles
    snap._finalized = {e.uid: (r, e) for r, e in zip(raw, entries)}
    return snap


def _bm25_delta(previous: IndexSnapshot, entries: Sequence[Entry]) -> Bm25Index:
    old = previous.by_uid
    new_uids = {e.uid for e in entries}
    removed = [uid for uid in old if uid not in new_uids]
    added = {}
    for e in entries:
        prev = old.get(e.uid)
        if prev is None or prev is e:
            if prev is None:
                added[e.uid] = document_text(e.title, e.keys, e.content)
            continue
        if (prev.title, prev.keys, prev.content) != (e.title, e.keys, e.content):
            added[e.uid] = document_text(e.title, e.keys, e.content)
    return previous.bm25.with_changes(removed=removed, added=added)


_ENTRY_FIELDS = tuple(f.name for f in dataclasses.fields(Entry))


def entry_values(e: Entry) -> tuple[Any, ...]:
    """Every field of an entry, for comparing two parses of a note by value (Entry compares by
    identity so that snapshots can tell their own objects apart)."""
    return tuple(getattr(e, name) for name in _ENTRY_FIELDS)


def same_view(old: IndexSnapshot, new: IndexSnapshot) -> bool:
    """Whether `new` shows readers exactly what `old` does: the same entries field by field, in
    the same order, the same notes not indexed, warnings and field definitions."""
    if (
        len(old.entries) != len(new.entries)
        or old.skipped != new.skipped
        or old.warnings != new.warnings
        or old.field_definitions != new.field_definitions
        or old.conflict_mode != new.conflict_mode
    ):
        return False
    return all(a is b or entry_values(a) == entry_values(b) for a, b in zip(old.entries, new.entries))


def patch_snapshot(previous: IndexSnapshot, replacements: Sequence[tuple[Entry, Entry]]) -> IndexSnapshot | None:
    """A new snapshot with parsed entries swapped for edited ones, without rebuilding the rest.

    Valid only when no title changes (links elsewhere resolve as before) and each old entry is
    in `previous` as itself; returns None otherwise, and the caller does a full build."""
    titles = previous._titles
    if titles is None:
        return None
    entries = list(previous.entries)
    by_uid = dict(previous.by_uid)
    finalized = dict(previous._finalized)
    changed: list[tuple[Entry, Entry]] = []
    for old_raw, new_raw in replacements:
        uid = new_raw.uid
        held = finalized.get(uid)
        pos = previous.position(uid)
        if held is None or held[0] is not old_raw or pos is None or old_raw.title.lower() != new_raw.title.lower():
            return None
        fin = _finalize_entry(new_raw, titles)  # a new parse: never reuse the old finalized copy
        entries[pos] = fin
        by_uid[uid] = fin
        finalized[uid] = (new_raw, fin)
        changed.append((held[1], fin))
    bm25 = None
    if previous.bm25_ready:
        added = {
            new.uid: document_text(new.title, new.keys, new.content)
            for old, new in changed
            if (old.title, old.keys, old.content) != (new.title, new.keys, new.content)
        }
        bm25 = previous.bm25.with_changes(added=added) if added else previous.bm25
    snap = IndexSnapshot(
        entries=entries,
        skipped=previous.skipped,
        warnings=previous.warnings,
        field_definitions=previous.field_definitions,
        slices=previous.slices,
        conflict_mode=previous.conflict_mode,
        bm25=bm25,
        by_uid=by_uid,
    )
    snap._titles = titles
    snap._finalized = finalized
    snap._positions = previous._positions
    # Lets derived structures (the keyword automaton) be patched instead of rebuilt. One link
    # only: the previous snapshot drops its own, so old snapshots can be freed.
    snap._patched_from = (previous, tuple(changed))
    previous._patched_from = None
    return snap
