"""Every setting, declared once: name, DLE's name, default, allowed values, its place in the
settings UI."""

from __future__ import annotations

from dataclasses import dataclass

from dle_desktop.core.hosts import host_name, parse_origin
from dle_desktop.state.settings.declare import GROUPS, _s, folder_path
from dle_desktop.state.settings.records import ProfileConfig, VaultConfig, WiSyncConfig

#: Short names for `_s(group=...)` so the declarations below stay on one line each.
_MB, _KW, _RS, _RI, _GT, _AI, _IN, _NB, _VT, _SE, _FX = GROUPS


@dataclass(frozen=True)
class SettingsFields:
    """Every setting with its declaration (`_s`); `Settings` adds what is done with them."""

    # Vaults and indexing
    vaults: tuple[VaultConfig, ...] = _s((), "vaults", doc="Configured vaults; the first enabled one is primary.")
    multi_vault_conflict_resolution: str = _s(
        "all", "multiVaultConflictResolution", choices=("all", "first", "last", "merge")
    )
    lorebook_tag: str = _s(
        "lorebook",
        "lorebookTag",
        group=_VT,
        page="retrieval",
        doc="Notes carrying this tag (without #) are lore entries; changing it re-reads the vaults.",
    )
    constant_tag: str = _s(
        "lorebook-always",
        "constantTag",
        group=_VT,
        page="retrieval",
        label="Always-send tag",
        doc="Entries with this tag are injected every generation, matched or not.",
    )
    never_insert_tag: str = _s(
        "lorebook-never",
        "neverInsertTag",
        group=_VT,
        page="retrieval",
        doc="Entries with this tag are indexed but never injected.",
    )
    seed_tag: str = _s(
        "lorebook-seed",
        "seedTag",
        group=_VT,
        page="retrieval",
        doc="Entries with this tag are background for AI search on new chats.",
    )
    bootstrap_tag: str = _s(
        "lorebook-bootstrap",
        "bootstrapTag",
        group=_VT,
        page="retrieval",
        label="Starter entry tag",
        doc="Entries with this tag are injected while the chat is shorter than the new chat threshold.",
    )
    librarian_guide_tag: str = _s(
        "lorebook-guide",
        "librarianGuideTag",
        group=_VT,
        page="retrieval",
        doc="Entries with this tag guide the Librarian and never reach the writing prompt.",
    )
    lenient_authoring: bool = _s(True, "lenientAuthoring")
    field_definitions_path: str = _s("DeepLore/field-definitions.yaml", "fieldDefinitionsPath")
    cache_ttl: int = _s(300, "cacheTTL", 0, 86400, doc="Seconds; REST vaults are re-read when older.")
    sync_polling_interval: int = _s(
        30, "syncPollingInterval", 0, 3600, doc="Seconds between polls of REST vaults (0 = off)."
    )
    watch_folders: bool = _s(True, doc="Watch folder vaults for changes.")
    show_sync_toasts: bool = _s(True, "showSyncToasts")
    # Matching (used by the retrieval pipeline)
    new_chat_threshold: int = _s(
        3,
        "newChatThreshold",
        1,
        20,
        group=_VT,
        page="retrieval",
        doc="A chat with at most this many messages is new: starter entries and seeds apply.",
    )
    scan_depth: int = _s(
        4,
        "scanDepth",
        0,
        100,
        group=_MB,
        page="retrieval",
        label="Keyword scan depth",
        doc="How many recent messages are searched for keys (0 turns keyword matching off).",
    )
    max_entries: int = _s(
        10,
        "maxEntries",
        1,
        100,
        group=_MB,
        page="retrieval",
        doc="Most entries injected per generation, constants and pins included.",
    )
    unlimited_entries: bool = _s(
        False, "unlimitedEntries", group=_MB, page="retrieval", doc="Ignore the max entries cap."
    )
    max_tokens_budget: int = _s(
        3072,
        "maxTokensBudget",
        100,
        100000,
        group=_MB,
        page="retrieval",
        label="Token budget",
        doc="Most tokens of lore per generation; the entry that crosses it is cut at a sentence.",
    )
    unlimited_budget: bool = _s(
        False,
        "unlimitedBudget",
        group=_MB,
        page="retrieval",
        label="Unlimited token budget",
        doc="Ignore the token budget.",
    )
    recursive_scan: bool = _s(
        False,
        "recursiveScan",
        group=_RS,
        page="retrieval",
        doc="Matched entries' text is searched for keys too, pulling in the entries it names.",
    )
    max_recursion_steps: int = _s(
        3, "maxRecursionSteps", 1, 10, group=_RS, page="retrieval", doc="How many rounds of recursive scanning at most."
    )
    match_whole_words: bool = _s(
        False,
        "matchWholeWords",
        group=_KW,
        page="retrieval",
        doc='Keys match whole words only (off: "ab" also matches inside "about").',
    )
    case_sensitive: bool = _s(
        False, "caseSensitive", group=_KW, page="retrieval", doc="Keys match only with the same upper and lower case."
    )
    injection_position: int = _s(
        1,
        "injectionPosition",
        0,
        2,
        group=_IN,
        page="retrieval",
        doc="Where lore goes in the prompt (an entry's own position wins).",
    )
    injection_depth: int = _s(
        4,
        "injectionDepth",
        0,
        9999,
        group=_IN,
        page="retrieval",
        doc="In-chat position: how many messages from the end (0 = after the last one).",
    )
    injection_role: int = _s(0, "injectionRole", 0, 2, group=_IN, page="retrieval", doc="Who in-chat lore is sent as.")
    injection_mode: str = _s(
        "extension",
        "injectionMode",
        choices=("extension", "prompt_list"),
        group=_IN,
        page="retrieval",
        doc="extension: a fixed place in the prompt; prompt_list: named prompts "
        "you place in SillyTavern's prompt manager.",
    )
    injection_template: str = _s(
        "<{{title}}>\n{{content}}\n</{{title}}>",
        "injectionTemplate",
        group=_IN,
        page="retrieval",
        doc="How each entry is written into the prompt; {{title}} and {{content}} are replaced.",
    )
    allow_wi_scan: bool = _s(
        False,
        "allowWIScan",
        group=_IN,
        page="retrieval",
        label="Allow World Info scan",
        doc="Let SillyTavern's World Info scan injected lore.",
    )
    character_context_scan: bool = _s(
        False,
        "characterContextScan",
        group=_MB,
        page="retrieval",
        label="Auto-match active character",
        doc="Inject the active character's own entry (by title or key) without a key match.",
    )
    keyword_occurrence_weighting: bool = _s(
        False,
        "keywordOccurrenceWeighting",
        group=_KW,
        page="retrieval",
        doc="No effect in DLE either (the final sort overrides it).",
    )
    reinjection_cooldown: int = _s(
        0,
        "reinjectionCooldown",
        0,
        50,
        group=_RI,
        page="retrieval",
        doc="After an entry is injected, skip it for this many generations (0 = off).",
    )
    strip_duplicate_injections: bool = _s(
        True,
        "stripDuplicateInjections",
        group=_RI,
        page="retrieval",
        label="Skip recently injected",
        doc="Skip entries injected unchanged in the last few generations.",
    )
    strip_lookback_depth: int = _s(
        2,
        "stripLookbackDepth",
        1,
        10,
        group=_RI,
        page="retrieval",
        doc='How many past generations "skip recently injected" looks back.',
    )
    contextual_gating_tolerance: str = _s(
        "strict",
        "contextualGatingTolerance",
        choices=("strict", "moderate", "lenient"),
        group=_GT,
        page="retrieval",
        doc="Fallback for gating fields that set no tolerance of their own.",
    )
    notebook_enabled: bool = _s(
        False, "notebookEnabled", group=_NB, page="retrieval", doc="Inject each chat's Author's Notebook text."
    )
    notebook_position: int = _s(
        1, "notebookPosition", 0, 2, group=_NB, page="retrieval", doc="Where the notebook goes in the prompt."
    )
    notebook_depth: int = _s(
        4,
        "notebookDepth",
        0,
        9999,
        group=_NB,
        page="retrieval",
        doc="In-chat position: how many messages from the end.",
    )
    notebook_role: int = _s(0, "notebookRole", 0, 2, group=_NB, page="retrieval", doc="Who the notebook is sent as.")
    semantic_enabled: bool = _s(
        False,
        group=_SE,
        page="embeddings",
        doc="Add entries whose meaning is close to the chat (needs an embedding model).",
    )
    semantic_top_k: int = _s(
        5, lo=1, hi=50, group=_SE, page="embeddings", doc="How many semantic matches may be added per generation."
    )
    semantic_min_score: float = _s(
        0.2,
        lo=-1.0,
        hi=1.0,
        group=_SE,
        page="embeddings",
        doc="Minimum cosine similarity for a semantic match (an absolute floor, whatever the relative threshold says).",
    )
    semantic_rrf_k: int = _s(
        60,
        lo=1,
        hi=1000,
        group=_SE,
        page="embeddings",
        doc="Reciprocal-rank fusion constant (higher flattens the ranks).",
    )
    semantic_relative_margin: float = _s(
        0.3,
        lo=0.0,
        hi=1.0,
        group=_SE,
        page="embeddings",
        doc="Relative threshold: a semantic match must score at least this share "
        "of the way from the query's median score to its best one (0 = the "
        "minimum similarity alone). Means the same on every model's scale.",
    )
    semantic_last_weight: float = _s(
        0.5,
        lo=0.0,
        hi=1.0,
        group=_SE,
        page="embeddings",
        doc="How much the newest message counts in the semantic query (the rest is "
        "the mean of the scan window's messages).",
    )
    fix_guide_leak: bool = _s(
        True,
        group=_FX,
        page="retrieval",
        doc="Guide entries never reach the writing prompt, also not through BM25 (DLE leaks them).",
    )
    fix_refine_keys_in_fuzzy: bool = _s(
        True, group=_FX, page="retrieval", doc="Refine keys also gate BM25 hits (DLE ignores them there)."
    )
    fuzzy_search_enabled: bool = _s(
        False,
        "fuzzySearchEnabled",
        group=_MB,
        page="retrieval",
        label="Fuzzy search (BM25)",
        doc="Also find entries whose text resembles the chat when no key is written out.",
    )
    fuzzy_search_min_score: float = _s(
        0.5,
        "fuzzySearchMinScore",
        0.1,
        2.0,
        group=_MB,
        page="retrieval",
        label="Fuzzy strictness",
        doc="Minimum BM25 score of a fuzzy match: lower finds more, higher fewer.",
    )
    # AI search (dle-behaviour §4). Connections: `connection_profiles` (keys in the keyring) and
    # one channel per AI feature (`CHANNELS` below), each with DLE's per-tool names.
    ai_search_enabled: bool = _s(
        False, "aiSearchEnabled", group=_AI, page="channels", doc="Let an AI choose entries (two-stage or AI only)."
    )
    ai_search_mode: str = _s(
        "two-stage",
        "aiSearchMode",
        choices=("two-stage", "ai-only"),
        group=_AI,
        page="channels",
        doc="two-stage: keywords find candidates, the AI chooses; ai-only: the AI reads the whole vault.",
    )
    ai_search_scan_depth: int = _s(
        4, "aiSearchScanDepth", 1, 100, group=_AI, page="retrieval", doc="Chat messages the AI reads."
    )
    ai_search_system_prompt: str = _s(
        "",
        "aiSearchSystemPrompt",
        group=_AI,
        page="retrieval",
        doc="Empty = the built-in prompt; {{maxEntries}} is replaced.",
    )
    ai_search_manifest_summary_length: int = _s(
        600,
        "aiSearchManifestSummaryLength",
        100,
        1000,
        group=_AI,
        page="retrieval",
        doc="Characters of each entry's summary the AI sees in the candidate list.",
    )
    manifest_summary_mode: str = _s(
        "prefer_summary",
        "manifestSummaryMode",
        choices=("prefer_summary", "summary_only", "content_only"),
        group=_AI,
        page="retrieval",
        doc="What the AI sees of each candidate: its summary (else its "
        "text), only entries with a summary, or always its text.",
    )
    ai_search_claude_code_prefix: bool = _s(
        False,
        "aiSearchClaudeCodePrefix",
        group=_AI,
        page="retrieval",
        doc="Start the prompt with the Claude Code prefix some proxies require.",
    )
    ai_force_user_role: bool = _s(
        False,
        "aiForceUserRole",
        group=_AI,
        page="retrieval",
        doc="Send the instructions as a user message (models that reject the system role).",
    )
    ai_confidence_threshold: str = _s(
        "low",
        "aiConfidenceThreshold",
        choices=("low", "medium", "high"),
        group=_AI,
        page="channels",
        doc="Drop the AI's picks below this confidence.",
    )
    ai_error_fallback: str = _s(
        "keyword",
        "aiErrorFallback",
        choices=("keyword", "constants_only", "bootstrap_only", "none"),
        group=_AI,
        page="channels",
        doc="What is injected when the AI call fails.",
    )
    ai_empty_fallback: str = _s(
        "constants",
        "aiEmptyFallback",
        choices=("constants", "constants_bootstrap", "keyword", "none"),
        group=_AI,
        page="channels",
        doc="What is injected when the AI picks nothing.",
    )
    hierarchical_pre_filter: bool = _s(
        False,
        "hierarchicalPreFilter",
        group=_AI,
        page="channels",
        doc="On big vaults, let the AI narrow the candidates by category first.",
    )
    hierarchical_aggressiveness: float = _s(
        0.8, "hierarchicalAggressiveness", 0.0, 0.8, group=_AI, page="channels", doc="How much the pre-filter may cut."
    )
    # Not on any page yet (the writers get their page with the SillyTavern side); settings.json sets them.
    scribe_informed_retrieval: bool = _s(
        False, "scribeInformedRetrieval", doc="AI search also reads the chat's last Session Scribe summary."
    )
    decay_enabled: bool = _s(
        False,
        "decayEnabled",
        group=_AI,
        page="retrieval",
        doc="Tell the AI which entries were stale or injected many times in a row.",
    )
    decay_boost_threshold: int = _s(
        5,
        "decayBoostThreshold",
        2,
        20,
        group=_AI,
        page="retrieval",
        doc="Generations without injection after which an entry is hinted as stale.",
    )
    decay_penalty_threshold: int = _s(
        2,
        "decayPenaltyThreshold",
        2,
        10,
        group=_AI,
        page="retrieval",
        doc="Injections in a row after which an entry is hinted as frequent.",
    )
    fix_semantic_budget: bool = _s(
        True,
        group=_FX,
        page="retrieval",
        doc="With semantic search on, when the budget or the entry cap cuts, the chat's "
        "own matches (keys found in it, semantic matches) are kept before constants "
        "and second-hand matches (cascades, BM25); the prompt keeps priority order.",
    )
    fix_ai_confidence_budget: bool = _s(
        True,
        group=_FX,
        page="channels",
        doc="When the budget cuts, AI confidence decides who survives before priority "
        "(DLE sorts confidence away; off reproduces that).",
    )
    # Connection channels: mode inherit | profile | proxy (| st, accepted from DLE, used as inherit).
    connection_profiles: tuple[ProfileConfig, ...] = _s((), doc="Named AI connections; API keys live in the keyring.")
    wi_syncs: tuple[WiSyncConfig, ...] = _s(
        (), doc="Vault folders mirrored into SillyTavern World Info books (each off until turned on)."
    )
    ai_search_connection_mode: str = _s("profile", "aiSearchConnectionMode", choices=("profile", "proxy"))
    ai_search_profile_id: str = _s("", "aiSearchProfileId")
    ai_search_proxy_url: str = _s("http://127.0.0.1:42069", "aiSearchProxyUrl")
    ai_search_model: str = _s("", "aiSearchModel", doc="Overrides the profile's model for this channel.")
    ai_search_max_tokens: int = _s(1024, "aiSearchMaxTokens", 64, 4096)
    ai_search_timeout: int = _s(20000, "aiSearchTimeout", 1000, 999999, doc="Milliseconds.")
    scribe_enabled: bool = _s(False, "scribeEnabled", doc="Session Scribe writes a session note every few messages.")
    scribe_interval: int = _s(5, "scribeInterval", 1, 50, doc="Messages between two automatic Session Scribe runs.")
    scribe_folder: str = _s("Sessions", "scribeFolder", doc="Vault folder of the session notes.")
    scribe_prompt: str = _s("", "scribePrompt", doc="Session Scribe's prompt; empty: the default.")
    scribe_scan_depth: int = _s(20, "scribeScanDepth", 5, 100, doc="Messages the Session Scribe summarises.")
    auto_suggest_enabled: bool = _s(
        False, "autoSuggestEnabled", doc="Auto Lorebook proposes missing entries every few AI messages."
    )
    auto_suggest_interval: int = _s(
        10, "autoSuggestInterval", 3, 50, doc="AI messages between two automatic Auto Lorebook runs."
    )
    auto_suggest_folder: str = _s("", "autoSuggestFolder", doc="Vault folder of accepted suggestions.")
    auto_suggest_prompt: str = _s("", "autoSuggestPrompt", doc="Auto Lorebook's prompt; empty: the default.")
    auto_suggest_skip_review: bool = _s(
        False, "autoSuggestSkipReview", doc="Write Auto Lorebook's suggestions without review."
    )
    ai_notepad_enabled: bool = _s(False, "aiNotepadEnabled", doc="The model keeps private notes across the chat.")
    ai_notepad_mode: str = _s(
        "tag",
        "aiNotepadMode",
        choices=("tag", "extract"),
        doc="tag: the model writes <dle-notes> blocks; extract: a second call picks the notes out.",
    )
    ai_notepad_position: int = _s(1, "aiNotepadPosition", 0, 2, doc="Where the notepad goes in the prompt.")
    ai_notepad_depth: int = _s(4, "aiNotepadDepth", 0, 9999, doc="In-chat position: messages from the end.")
    ai_notepad_role: int = _s(0, "aiNotepadRole", 0, 2, doc="Who the notepad is sent as.")
    ai_notepad_prompt: str = _s("", "aiNotepadPrompt", doc="The tag-mode instruction; empty: the default.")
    ai_notepad_extract_prompt: str = _s(
        "", "aiNotepadExtractPrompt", doc="The extract-mode prompt; empty: the default."
    )
    review_response_tokens: int = _s(
        0, "reviewResponseTokens", 0, 100000, doc="/dle-review: the answer's length in tokens; 0: the model's own."
    )
    scribe_connection_mode: str = _s("inherit", "scribeConnectionMode", choices=("inherit", "st", "profile", "proxy"))
    scribe_profile_id: str = _s("", "scribeProfileId")
    scribe_proxy_url: str = _s("http://127.0.0.1:42069", "scribeProxyUrl")
    scribe_model: str = _s("", "scribeModel")
    scribe_max_tokens: int = _s(1024, "scribeMaxTokens", 256, 4096)
    scribe_timeout: int = _s(60000, "scribeTimeout", 5000, 999999)
    auto_suggest_connection_mode: str = _s(
        "inherit", "autoSuggestConnectionMode", choices=("inherit", "st", "profile", "proxy")
    )
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
    optimize_keys_connection_mode: str = _s(
        "inherit", "optimizeKeysConnectionMode", choices=("inherit", "profile", "proxy")
    )
    optimize_keys_profile_id: str = _s("", "optimizeKeysProfileId")
    optimize_keys_proxy_url: str = _s("http://127.0.0.1:42069", "optimizeKeysProxyUrl")
    optimize_keys_model: str = _s("", "optimizeKeysModel")
    optimize_keys_max_tokens: int = _s(1024, "optimizeKeysMaxTokens", 256, 8192)
    optimize_keys_timeout: int = _s(30000, "optimizeKeysTimeout", 5000, 999999)
    # Embeddings and vectors (the SillyTavern Vector API and the embedding endpoints)
    embedding_model_path: str = _s(
        "",
        doc="Local GGUF embedding model (e.g. Qwen3-Embedding-0.6B-Q8_0.gguf); "
        "empty = the model manager's default model once it is downloaded.",
    )
    vector_ann_threshold: int = _s(
        20_000,
        lo=0,
        hi=100_000_000,
        doc="Rows in a vector scope above which queries use the hnswlib index instead of an exact scan.",
    )
    # Desktop app
    server_host: str = _s("127.0.0.1", doc="Address the embedded HTTP server binds.")
    server_port: int = _s(8765, lo=0, hi=65535, doc="Port of the embedded HTTP server (0 = any free port).")
    server_enabled: bool = _s(True)
    server_allowed_hosts: tuple[str, ...] = _s(
        (),
        item=host_name,
        doc="LAN use: host names or addresses, besides 127.0.0.1, localhost and [::1], that clients may use "
        "to reach the server (e.g. 192.168.1.20 or host.docker.internal). Clients on other machines "
        "must also send the server token.",
    )
    server_allowed_origins: tuple[str, ...] = _s(
        ("http://127.0.0.1:8000", "http://localhost:8000"),
        item=parse_origin,
        doc="Web pages (origins such as http://127.0.0.1:8000, SillyTavern's default address) allowed to call "
        "the server from a browser; each request must carry the server token. Requests from any other "
        "page are refused.",
    )
    # Obsidian REST emulation (dle_desktop/olra): DLE in the browser reads and writes our folder vaults
    olra_enabled: bool = _s(
        False,
        doc="Serve the folder vaults with the Obsidian Local REST API subset DeepLore "
        "Enhanced uses, so an unmodified DLE can read and write them without Obsidian.",
    )
    olra_port: int = _s(
        27123,
        lo=1,
        hi=65535,
        doc="Plain HTTP port of the Obsidian REST emulation on 127.0.0.1 "
        "(DLE's default for a new vault; Obsidian's plugin uses it too).",
    )
    olra_https: bool = _s(
        False,
        doc="Also serve HTTPS with a self-signed certificate DLE Desktop makes (the browser "
        "only accepts it once the operating system trusts it); plain HTTP is simpler.",
    )
    olra_https_port: int = _s(
        27124,
        lo=1,
        hi=65535,
        doc="HTTPS port of the Obsidian REST emulation (DLE's default when its HTTPS box is ticked).",
    )
    olra_vault: str = _s(
        "",
        doc="The folder vault served, by name; empty = every enabled folder vault merged "
        "(a path in several vaults is served from the first; a write goes to the vault "
        "that has the file, else the primary one).",
    )
    # SillyTavern bridge (the dle-desktop-bridge extension)
    st_vector_routing: bool = _s(
        False, doc="SillyTavern's Vector Storage uses DLE Desktop's store and embedder through the bridge."
    )
    st_folders: tuple[str, ...] = _s(
        (),
        item=folder_path,
        split=False,
        doc="SillyTavern folders the user chose (absolute paths): where the bridge "
        "extension is installed and its chats are looked up.",
    )
    st_forget_deleted_chats: bool = _s(
        True, doc="When a chat is deleted in SillyTavern, the bridge tells DLE Desktop to forget its state too."
    )
    close_to_tray: bool = _s(True, doc="Closing the window keeps DLE Desktop running in the tray.")
    sync_paused: bool = _s(False, doc="Background sync paused from the tray.")
    semantic_paused: bool = _s(False, doc="Embedding the vault's entries for semantic search paused from the window.")


#: The AI features that call a model, each with its own connection channel (`{channel}_connection_mode`,
#: `_profile_id`, `_proxy_url`, `_model`, `_max_tokens`, `_timeout`). All but ai_search may inherit it.
CHANNELS = ("ai_search", "scribe", "auto_suggest", "ai_notepad", "librarian", "optimize_keys")
