"""Keyword matching with DLE's exact rule, over all keys at once.

An Aho-Corasick automaton (pyahocorasick) holds every primary and refine key of the vault, so
one pass over the scan text finds every occurrence of every key; the cost grows with the text
and the hits, not with the size of the vault. Per entry we then apply DLE's rule:

- substring mode (default): a key matches if it occurs anywhere;
- whole-word mode: keys with whitespace still match as substrings (SillyTavern parity); other
  keys need a non-word character (ASCII `\\w`, as JavaScript's `\\b`) or the text edge on both
  sides, so `Магия` matches inside `Магиям` exactly as in DLE.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import ahocorasick

from dle_desktop.core.entry import Entry

#: Scanned lines and entry texts whose hits a KeywordIndex keeps (a chat's window moves by a
#: message a turn; recursion scans mostly the same entries' contents generation after generation).
_PART_CACHE = 2048
_ASCII_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def normalise(text: str, case_sensitive: bool) -> str:
    text = unicodedata.normalize("NFC", text)
    return text if case_sensitive else text.lower()


@dataclass(frozen=True)
class KeyHit:
    """Where each key occurs in one scanned text: key → sorted (start, end) spans."""

    text: str
    spans: dict[str, list[tuple[int, int]]]

    def after(self, offset: int) -> KeyHit:
        """The hits inside the suffix of the text starting at `offset` (a smaller scan window)."""
        if offset <= 0:
            return self
        spans = {}
        for key, ss in self.spans.items():
            kept = [s for s in ss if s[0] >= offset]
            if kept:
                spans[key] = kept
        return KeyHit(self.text, spans)


class KeywordIndex:
    """Built once per index snapshot and case mode; shared by every generation."""

    def __init__(self, entries: Sequence[Entry], case_sensitive: bool = False) -> None:
        self.entries = list(entries)
        self.case_sensitive = case_sensitive
        self.keys: list[tuple[str, ...]] = []
        self.refine: list[tuple[str, ...]] = []
        #: per entry: normalised key → the key as the author wrote it
        self.spelling: list[dict[str, str]] = []
        #: normalised primary key → indexes of entries that have it
        self.owners: dict[str, list[int]] = {}
        automaton = ahocorasick.Automaton()
        seen: set[str] = set()
        for i, e in enumerate(self.entries):
            spelling: dict[str, str] = {}
            for k in (*e.keys, *e.refine_keys):  # the first spelling wins: keys order (§3.3)
                spelling.setdefault(normalise(k, case_sensitive), k)
            self.spelling.append(spelling)
            keys = tuple(k for k in (normalise(k, case_sensitive) for k in e.keys) if k)
            refine = tuple(k for k in (normalise(k, case_sensitive) for k in e.refine_keys) if k)
            self.keys.append(keys)
            self.refine.append(refine)
            for k in dict.fromkeys(keys):
                self.owners.setdefault(k, []).append(i)
            for k in keys + refine:
                if k not in seen:
                    seen.add(k)
                    automaton.add_word(k, k)
        self._empty = not seen
        #: A key with a line break could match across the lines of a scan window.
        self._multiline = any("\n" in k for k in seen)
        self._part_hits: dict[str, tuple[str, tuple[tuple[str, int, int], ...]]] = {}
        self._part_lock = threading.Lock()
        if not self._empty:
            automaton.make_automaton()
        self.automaton = automaton
        self.position = {e.uid: i for i, e in enumerate(self.entries)}

    def with_entries(self, entries: list[Entry]) -> KeywordIndex:
        """The same automaton over a list where some entries were swapped for edited copies
        with identical keys (so every key still maps to the same positions)."""
        clone = object.__new__(KeywordIndex)
        clone.__dict__.update(self.__dict__)
        clone.entries = entries
        return clone

    def scan(self, text: str) -> KeyHit:
        """Every occurrence of every key in `text` (normalised like the keys)."""
        hay = normalise(text, self.case_sensitive)
        spans: dict[str, list[tuple[int, int]]] = {}
        if not self._empty and hay:
            for end, key in self.automaton.iter(hay):
                spans.setdefault(key, []).append((end - len(key) + 1, end + 1))
        for ss in spans.values():
            ss.sort()
        return KeyHit(hay, spans)

    def scan_lines(self, lines: Sequence[str]) -> tuple[KeyHit, list[int]]:
        """`scan("\n".join(lines))`, and where each line starts in the hit's (normalised) text.
        No key spans a line break (else this is the plain scan), so each line is scanned on its
        own and its hits are kept: a chat's next generation scans only its new message."""
        if self._multiline or self._empty:
            starts = []
            pos = 0
            for ln in lines:
                starts.append(pos)
                pos += len(normalise(ln, self.case_sensitive)) + 1
            return self.scan("\n".join(lines)), starts
        return self._joined([self._part(ln, keep=True) for ln in lines])

    def scan_joined(self, pieces: Sequence[str], limit: int) -> KeyHit:
        """`scan("\n".join(pieces)[:limit])` (recursion's text: the matched entries' contents),
        each whole piece scanned once and its hits kept, as `scan_lines` does; the piece the
        limit cuts is scanned as cut."""
        if self._multiline or self._empty:
            return self.scan("\n".join(pieces)[:limit])
        end = min(limit, sum(len(p) for p in pieces) + max(0, len(pieces) - 1))
        parts = []
        start = 0  # where the piece starts in the joined text
        for piece in pieces:
            if start > end:
                break
            if start + len(piece) <= end:
                parts.append(self._part(piece, keep=True))
                start += len(piece) + 1
            else:
                parts.append(self._part(piece[: end - start], keep=False))
                break
        return self._joined(parts)[0]

    def _part(self, text: str, keep: bool) -> tuple[str, tuple[tuple[str, int, int], ...]]:
        """One line or piece, normalised, and its hits as (key, start, end), kept when `keep`."""
        cached = self._part_hits.get(text) if keep else None
        if cached is None:
            hay = normalise(text, self.case_sensitive)
            cached = (hay, tuple((key, end - len(key) + 1, end + 1) for end, key in self.automaton.iter(hay)))
            if keep:
                with self._part_lock:
                    if len(self._part_hits) >= _PART_CACHE:
                        self._part_hits.pop(next(iter(self._part_hits)))
                    self._part_hits[text] = cached
        return cached

    @staticmethod
    def _joined(parts: Sequence[tuple[str, tuple[tuple[str, int, int], ...]]]) -> tuple[KeyHit, list[int]]:
        """The hit of the parts joined with line breaks (no key spans one), and each part's start."""
        spans: dict[str, list[tuple[int, int]]] = {}
        starts = []
        pos = 0
        for hay, hits in parts:
            starts.append(pos)
            for key, start, end in hits:
                spans.setdefault(key, []).append((pos + start, pos + end))
            pos += len(hay) + 1
        for ss in spans.values():
            ss.sort()
        return KeyHit("\n".join(hay for hay, _ in parts), spans), starts

    def candidates(self, hit: KeyHit) -> list[int]:
        """Entries (by index, in vault order) with at least one primary key occurring in `hit`."""
        found: set[int] = set()
        for key in hit.spans:
            owners = self.owners.get(key)
            if owners:
                found.update(owners)
        return sorted(found)


def _is_word_char(ch: str) -> bool:
    return ch in _ASCII_WORD


def _span_ok(text: str, span: tuple[int, int], key: str, whole_words: bool) -> bool:
    if not whole_words or any(c.isspace() for c in key):
        return True
    start, end = span
    if start > 0 and _is_word_char(text[start - 1]):
        return False
    return not (end < len(text) and _is_word_char(text[end]))


def key_matches(hit: KeyHit, key: str, whole_words: bool) -> bool:
    return any(_span_ok(hit.text, s, key, whole_words) for s in hit.spans.get(key, ()))


def first_matching_key(hit: KeyHit, keys: Iterable[str], whole_words: bool) -> str | None:
    if not whole_words:  # substring mode: any occurrence counts, and a listed key has one
        spans = hit.spans
        for k in keys:
            if spans.get(k):
                return k
        return None
    for k in keys:
        if key_matches(hit, k, whole_words):
            return k
    return None


def count_occurrences(hit: KeyHit, keys: Iterable[str], whole_words: bool) -> int:
    """Non-overlapping occurrences of every key, summed (DLE's warmup count). Every listed key
    counts, so two spellings that fold to the same key count twice, as in DLE's per-key loop."""
    total = 0
    for k in keys:
        last_end = -1
        for s in hit.spans.get(k, ()):
            if s[0] >= last_end and _span_ok(hit.text, s, k, whole_words):
                total += 1
                last_end = s[1]
    return total
