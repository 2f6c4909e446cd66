"""Reusing the AI's last answer for a chat when asking again would not change it (§4.4).

One slot per chat (DLE has a single slot; the engine serves many chats), least recently used
chats evicted past `max_chats`. A hit hands back the cached picks; replaying them against the
*current* candidates (`extract.match_titles`) is the caller's job, so a pick whose entry is no
longer a candidate falls away. The chat itself is not kept, only a hash per line.

Tiers, in the order they are tried (all but the first need the same manifest key):
- exact: the same chat lines;
- keyword-stable (not in ai-only mode): every current candidate was a candidate last time;
- shrink: the chat lost lines at the end (a deleted message, a swipe) and is otherwise unchanged;
- sliding-window: the chat gained lines at the end, the entity names are the same version, and
  no new line mentions any of them.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dle_desktop.ai.extract import Pick
from dle_desktop.core.hashing import simple_hash

CACHE_FORMAT = "v2"
EXACT, KEYWORD_STABLE, SHRINK, SLIDING_WINDOW = "exact", "keyword-stable", "shrink", "sliding-window"


def manifest_key(
    *,
    manifest_text: str,
    mode: str,
    scan_depth: int,
    max_entries: int,
    unlimited_entries: bool,
    system_prompt: str,
    connection_mode: str = "",
    profile_id: str = "",
    model: str = "",
    threshold: str = "low",
    summary_mode: str = "prefer_summary",
    summary_length: int = 600,
) -> str:
    """Every setting that changes what the AI would answer for the same chat, plus the manifest."""
    settings = "|".join(
        str(v)
        for v in (
            CACHE_FORMAT,
            mode,
            scan_depth,
            max_entries,
            bool(unlimited_entries),
            simple_hash(system_prompt),
            connection_mode,
            profile_id,
            model,
            threshold,
            summary_mode,
            summary_length,
        )
    )
    return simple_hash(settings + manifest_text)


def compile_entity_pattern(names: Iterable[str]) -> re.Pattern | None:
    """One case-insensitive pattern for every entity name, as whole words. Lookarounds stand in
    for `\\b` so names that start or end with punctuation ("C++", "Dr.") still match. None when
    there are no names (then no line can mention one)."""
    unique = sorted({n.strip() for n in names if n and n.strip()}, key=lambda n: (-len(n), n))
    if not unique:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, unique)) + r")(?!\w)", re.IGNORECASE)


@dataclass(frozen=True)
class CacheHit:
    tier: str
    picks: tuple[Pick, ...]


@dataclass(frozen=True)
class _Slot:
    manifest_key: str
    line_hashes: tuple[str, ...]
    candidate_uids: frozenset[str]
    entity_version: int | str | None
    picks: tuple[Pick, ...]


def _line_hashes(lines: Sequence[str]) -> tuple[str, ...]:
    return tuple(simple_hash(line) for line in lines)


class AiSearchCache:
    def __init__(self, max_chats: int = 256):
        if max_chats < 1:
            raise ValueError("the AI cache needs room for at least one chat")
        self.max_chats = max_chats
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._slots)

    def lookup(
        self,
        chat_id: str,
        manifest_key: str,
        chat_lines: Sequence[str],
        candidate_uids: Iterable[str],
        mode: str,
        entity_version: int | str | None,
        entity_pattern: re.Pattern | None,
    ) -> CacheHit | None:
        """`chat_lines` is the AI chat context split on newlines; `mode` is "two-stage" or
        "ai-only"; `entity_pattern` comes from `compile_entity_pattern` for `entity_version`."""
        with self._lock:
            slot = self._slots.get(chat_id)
            if slot is None or slot.manifest_key != manifest_key:
                return None
            self._slots.move_to_end(chat_id)
        tier = self._tier(
            slot, _line_hashes(chat_lines), chat_lines, frozenset(candidate_uids), mode, entity_version, entity_pattern
        )
        return CacheHit(tier, slot.picks) if tier else None

    @staticmethod
    def _tier(
        slot: _Slot,
        hashes: tuple[str, ...],
        lines: Sequence[str],
        uids: frozenset[str],
        mode: str,
        entity_version,
        entity_pattern: re.Pattern | None,
    ) -> str | None:
        cached = slot.line_hashes
        if hashes == cached:
            return EXACT
        if mode != "ai-only" and uids <= slot.candidate_uids:
            return KEYWORD_STABLE
        if 0 < len(hashes) <= len(cached) and cached[: len(hashes)] == hashes:
            return SHRINK
        if (
            len(hashes) > len(cached)
            and hashes[: len(cached)] == cached
            and entity_version == slot.entity_version
            and (entity_pattern is None or not any(entity_pattern.search(line) for line in lines[len(cached) :]))
        ):
            return SLIDING_WINDOW
        return None

    def store(
        self,
        chat_id: str,
        manifest_key: str,
        chat_lines: Sequence[str],
        candidate_uids: Iterable[str],
        entity_version: int | str | None,
        picks: Sequence[Pick],
    ) -> None:
        """Remember the AI's picks (as parsed, before title matching and the threshold)."""
        slot = _Slot(manifest_key, _line_hashes(chat_lines), frozenset(candidate_uids), entity_version, tuple(picks))
        with self._lock:
            self._slots[chat_id] = slot
            self._slots.move_to_end(chat_id)
            while len(self._slots) > self.max_chats:
                self._slots.popitem(last=False)

    def clear(self, chat_id: str | None = None) -> None:
        """Forget one chat (its message was edited) or every chat (index rebuilt, user asked)."""
        with self._lock:
            if chat_id is None:
                self._slots.clear()
            else:
                self._slots.pop(chat_id, None)
