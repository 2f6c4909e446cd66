"""The settings the pipeline reads, with DLE's defaults. The app's settings module maps onto
this; core does not import it (layering)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

DEFAULT_TEMPLATE = "<{{title}}>\n{{content}}\n</{{title}}>"


@dataclass(frozen=True)
class MatchConfig:
    scan_depth: int = 4
    new_chat_threshold: int = 3
    max_entries: int = 10
    unlimited_entries: bool = False
    max_tokens_budget: int = 3072
    unlimited_budget: bool = False
    match_whole_words: bool = False
    case_sensitive: bool = False
    recursive_scan: bool = False
    max_recursion_steps: int = 3
    character_context_scan: bool = False
    fuzzy_search_enabled: bool = False
    fuzzy_search_min_score: float = 0.5
    keyword_occurrence_weighting: bool = False
    reinjection_cooldown: int = 0
    strip_duplicate_injections: bool = True
    strip_lookback_depth: int = 2
    injection_mode: str = "extension"  # extension | prompt_list
    injection_position: int = 1  # 0 after (IN_PROMPT), 1 in chat, 2 before
    injection_depth: int = 4
    injection_role: int = 0  # 0 system, 1 user, 2 assistant
    injection_template: str = DEFAULT_TEMPLATE
    allow_wi_scan: bool = False
    notebook_enabled: bool = False
    notebook_position: int = 1
    notebook_depth: int = 4
    notebook_role: int = 0
    contextual_gating_tolerance: str = "strict"  # DLE's fallback only; per-field tolerance wins
    # Semantic retrieval (ours; off by default so results match DLE)
    semantic_enabled: bool = False
    semantic_top_k: int = 5
    semantic_min_score: float = 0.2  # an absolute cosine floor (was 0.35 before the relative threshold)
    semantic_rrf_k: int = 60
    semantic_relative_margin: float = 0.3  # 0: the absolute floor alone (see semantic_stage.semantic_threshold)
    semantic_last_weight: float = 0.5  # the newest message's share of the query (the window's mean the rest)
    # AI search (the call itself happens outside core; see ai_stage.py)
    ai_search_enabled: bool = False
    ai_search_mode: str = "two-stage"  # two-stage | ai-only
    ai_confidence_threshold: str = "low"
    ai_error_fallback: str = "keyword"  # keyword | constants_only | bootstrap_only | none
    ai_empty_fallback: str = "constants"  # constants | constants_bootstrap | keyword | none
    # Deliberate fixes of DLE bugs (dle-behaviour §3.12), on by default; off reproduces DLE.
    fix_guide_leak: bool = True
    fix_refine_keys_in_fuzzy: bool = True
    fix_ai_confidence_budget: bool = True  # the budget keeps the AI's surest picks first
    fix_semantic_budget: bool = True  # with semantic search on, the chat's own matches are kept before constants

    @classmethod
    def from_object(cls, obj: object) -> MatchConfig:
        """Take every field that `obj` (e.g. the app's Settings) has under the same name."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{n: getattr(obj, n) for n in names if hasattr(obj, n)})


POSITION_IDS = {"after": 0, "in_chat": 1, "before": 2}
POSITION_NAMES = {0: "after", 1: "in_chat", 2: "before", -1: "outlet"}
ROLE_IDS = {"system": 0, "user": 1, "assistant": 2}
ROLE_NAMES = {0: "system", 1: "user", 2: "assistant"}
