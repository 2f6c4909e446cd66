"""Every setting, declared once: name, DLE's name, default, allowed values.

Settings are a frozen dataclass. They load from a versioned JSON file (never secrets: API keys
live in the keyring), accept DLE's camelCase names beside ours, and refuse unknown names with
a message that lists them. A broken settings file is set aside, not overwritten.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import ntpath
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dle_desktop.core.hosts import host_name, parse_origin
from dle_desktop.errors import ConfigError
from dle_desktop.private_files import private_opener

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1


def _s(default, dle: str | None = None, lo=None, hi=None, choices: tuple | None = None, doc: str = "",
       group: str | None = None, page: str | None = None, label: str = "", item=None, split: bool = True):
    """One setting's declaration. `group` (one of `GROUPS`) and `page` ("retrieval", or the page
    that edits it elsewhere: "embeddings", "channels") place it in the settings UI; `label` is its
    name there (default: our name in words); `doc` is the one-line explanation. `item` (lists of
    text only): turns one listed value into its canonical form, or raises ValueError saying what
    is wrong with it. `split` (lists of text only): one string given instead of a list is split at
    commas and spaces; False: it is one value (paths)."""
    return field(default=default, metadata={"dle": dle, "lo": lo, "hi": hi, "choices": choices, "doc": doc,
                                            "group": group, "page": page, "label": label, "item": item,
                                            "split": split})


def folder_path(value: str) -> str:
    """A folder chosen by the user: an absolute path (`~` expanded), without control characters."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError(f"{value[:100]!r} has a control character; a folder path cannot")
    path = os.path.expanduser(value.strip())
    if not path:
        return ""
    if not (os.path.isabs(path) or ntpath.isabs(path)):
        raise ValueError(f"{value[:100]!r} is not an absolute path")
    return path


#: The settings UI's groups in DLE's order (its Matching, Injection and Features tabs, its Vault
#: Tags section) followed by our own; `_s(group=...)` names one of them.
GROUPS = ("Matching & Budget", "Keyword Matching", "Recursive Scan", "Re-injection Control", "Gating",
          "AI Search", "Injection", "Author's Notebook", "Vault Tags", "Semantic Search", "DLE Fixes")
#: Short names for `_s(group=...)` so the declarations below stay on one line each.
_MB, _KW, _RS, _RI, _GT, _AI, _IN, _NB, _VT, _SE, _FX = GROUPS


@dataclass(frozen=True)
class VaultConfig:
    """One configured vault. A folder vault has `path`; a REST vault has host/port/https.
    The REST API key is not here: it lives in the keyring under `secret_id`."""

    name: str
    kind: str = "folder"  # folder | obsidian-rest
    path: str = ""
    host: str = "127.0.0.1"
    port: int = 27123
    https: bool = False
    enabled: bool = True

    @property
    def secret_id(self) -> str:
        return f"vault:{self.name}"

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, raw: Any) -> VaultConfig:
        if not isinstance(raw, dict):
            raise ConfigError(f"a vault must be an object with at least a name, found {raw!r}")
        allowed = {f.name for f in dataclasses.fields(cls)}
        extra = set(raw) - allowed - {"apiKey", "api_key"}
        if extra:
            raise ConfigError(f"unknown vault setting(s): {', '.join(sorted(extra))}")
        if not isinstance(raw.get("name"), str) or not raw["name"].strip():
            raise ConfigError("every vault needs a non-empty name")
        kind = raw.get("kind") or ("folder" if raw.get("path") else "obsidian-rest")
        if kind not in ("folder", "obsidian-rest"):
            raise ConfigError(f"vault '{raw['name']}': kind must be folder or obsidian-rest, not {kind!r}")
        try:
            port = int(raw.get("port", 27123))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"vault '{raw['name']}': port must be a number") from exc
        if not 1 <= port <= 65535:
            raise ConfigError(f"vault '{raw['name']}': port {port} is outside 1-65535")
        return cls(
            name=raw["name"].strip(), kind=kind, path=str(raw.get("path", "")),
            host=str(raw.get("host", "127.0.0.1")), port=port,
            https=bool(raw.get("https", False)), enabled=bool(raw.get("enabled", True)),
        )


PROVIDERS = ("openai", "anthropic", "gemini", "ollama")
#: OpenAI-compatible servers we know by name (base URL defaults and structured-output rules).
OPENAI_FLAVORS = ("openai", "openrouter", "groq", "xai", "fireworks", "deepseek", "mistral", "azure",
                  "llamacpp", "koboldcpp", "ollama", "vllm", "lmstudio", "custom")


@dataclass(frozen=True)
class ProfileConfig:
    """A named AI connection the user reuses across channels. The API key is not here: it lives
    in the keyring under `secret_id` (profiles are addressed by `id`, which never changes)."""

    id: str
    name: str
    provider: str = "openai"
    flavor: str = "custom"
    base_url: str = ""
    model: str = ""
    extra_headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = 20.0
    thinking: bool = False
    api_version: str = ""

    @property
    def secret_id(self) -> str:
        return f"ai-profile:{self.id}"

    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        out["extra_headers"] = dict(self.extra_headers)
        return out

    @classmethod
    def from_json(cls, raw: Any) -> ProfileConfig:
        if not isinstance(raw, dict):
            raise ConfigError(f"a connection profile must be an object, found {raw!r}")
        allowed = {f.name for f in dataclasses.fields(cls)}
        extra = set(raw) - allowed
        if "api_key" in extra or "apiKey" in extra:
            raise ConfigError("connection profiles never hold API keys in the settings file; set the key in the app "
                              "(it is stored in the system keyring)")
        if extra:
            raise ConfigError(f"unknown connection profile setting(s): {', '.join(sorted(extra))}")
        pid, name = raw.get("id"), raw.get("name")
        if not isinstance(pid, str) or not pid.strip():
            raise ConfigError("every connection profile needs a non-empty id")
        label = f"connection profile '{pid}'"
        if not isinstance(name, str) or not name.strip():
            name = pid
        provider = raw.get("provider", "openai")
        if provider not in PROVIDERS:
            raise ConfigError(f"{label}: provider must be one of {', '.join(PROVIDERS)}, not {provider!r}")
        flavor = raw.get("flavor") or ("custom" if provider == "openai" else provider)
        if provider == "openai" and flavor not in OPENAI_FLAVORS:
            raise ConfigError(f"{label}: flavor must be one of {', '.join(OPENAI_FLAVORS)}, not {flavor!r}")
        if provider != "openai":
            flavor = provider
        base_url = raw.get("base_url", "")
        if not isinstance(base_url, str) or (base_url and not base_url.startswith(("http://", "https://"))):
            raise ConfigError(f"{label}: base_url must start with http:// or https://")
        headers = raw.get("extra_headers") or {}
        if isinstance(headers, (list, tuple)):
            headers = dict(headers)
        if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
            raise ConfigError(f"{label}: extra_headers must map header names to text")
        try:
            timeout = float(raw.get("timeout_s", 20.0))
        except (TypeError, ValueError):
            raise ConfigError(f"{label}: timeout_s must be a number of seconds") from None
        if not 1 <= timeout <= 1000:
            raise ConfigError(f"{label}: timeout_s must be between 1 and 1000 seconds")
        for key in ("model", "api_version"):
            if not isinstance(raw.get(key, ""), str):
                raise ConfigError(f"{label}: {key} must be text")
        return cls(id=pid.strip(), name=name.strip(), provider=provider, flavor=flavor, base_url=base_url.rstrip("/"),
                   model=raw.get("model", ""), extra_headers=tuple(sorted(headers.items())), timeout_s=timeout,
                   thinking=bool(raw.get("thinking", False)), api_version=raw.get("api_version", ""))


@dataclass(frozen=True)
class Settings:
    # Vaults and indexing
    vaults: tuple[VaultConfig, ...] = _s((), "vaults", doc="Configured vaults; the first enabled one is primary.")
    multi_vault_conflict_resolution: str = _s("all", "multiVaultConflictResolution", choices=("all", "first", "last", "merge"))
    lorebook_tag: str = _s("lorebook", "lorebookTag", group=_VT, page="retrieval",
                           doc="Notes carrying this tag (without #) are lore entries; changing it re-reads the vaults.")
    constant_tag: str = _s("lorebook-always", "constantTag", group=_VT, page="retrieval", label="Always-send tag",
                           doc="Entries with this tag are injected every generation, matched or not.")
    never_insert_tag: str = _s("lorebook-never", "neverInsertTag", group=_VT, page="retrieval",
                               doc="Entries with this tag are indexed but never injected.")
    seed_tag: str = _s("lorebook-seed", "seedTag", group=_VT, page="retrieval",
                       doc="Entries with this tag are background for AI search on new chats.")
    bootstrap_tag: str = _s("lorebook-bootstrap", "bootstrapTag", group=_VT, page="retrieval", label="Starter entry tag",
                            doc="Entries with this tag are injected while the chat is shorter than the new chat threshold.")
    librarian_guide_tag: str = _s("lorebook-guide", "librarianGuideTag", group=_VT, page="retrieval",
                                  doc="Entries with this tag guide the Librarian and never reach the writing prompt.")
    lenient_authoring: bool = _s(True, "lenientAuthoring")
    field_definitions_path: str = _s("DeepLore/field-definitions.yaml", "fieldDefinitionsPath")
    cache_ttl: int = _s(300, "cacheTTL", 0, 86400, doc="Seconds; REST vaults are re-read when older.")
    sync_polling_interval: int = _s(30, "syncPollingInterval", 0, 3600, doc="Seconds between polls of REST vaults (0 = off).")
    watch_folders: bool = _s(True, doc="Watch folder vaults for changes.")
    show_sync_toasts: bool = _s(True, "showSyncToasts")
    # Matching (used by the retrieval pipeline)
    new_chat_threshold: int = _s(3, "newChatThreshold", 1, 20, group=_VT, page="retrieval",
                                 doc="A chat with at most this many messages is new: starter entries and seeds apply.")
    scan_depth: int = _s(4, "scanDepth", 0, 100, group=_MB, page="retrieval", label="Keyword scan depth",
                         doc="How many recent messages are searched for keys (0 turns keyword matching off).")
    max_entries: int = _s(10, "maxEntries", 1, 100, group=_MB, page="retrieval",
                          doc="Most entries injected per generation, constants and pins included.")
    unlimited_entries: bool = _s(False, "unlimitedEntries", group=_MB, page="retrieval",
                                 doc="Ignore the max entries cap.")
    max_tokens_budget: int = _s(3072, "maxTokensBudget", 100, 100000, group=_MB, page="retrieval", label="Token budget",
                                doc="Most tokens of lore per generation; the entry that crosses it is cut at a sentence.")
    unlimited_budget: bool = _s(False, "unlimitedBudget", group=_MB, page="retrieval", label="Unlimited token budget",
                                doc="Ignore the token budget.")
    recursive_scan: bool = _s(False, "recursiveScan", group=_RS, page="retrieval",
                              doc="Matched entries' text is searched for keys too, pulling in the entries it names.")
    max_recursion_steps: int = _s(3, "maxRecursionSteps", 1, 10, group=_RS, page="retrieval",
                                  doc="How many rounds of recursive scanning at most.")
    match_whole_words: bool = _s(False, "matchWholeWords", group=_KW, page="retrieval",
                                 doc="Keys match whole words only (off: \"ab\" also matches inside \"about\").")
    case_sensitive: bool = _s(False, "caseSensitive", group=_KW, page="retrieval",
                              doc="Keys match only with the same upper and lower case.")
    injection_position: int = _s(1, "injectionPosition", 0, 2, group=_IN, page="retrieval",
                                 doc="Where lore goes in the prompt (an entry's own position wins).")
    injection_depth: int = _s(4, "injectionDepth", 0, 9999, group=_IN, page="retrieval",
                              doc="In-chat position: how many messages from the end (0 = after the last one).")
    injection_role: int = _s(0, "injectionRole", 0, 2, group=_IN, page="retrieval",
                             doc="Who in-chat lore is sent as.")
    injection_mode: str = _s("extension", "injectionMode", choices=("extension", "prompt_list"), group=_IN,
                             page="retrieval", doc="extension: a fixed place in the prompt; prompt_list: named prompts "
                             "you place in SillyTavern's prompt manager.")
    injection_template: str = _s("<{{title}}>\n{{content}}\n</{{title}}>", "injectionTemplate", group=_IN,
                                 page="retrieval", doc="How each entry is written into the prompt; {{title}} and "
                                 "{{content}} are replaced.")
    allow_wi_scan: bool = _s(False, "allowWIScan", group=_IN, page="retrieval", label="Allow World Info scan",
                             doc="Let SillyTavern's World Info scan injected lore.")
    character_context_scan: bool = _s(False, "characterContextScan", group=_MB, page="retrieval",
                                      label="Auto-match active character",
                                      doc="Inject the active character's own entry (by title or key) without a key match.")
    keyword_occurrence_weighting: bool = _s(False, "keywordOccurrenceWeighting", group=_KW, page="retrieval",
                                            doc="No effect in DLE either (the final sort overrides it).")
    reinjection_cooldown: int = _s(0, "reinjectionCooldown", 0, 50, group=_RI, page="retrieval",
                                   doc="After an entry is injected, skip it for this many generations (0 = off).")
    strip_duplicate_injections: bool = _s(True, "stripDuplicateInjections", group=_RI, page="retrieval",
                                          label="Skip recently injected",
                                          doc="Skip entries injected unchanged in the last few generations.")
    strip_lookback_depth: int = _s(2, "stripLookbackDepth", 1, 10, group=_RI, page="retrieval",
                                   doc="How many past generations \"skip recently injected\" looks back.")
    contextual_gating_tolerance: str = _s("strict", "contextualGatingTolerance",
                                          choices=("strict", "moderate", "lenient"), group=_GT, page="retrieval",
                                          doc="Fallback for gating fields that set no tolerance of their own.")
    notebook_enabled: bool = _s(False, "notebookEnabled", group=_NB, page="retrieval",
                                doc="Inject each chat's Author's Notebook text.")
    notebook_position: int = _s(1, "notebookPosition", 0, 2, group=_NB, page="retrieval",
                                doc="Where the notebook goes in the prompt.")
    notebook_depth: int = _s(4, "notebookDepth", 0, 9999, group=_NB, page="retrieval",
                             doc="In-chat position: how many messages from the end.")
    notebook_role: int = _s(0, "notebookRole", 0, 2, group=_NB, page="retrieval",
                            doc="Who the notebook is sent as.")
    semantic_enabled: bool = _s(False, group=_SE, page="embeddings",
                                doc="Add entries whose meaning is close to the chat (needs an embedding model).")
    semantic_top_k: int = _s(5, lo=1, hi=50, group=_SE, page="embeddings",
                             doc="How many semantic matches may be added per generation.")
    semantic_min_score: float = _s(0.2, lo=-1.0, hi=1.0, group=_SE, page="embeddings",
                                   doc="Minimum cosine similarity for a semantic match (an absolute floor, "
                                       "whatever the relative threshold says).")
    semantic_rrf_k: int = _s(60, lo=1, hi=1000, group=_SE, page="embeddings",
                             doc="Reciprocal-rank fusion constant (higher flattens the ranks).")
    semantic_relative_margin: float = _s(0.3, lo=0.0, hi=1.0, group=_SE, page="embeddings",
                                         doc="Relative threshold: a semantic match must score at least this share "
                                             "of the way from the query's median score to its best one (0 = the "
                                             "minimum similarity alone). Means the same on every model's scale.")
    semantic_last_weight: float = _s(0.5, lo=0.0, hi=1.0, group=_SE, page="embeddings",
                                     doc="How much the newest message counts in the semantic query (the rest is "
                                         "the mean of the scan window's messages).")
    fix_guide_leak: bool = _s(True, group=_FX, page="retrieval",
                              doc="Guide entries never reach the writing prompt, also not through BM25 (DLE leaks them).")
    fix_refine_keys_in_fuzzy: bool = _s(True, group=_FX, page="retrieval",
                                        doc="Refine keys also gate BM25 hits (DLE ignores them there).")
    fuzzy_search_enabled: bool = _s(False, "fuzzySearchEnabled", group=_MB, page="retrieval",
                                    label="Fuzzy search (BM25)",
                                    doc="Also find entries whose text resembles the chat when no key is written out.")
    fuzzy_search_min_score: float = _s(0.5, "fuzzySearchMinScore", 0.1, 2.0, group=_MB, page="retrieval",
                                       label="Fuzzy strictness",
                                       doc="Minimum BM25 score of a fuzzy match: lower finds more, higher fewer.")
    # AI search (dle-behaviour §4). Connections: `connection_profiles` (keys in the keyring) and
    # one channel per AI feature (`CHANNELS` below), each with DLE's per-tool names.
    ai_search_enabled: bool = _s(False, "aiSearchEnabled", group=_AI, page="channels",
                                 doc="Let an AI choose entries (two-stage or AI only).")
    ai_search_mode: str = _s("two-stage", "aiSearchMode", choices=("two-stage", "ai-only"), group=_AI, page="channels",
                             doc="two-stage: keywords find candidates, the AI chooses; ai-only: the AI reads the whole vault.")
    ai_search_scan_depth: int = _s(4, "aiSearchScanDepth", 1, 100, group=_AI, page="retrieval",
                                   doc="Chat messages the AI reads.")
    ai_search_system_prompt: str = _s("", "aiSearchSystemPrompt", group=_AI, page="retrieval",
                                      doc="Empty = the built-in prompt; {{maxEntries}} is replaced.")
    ai_search_manifest_summary_length: int = _s(600, "aiSearchManifestSummaryLength", 100, 1000, group=_AI,
                                                page="retrieval",
                                                doc="Characters of each entry's summary the AI sees in the candidate list.")
    manifest_summary_mode: str = _s("prefer_summary", "manifestSummaryMode",
                                    choices=("prefer_summary", "summary_only", "content_only"), group=_AI,
                                    page="retrieval", doc="What the AI sees of each candidate: its summary (else its "
                                    "text), only entries with a summary, or always its text.")
    ai_search_claude_code_prefix: bool = _s(False, "aiSearchClaudeCodePrefix", group=_AI, page="retrieval",
                                            doc="Start the prompt with the Claude Code prefix some proxies require.")
    ai_force_user_role: bool = _s(False, "aiForceUserRole", group=_AI, page="retrieval",
                                  doc="Send the instructions as a user message (models that reject the system role).")
    ai_confidence_threshold: str = _s("low", "aiConfidenceThreshold", choices=("low", "medium", "high"), group=_AI,
                                      page="channels", doc="Drop the AI's picks below this confidence.")
    ai_error_fallback: str = _s("keyword", "aiErrorFallback", choices=("keyword", "constants_only", "bootstrap_only", "none"),
                                group=_AI, page="channels", doc="What is injected when the AI call fails.")
    ai_empty_fallback: str = _s("constants", "aiEmptyFallback", choices=("constants", "constants_bootstrap", "keyword", "none"),
                                group=_AI, page="channels", doc="What is injected when the AI picks nothing.")
    hierarchical_pre_filter: bool = _s(False, "hierarchicalPreFilter", group=_AI, page="channels",
                                       doc="On big vaults, let the AI narrow the candidates by category first.")
    hierarchical_aggressiveness: float = _s(0.8, "hierarchicalAggressiveness", 0.0, 0.8, group=_AI, page="channels",
                                            doc="How much the pre-filter may cut.")
    # Not on any page: there is no Session Scribe summary here for AI search to read yet.
    scribe_informed_retrieval: bool = _s(False, "scribeInformedRetrieval")
    decay_enabled: bool = _s(False, "decayEnabled", group=_AI, page="retrieval",
                             doc="Tell the AI which entries were stale or injected many times in a row.")
    decay_boost_threshold: int = _s(5, "decayBoostThreshold", 2, 20, group=_AI, page="retrieval",
                                    doc="Generations without injection after which an entry is hinted as stale.")
    decay_penalty_threshold: int = _s(2, "decayPenaltyThreshold", 2, 10, group=_AI, page="retrieval",
                                      doc="Injections in a row after which an entry is hinted as frequent.")
    fix_semantic_budget: bool = _s(True, group=_FX, page="retrieval",
                                   doc="With semantic search on, when the budget or the entry cap cuts, the chat's "
                                       "own matches (keys found in it, semantic matches) are kept before constants "
                                       "and second-hand matches (cascades, BM25); the prompt keeps priority order.")
    fix_ai_confidence_budget: bool = _s(True, group=_FX, page="channels",
                                        doc="When the budget cuts, AI confidence decides who survives before priority "
                                        "(DLE sorts confidence away; off reproduces that).")
    # Connection channels: mode inherit | profile | proxy (| st, accepted from DLE, used as inherit).
    connection_profiles: tuple[ProfileConfig, ...] = _s((), doc="Named AI connections; API keys live in the keyring.")
    ai_search_connection_mode: str = _s("profile", "aiSearchConnectionMode", choices=("profile", "proxy"))
    ai_search_profile_id: str = _s("", "aiSearchProfileId")
    ai_search_proxy_url: str = _s("http://127.0.0.1:42069", "aiSearchProxyUrl")
    ai_search_model: str = _s("", "aiSearchModel", doc="Overrides the profile's model for this channel.")
    ai_search_max_tokens: int = _s(1024, "aiSearchMaxTokens", 64, 4096)
    ai_search_timeout: int = _s(20000, "aiSearchTimeout", 1000, 999999, doc="Milliseconds.")
    scribe_enabled: bool = _s(False, "scribeEnabled")
    scribe_connection_mode: str = _s("inherit", "scribeConnectionMode", choices=("inherit", "st", "profile", "proxy"))
    scribe_profile_id: str = _s("", "scribeProfileId")
    scribe_proxy_url: str = _s("http://127.0.0.1:42069", "scribeProxyUrl")
    scribe_model: str = _s("", "scribeModel")
    scribe_max_tokens: int = _s(1024, "scribeMaxTokens", 256, 4096)
    scribe_timeout: int = _s(60000, "scribeTimeout", 5000, 999999)
    auto_suggest_connection_mode: str = _s("inherit", "autoSuggestConnectionMode", choices=("inherit", "st", "profile", "proxy"))
    auto_suggest_profile_id: str = _s("", "autoSuggestProfileId")
    auto_suggest_proxy_url: str = _s("http://127.0.0.1:42069", "autoSuggestProxyUrl")
    auto_suggest_model: str = _s("", "autoSuggestModel")
    auto_suggest_max_tokens: int = _s(2048, "autoSuggestMaxTokens", 256, 4096)
    auto_suggest_timeout: int = _s(30000, "autoSuggestTimeout", 5000, 999999)
    ai_notepad_connection_mode: str = _s("inherit", "aiNotepadConnectionMode", choices=("inherit", "profile", "proxy"))
    ai_notepad_profile_id: str = _s("", "aiNotepadProfileId")
    ai_notepad_proxy_url: str = _s("http://127.0.0.1:42069", "aiNotepadProxyUrl")
    ai_notepad_model: str = _s("", "aiNotepadModel")
    ai_notepad_max_tokens: int = _s(1024, "aiNotepadMaxTokens", 256, 8192)
    ai_notepad_timeout: int = _s(30000, "aiNotepadTimeout", 5000, 999999)
    librarian_enabled: bool = _s(False, "librarianEnabled")
    librarian_connection_mode: str = _s("inherit", "librarianConnectionMode", choices=("inherit", "profile", "proxy"))
    librarian_profile_id: str = _s("", "librarianProfileId")
    librarian_proxy_url: str = _s("http://127.0.0.1:42069", "librarianProxyUrl")
    librarian_model: str = _s("", "librarianModel")
    librarian_max_tokens: int = _s(4096, "librarianSessionMaxTokens", 1024, 16384)
    librarian_timeout: int = _s(120000, "librarianSessionTimeout", 10000, 999999)
    optimize_keys_connection_mode: str = _s("inherit", "optimizeKeysConnectionMode", choices=("inherit", "profile", "proxy"))
    optimize_keys_profile_id: str = _s("", "optimizeKeysProfileId")
    optimize_keys_proxy_url: str = _s("http://127.0.0.1:42069", "optimizeKeysProxyUrl")
    optimize_keys_model: str = _s("", "optimizeKeysModel")
    optimize_keys_max_tokens: int = _s(1024, "optimizeKeysMaxTokens", 256, 8192)
    optimize_keys_timeout: int = _s(30000, "optimizeKeysTimeout", 5000, 999999)
    # Embeddings and vectors (the SillyTavern Vector API and the embedding endpoints)
    embedding_model_path: str = _s("", doc="Local GGUF embedding model (e.g. Qwen3-Embedding-0.6B-Q8_0.gguf); "
                                   "empty = the model manager's default model once it is downloaded.")
    vector_ann_threshold: int = _s(20_000, lo=0, hi=100_000_000,
                                   doc="Rows in a vector scope above which queries use the hnswlib index instead of an exact scan.")
    # Desktop app
    server_host: str = _s("127.0.0.1", doc="Address the embedded HTTP server binds.")
    server_port: int = _s(8765, lo=0, hi=65535, doc="Port of the embedded HTTP server (0 = any free port).")
    server_enabled: bool = _s(True)
    server_allowed_hosts: tuple[str, ...] = _s(
        (), item=host_name,
        doc="LAN use: host names or addresses, besides 127.0.0.1, localhost and [::1], that clients may use "
            "to reach the server (e.g. 192.168.1.20 or host.docker.internal). Clients on other machines "
            "must also send the server token.")
    server_allowed_origins: tuple[str, ...] = _s(
        ("http://127.0.0.1:8000", "http://localhost:8000"), item=parse_origin,
        doc="Web pages (origins such as http://127.0.0.1:8000, SillyTavern's default address) allowed to call "
            "the server from a browser; each request must carry the server token. Requests from any other "
            "page are refused.")
    # Obsidian REST emulation (dle_desktop/olra): DLE in the browser reads and writes our folder vaults
    olra_enabled: bool = _s(False, doc="Serve the folder vaults with the Obsidian Local REST API subset DeepLore "
                                       "Enhanced uses, so an unmodified DLE can read and write them without Obsidian.")
    olra_port: int = _s(27123, lo=1, hi=65535, doc="Plain HTTP port of the Obsidian REST emulation on 127.0.0.1 "
                                                   "(DLE's default for a new vault; Obsidian's plugin uses it too).")
    olra_https: bool = _s(False, doc="Also serve HTTPS with a self-signed certificate DLE Desktop makes (the browser "
                                     "only accepts it once the operating system trusts it); plain HTTP is simpler.")
    olra_https_port: int = _s(27124, lo=1, hi=65535, doc="HTTPS port of the Obsidian REST emulation (DLE's default "
                                                         "when its HTTPS box is ticked).")
    olra_vault: str = _s("", doc="The folder vault served, by name; empty = every enabled folder vault merged "
                                 "(a path in several vaults is served from the first; a write goes to the vault "
                                 "that has the file, else the primary one).")
    # SillyTavern bridge (the dle-desktop-bridge extension)
    st_vector_routing: bool = _s(False, doc="SillyTavern's Vector Storage uses DLE Desktop's store and embedder "
                                            "through the bridge.")
    st_folders: tuple[str, ...] = _s((), item=folder_path, split=False,
                                     doc="SillyTavern folders the user chose (absolute paths): where the bridge "
                                         "extension is installed and its chats are looked up.")
    st_forget_deleted_chats: bool = _s(True, doc="When a chat is deleted in SillyTavern, the bridge tells DLE "
                                                 "Desktop to forget its state too.")
    close_to_tray: bool = _s(True, doc="Closing the window keeps DLE Desktop running in the tray.")
    sync_paused: bool = _s(False, doc="Background sync paused from the tray.")
    semantic_paused: bool = _s(False, doc="Embedding the vault's entries for semantic search paused from the window.")

    # -- conversions -------------------------------------------------------------------------
    def to_json(self) -> dict:
        out: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = [v.to_json() for v in value] if f.name in ("vaults", "connection_profiles") else value
        return out

    def replace(self, **changes) -> Settings:
        return settings_from_mapping({**self.to_json(), **changes}, base=None)

    def enabled_vaults(self) -> tuple[VaultConfig, ...]:
        return tuple(v for v in self.vaults if v.enabled)


#: The AI features that call a model, each with its own connection channel (`{channel}_connection_mode`,
#: `_profile_id`, `_proxy_url`, `_model`, `_max_tokens`, `_timeout`). All but ai_search may inherit it.
CHANNELS = ("ai_search", "scribe", "auto_suggest", "ai_notepad", "librarian", "optimize_keys")

FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
DLE_NAMES = {f.metadata["dle"]: f.name for f in FIELDS.values() if f.metadata.get("dle")}
#: Names older DLE versions wrote (its settings migrations), read like the current ones.
DLE_NAMES.update({"librarianSessionModel": "librarian_model"})


_ACRONYMS = {"ai": "AI", "rrf": "RRF", "wi": "WI", "ttl": "TTL", "url": "URL"}


def label_for(name: str) -> str:
    """A setting's name in the settings UI: its declared label, else our name in words."""
    words = [_ACRONYMS.get(w, w) for w in name.split("_")]
    return FIELDS[name].metadata.get("label") or " ".join(words)[:1].upper() + " ".join(words)[1:]


def grouped_fields() -> list[tuple[str, list[dataclasses.Field]]]:
    """The settings that have a place in the settings UI, by group in `GROUPS` order (declaration
    order within a group)."""
    by_group: dict[str, list[dataclasses.Field]] = {g: [] for g in GROUPS}
    for f in FIELDS.values():
        group = f.metadata.get("group")
        if group is not None:
            by_group[group].append(f)
    return [(g, fs) for g, fs in by_group.items() if fs]


def _coerce(name: str, value: Any) -> Any:
    f = FIELDS[name]
    meta = f.metadata
    default = f.default
    if name == "vaults":
        if not isinstance(value, (list, tuple)):
            raise ConfigError("vaults must be a list")
        vaults = tuple(v if isinstance(v, VaultConfig) else VaultConfig.from_json(v) for v in value)
        names = [v.name.lower() for v in vaults]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"vault names must be unique: {', '.join(dupes)}")
        return vaults
    if name == "connection_profiles":
        if not isinstance(value, (list, tuple)):
            raise ConfigError("connection_profiles must be a list")
        profiles = tuple(p if isinstance(p, ProfileConfig) else ProfileConfig.from_json(p) for p in value)
        ids = [p.id for p in profiles]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ConfigError(f"connection profile ids must be unique: {', '.join(dupes)}")
        return profiles
    if isinstance(default, tuple):
        if isinstance(value, str) and not meta.get("split", True):
            value = [value]
        return _text_list(name, value, meta.get("item"))
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(f"setting {name}: expected true or false, got {value!r}")
    if isinstance(default, (int, float)):
        if isinstance(value, bool):
            raise ConfigError(f"setting {name}: expected a number, got {value!r}")
        try:
            num = float(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"setting {name}: expected a number, got {value!r}") from exc
        if num != num:
            raise ConfigError(f"setting {name}: NaN is not a number")
        lo, hi = meta.get("lo"), meta.get("hi")
        if (lo is not None and num < lo) or (hi is not None and num > hi):
            raise ConfigError(f"setting {name}: {value!r} is outside {lo}-{hi}")
        if isinstance(default, int) and not isinstance(default, bool):
            if not num.is_integer():
                raise ConfigError(f"setting {name}: expected a whole number, got {value!r}")
            return int(num)
        return num
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"setting {name}: expected text, got {value!r}")
        choices = meta.get("choices")
        if choices and value not in choices:
            raise ConfigError(f"setting {name}: {value!r} is not one of {', '.join(choices)}")
        return value
    return value


def _text_list(name: str, value: Any, item) -> tuple[str, ...]:
    """A list of text values; one string is split at commas and spaces (`"a, b"`)."""
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"setting {name}: expected a list of text values, got {value!r}")
    out: list[str] = []
    for raw in value:
        try:
            canonical = item(raw) if item else raw.strip()
        except ValueError as exc:
            raise ConfigError(f"setting {name}: {exc}") from None
        if canonical and canonical not in out:
            out.append(canonical)
    return tuple(out)


def normalise_name(name: str) -> str | None:
    """Our snake_case name for a setting given in either spelling, or None if unknown."""
    if name in FIELDS:
        return name
    return DLE_NAMES.get(name)


def settings_from_mapping(raw: dict, base: Settings | None = None) -> Settings:
    """Build settings from a mapping in our names or DLE's; unknown names are an error."""
    if not isinstance(raw, dict):
        raise ConfigError("settings must be a JSON object")
    raw = {k: v for k, v in raw.items() if k not in ("schema_version", "settingsVersion")}
    unknown = sorted(k for k in raw if normalise_name(k) is None)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
    values = {} if base is None else {f: getattr(base, f) for f in FIELDS}
    for key, value in raw.items():
        values[normalise_name(key)] = _coerce(normalise_name(key), value)
    return Settings(**values)


class SettingsFromNewerVersion(ConfigError):
    """settings.json was written by a newer DLE Desktop: read nothing, overwrite nothing."""


def _migrate(raw: dict) -> dict:
    if not isinstance(raw, dict):
        raise ConfigError("settings must be a JSON object")
    version = raw.get("schema_version", 0)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SettingsFromNewerVersion(f"settings were written by a newer DLE Desktop (schema {version})")
    # Schema 0 → 1: nothing renamed yet. Migrations go here, one step per version.
    if "semantic_relative_margin" not in raw and raw.get("semantic_min_score") == 0.35:
        # Saved before the relative threshold existed, with the old default floor (0.35 drops
        # right answers of small models): take the new default floor. No version bump, so an
        # older DLE Desktop still reads the file.
        raw["semantic_min_score"] = 0.2
    raw["schema_version"] = SCHEMA_VERSION
    return raw


class SettingsStore:
    """Loads and saves settings.json atomically. Never writes secrets."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.problem: str | None = None
        #: True when the file must not be overwritten (newer version, or not a readable file).
        self.read_only = False

    def load(self) -> Settings:
        if not self.path.exists():
            return Settings()
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return settings_from_mapping(_migrate(raw))
        except SettingsFromNewerVersion as exc:
            self.read_only = True
            self.problem = f"{exc}; defaults are in use for this run and the file is left untouched"
            log.warning(self.problem)
            return Settings()
        except OSError as exc:  # a folder where the file should be, no permission...
            self.read_only = True
            self.problem = f"settings file {self.path} cannot be read ({exc.strerror or exc}); defaults are in use and nothing is saved"
            log.warning(self.problem)
            return Settings()
        except (json.JSONDecodeError, UnicodeDecodeError, ConfigError) as exc:
            kept = self.path.with_name(f"{self.path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
            n = 1
            while kept.exists():  # never overwrite a copy set aside earlier (same second)
                n += 1
                kept = kept.with_name(f"{self.path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
            try:
                os.replace(self.path, kept)
            except OSError:
                kept = self.path
            self.problem = f"settings file could not be read ({exc}); it was kept as {kept.name} and defaults are in use"
            log.warning(self.problem)
            return Settings()

    def save(self, settings: Settings) -> None:
        if self.read_only:
            raise ConfigError(f"not saving settings: {self.problem}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        data = json.dumps(settings.to_json(), indent=2, ensure_ascii=False)
        with open(tmp, "w", encoding="utf-8", opener=private_opener) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
