"""AI search for one generation (dle-behaviour §4): optional category pre-filter, the candidate
manifest, the four-tier cache, the call on the AI-search channel, tolerant parsing, title
matching and the confidence threshold. Never raises for an AI problem: the outcome says what
happened and the pure stage (core/pipeline/ai_stage.py) applies the configured fallback.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Callable, Sequence

from dle_desktop.ai.cache import compile_entity_pattern, manifest_key
from dle_desktop.ai.extract import (
    ExtractError,
    Pick,
    extract_categories,
    extract_selection,
    match_titles,
    order_and_threshold,
)
from dle_desktop.ai.manifest import (
    CATEGORY_SCHEMA,
    LORE_SELECTION_SCHEMA,
    DecayHints,
    build_chat_context,
    build_manifest,
    build_user_message,
    system_prompt,
)
from dle_desktop.ai.prefilter import (
    apply_category_selection,
    category_manifest,
    category_user_message,
    cluster_entries,
    infra_tags_for,
    should_prefilter,
)
from dle_desktop.ai.prompts import CATEGORY_PREFILTER, load_prompt
from dle_desktop.ai.service import AiService
from dle_desktop.ai.types import ChatRequest
from dle_desktop.core.entry import Entry, TagConfig
from dle_desktop.core.pipeline.ai_stage import AiOutcome, AiPick
from dle_desktop.core.pipeline.chat import scan_text
from dle_desktop.core.pipeline.run import Pending
from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.errors import DleError

log = logging.getLogger(__name__)

PREFILTER_MAX_TOKENS = 512
DRY_RUN_CHAT = "\x00dry-run"


def decay_trackers(state: ChatState) -> dict[str, tuple[int, int]]:
    """(staleness, consecutive injections) per tracker key, from the chat's own records:
    generations since an entry was last matched, and how many of the most recent generations
    in a row injected it."""
    gen = state.generation_count
    out: dict[str, tuple[int, int]] = {}
    recent = [{e["title"] for e in g.get("entries", ())} for g in reversed(state.injection_log)]
    for key, rec in state.analytics.items():
        if not rec.get("injected"):
            continue
        title = key.split(":", 1)[-1]
        consecutive = 0
        for titles in recent:
            if title not in titles:
                break
            consecutive += 1
        out[key] = (max(0, gen - int(rec.get("last_triggered", gen))), consecutive)
    return out


class AiSearch:
    def __init__(self, service: AiService, scribe_summary: Callable[[str | None], str | None] | None = None) -> None:
        self.service = service
        #: the chat's last Session Scribe summary (None: none, or scribe-informed retrieval is off)
        self.scribe_summary = scribe_summary
        self._entity_cache: tuple[int, re.Pattern | None] | None = None

    @property
    def settings(self):
        return self.service.settings

    async def select(self, pending: Pending, chat_id: str | None) -> AiOutcome:
        started = time.perf_counter()
        try:
            outcome = await self._select(pending, chat_id)
        except DleError as exc:  # a bug in our own parts must not fail the generation either
            log.exception("AI search failed unexpectedly")
            outcome = AiOutcome("error", message=str(exc))
        took = round((time.perf_counter() - started) * 1000, 3)
        return dataclasses.replace(outcome, timings_ms={**outcome.timings_ms, "ai search": took})

    async def _select(self, pending: Pending, chat_id: str | None) -> AiOutcome:
        s = self.settings
        svc = self.service
        svc.chat_changed(chat_id)
        ctx = pending.ctx
        messages = ctx.messages
        new_chat = len(messages) <= s.new_chat_threshold
        forced = [a.entry for a in pending.candidates if a.forced]
        selectable: Sequence[Entry] = pending.selectable
        notes: list[str] = []
        if not selectable:
            return AiOutcome("empty-manifest")
        seeds = [e for e in ctx.entries if e.seed] if new_chat else []
        chat_context = build_chat_context(
            messages,
            s.ai_search_scan_depth,
            new_chat=new_chat,
            seeds=seeds,
            scribe_summary=self.scribe_summary(chat_id) if self.scribe_summary is not None else None,
        )
        if not chat_context.strip():
            return AiOutcome("skipped", message="the chat has no text for the AI to read yet")

        if s.hierarchical_pre_filter:
            narrowed, note = await self._prefilter(selectable, forced, chat_context, messages)
            if note:
                notes.append(note)
            if narrowed is not None:
                selectable = narrowed

        decay = None
        if s.decay_enabled:
            decay = DecayHints(decay_trackers(ctx.state), s.decay_boost_threshold, s.decay_penalty_threshold)
        labels = {f.name: f.label for f in ctx.field_definitions.fields}
        manifest = build_manifest(
            selectable,
            forced=forced,
            summary_mode=s.manifest_summary_mode,
            summary_length=s.ai_search_manifest_summary_length,
            decay=decay,
            field_labels=labels,
            max_tokens_budget=s.max_tokens_budget,
            unlimited_budget=s.unlimited_budget,
        )
        if not manifest.selectable:
            return AiOutcome("empty-manifest", notes=tuple(notes))
        resolved = svc.channel("ai_search")
        system = system_prompt(
            s.ai_search_system_prompt,
            max_entries=s.max_entries,
            unlimited_entries=s.unlimited_entries,
            vault_size=len(ctx.entries),
            new_chat=new_chat,
            constants_count=sum(1 for e in forced if e.constant),
            claude_code_prefix=resolved.mode == "proxy" and s.ai_search_claude_code_prefix,
        )
        stable, chat_part = build_user_message(manifest.header, manifest.text, chat_context)
        key = manifest_key(
            manifest_text=manifest.text,
            mode=pending.mode,
            scan_depth=s.ai_search_scan_depth,
            max_entries=s.max_entries,
            unlimited_entries=s.unlimited_entries,
            system_prompt=system,
            connection_mode=resolved.mode,
            profile_id=resolved.profile.id if resolved.profile else "",
            model=resolved.model,
            threshold=s.ai_confidence_threshold,
            summary_mode=s.manifest_summary_mode,
            summary_length=s.ai_search_manifest_summary_length,
        )
        slot = chat_id if chat_id is not None else DRY_RUN_CHAT
        lines = chat_context.split("\n")
        uids = [e.uid for e in manifest.selectable]
        entity_version, pattern = self._entities(ctx.entries)
        hit = svc.cache.lookup(slot, key, lines, uids, pending.mode, entity_version, pattern)
        if hit is not None:
            svc.usage["ai_search"].cache_hits += 1
            svc.save_usage()
            return self._outcome(hit.picks, manifest.selectable, tier=hit.tier, notes=notes)

        def request(channel, profile):
            return ChatRequest(
                system=system,
                user_parts=(stable, chat_part),
                max_tokens=channel.max_tokens,
                json_schema=LORE_SELECTION_SCHEMA,
                cache_hint=True,
                force_user_role=s.ai_force_user_role,
            )

        def parse(response) -> list[Pick]:
            raw = response.structured if response.structured is not None else response.text
            try:
                return extract_selection(raw)
            except ExtractError as exc:
                cut = " (the answer was cut off at the token limit)" if response.hit_token_limit else ""
                raise ExtractError(f"the AI's answer could not be read{cut}: {exc}") from None

        try:
            # Dry runs (Test a chat, `match --replay`) are deliberate, one after another: the
            # throttle guards live generations only.
            picks = await svc.call("ai_search", request, parse, skip_throttle=chat_id is None)
        except DleError as exc:
            return AiOutcome("error", message=str(exc), notes=tuple(notes))
        svc.cache.store(slot, key, lines, uids, entity_version, picks)
        return self._outcome(picks, manifest.selectable, tier=None, notes=notes)

    def _outcome(
        self, picks: Sequence[Pick], selectable: Sequence[Entry], *, tier: str | None, notes: list[str]
    ) -> AiOutcome:
        if not picks:
            return AiOutcome("empty", cache_tier=tier, notes=tuple(notes))
        matched, unmatched = match_titles(picks, selectable)
        kept = order_and_threshold(matched, self.settings.ai_confidence_threshold)
        kept_ids = {id(m[0]) for m in kept}
        below = [m for m in matched if id(m[0]) not in kept_ids]
        if not matched:
            return AiOutcome(
                "empty",
                unmatched=tuple(p.title for p in unmatched),
                cache_tier=tier,
                notes=(
                    *notes,
                    "none of the titles the AI named is a candidate: " + ", ".join(p.title for p in unmatched[:10]),
                ),
            )
        return AiOutcome(
            "picked",
            picks=tuple(AiPick(e.uid, p.confidence, p.reason, how) for p, e, how in kept),
            below_threshold=tuple(AiPick(e.uid, p.confidence, p.reason, how) for p, e, how in below),
            unmatched=tuple(p.title for p in unmatched),
            cache_tier=tier,
            notes=tuple(notes),
        )

    def _entities(self, entries: Sequence[Entry]) -> tuple[int, re.Pattern | None]:
        """The entity-name pattern of the sliding-window cache tier, built once per vault state."""
        version = hash(tuple(e.title for e in entries))
        cached = self._entity_cache
        if cached is None or cached[0] != version:
            names = {e.title for e in entries} | {k for e in entries for k in e.keys}
            cached = (version, compile_entity_pattern(names))
            self._entity_cache = cached
        return cached

    async def _prefilter(
        self, selectable: Sequence[Entry], forced: Sequence[Entry], chat_context: str, messages
    ) -> tuple[list[Entry] | None, str | None]:
        """The category pre-filter: None (use every candidate) when it does not apply or fails."""
        s = self.settings
        infra = infra_tags_for(
            TagConfig(
                s.lorebook_tag, s.constant_tag, s.never_insert_tag, s.seed_tag, s.bootstrap_tag, s.librarian_guide_tag
            )
        )
        clusters = cluster_entries(list(selectable), infra)
        if not should_prefilter(selectable, clusters):
            return None, None

        def request(channel, profile):
            return ChatRequest(
                system=load_prompt(CATEGORY_PREFILTER),
                user_parts=(category_user_message(category_manifest(clusters), chat_context),),
                max_tokens=PREFILTER_MAX_TOKENS,
                json_schema=CATEGORY_SCHEMA,
                force_user_role=s.ai_force_user_role,
            )

        def parse(response) -> list[str]:
            return extract_categories(response.structured if response.structured is not None else response.text)

        try:
            chosen = await self.service.call("ai_search", request, parse, skip_throttle=True, count_probe=False)
        except DleError as exc:
            return None, f"category pre-filter skipped: {exc}"
        chat_text = scan_text(messages, s.ai_search_scan_depth)
        narrowed = apply_category_selection(
            selectable, clusters, chosen, chat_text, forced, s.hierarchical_aggressiveness
        )
        if narrowed is None:
            return None, (
                f"category pre-filter kept too few entries ({', '.join(chosen) or 'no categories'}); "
                "all candidates were sent"
            )
        narrowed = [e for e in narrowed if e.uid not in {f.uid for f in forced}]
        return narrowed, f"category pre-filter: {len(narrowed)} of {len(selectable)} candidates in {', '.join(chosen)}"
