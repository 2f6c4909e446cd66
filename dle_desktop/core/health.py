"""The health check: DLE's checks (errors, warnings, info), each naming the entry and what to do.

Pure: it reads a snapshot and plain facts about the configuration, and returns findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dle_desktop.core.entry import Entry
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.user_activity import GiveWay, no_wait

POSITION_NAMES = {0: "after", 1: "in_chat", 2: "before"}
_LONG_ENTRY_TOKENS = 1500
_LONG_SEED_TOKENS = 2000


@dataclass(frozen=True)
class HealthContext:
    """The configuration facts the checks need, decoupled from the settings module."""

    enabled_vaults: int = 1
    rest_vaults_without_key: tuple[str, ...] = ()
    scan_depth: int = 4
    max_tokens_budget: int = 3072
    unlimited_budget: bool = False
    max_entries: int = 10
    unlimited_entries: bool = False
    cache_ttl: int = 300
    index_age_s: float = 0.0
    recursive_scan: bool = False
    max_recursion_steps: int = 3
    injection_position: int = 1
    ai_search_enabled: bool = False
    ai_search_mode: str = "two-stage"
    ai_search_connection_mode: str = "profile"
    ai_search_profile_id: str = ""
    ai_search_proxy_url: str = ""
    scribe_enabled: bool = False
    scribe_connection_mode: str = "inherit"
    scribe_profile_id: str = ""
    scribe_proxy_url: str = ""


@dataclass(frozen=True)
class HealthFinding:
    severity: str  # error | warning | info
    code: str
    message: str
    entry: str | None = None
    vault: str | None = None
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "code": self.code, "message": self.message, "vault": self.vault, "path": self.path}


@dataclass
class HealthReport:
    errors: list[HealthFinding] = field(default_factory=list)
    warnings: list[HealthFinding] = field(default_factory=list)
    info: list[HealthFinding] = field(default_factory=list)

    def add(self, severity: str, code: str, message: str, entry: Entry | None = None, title: str | None = None) -> None:
        f = HealthFinding(
            severity,
            code,
            message,
            entry=entry.title if entry else title,
            vault=entry.vault if entry else None,
            path=entry.path if entry else None,
        )
        {"error": self.errors, "warning": self.warnings, "info": self.info}[severity].append(f)

    def to_json(self) -> dict[str, Any]:
        return {k: [f.to_json() for f in getattr(self, k)] for k in ("errors", "warnings", "info")}

    @property
    def counts(self) -> tuple[int, int, int]:
        return len(self.errors), len(self.warnings), len(self.info)


def _config_checks(ctx: HealthContext, r: HealthReport) -> None:
    if ctx.enabled_vaults == 0:
        r.add("error", "no_enabled_vaults", "No vault is enabled: add a vault folder or enable one in Settings.")
    if ctx.scan_depth == 0 and not ctx.ai_search_enabled:
        r.add(
            "error",
            "scan_depth_zero_without_ai",
            "Scan depth is 0 and AI search is off, so nothing can match by keyword: raise scan depth or enable AI search.",
        )
    if ctx.ai_search_enabled:
        if (
            ctx.ai_search_connection_mode == "profile"
            and not ctx.ai_search_profile_id
            and ctx.ai_search_mode == "ai-only"
        ):
            r.add(
                "error",
                "ai_only_without_profile",
                "AI-only search is on but no connection profile is chosen: pick one in Channels.",
            )
        if ctx.ai_search_connection_mode == "proxy" and not ctx.ai_search_proxy_url:
            r.add(
                "error", "ai_proxy_without_url", "AI search uses proxy mode but has no proxy URL: set one in Channels."
            )
    if ctx.scribe_enabled:
        if ctx.scribe_connection_mode == "profile" and not ctx.scribe_profile_id:
            r.add(
                "error",
                "scribe_without_profile",
                "Session Scribe uses profile mode but no profile is chosen: pick one in Channels.",
            )
        if ctx.scribe_connection_mode == "proxy" and not ctx.scribe_proxy_url:
            r.add(
                "error",
                "scribe_proxy_without_url",
                "Session Scribe uses proxy mode but has no proxy URL: set one in Channels.",
            )
    for name in ctx.rest_vaults_without_key:
        r.add(
            "warning",
            "vault_without_key",
            f"Vault '{name}' has no API key: Obsidian's REST plugin will refuse every request. Add the key in Settings.",
        )
    if not ctx.unlimited_budget and ctx.max_tokens_budget < 200:
        r.add(
            "warning",
            "budget_too_small",
            f"The token budget is {ctx.max_tokens_budget}; most entries will not fit. 1000 or more is usual.",
        )
    if ctx.cache_ttl > 0 and ctx.index_age_s > 3 * ctx.cache_ttl:
        r.add(
            "warning",
            "index_stale",
            f"The index is {int(ctx.index_age_s)} s old, over 3x the cache TTL; sync now or check the vault connection.",
        )
    if ctx.recursive_scan and ctx.max_recursion_steps == 1:
        r.add(
            "info",
            "recursion_one_step",
            "Recursive scan is on with max steps 1, which is the same as no recursion beyond the first pass.",
        )
    if ctx.cache_ttl == 0:
        r.add("info", "cache_ttl_zero", "Cache TTL is 0: remote vaults are re-read before every generation.")


#: entries checked between two calls of `give_way` (about 10 ms of work)
GIVE_WAY_EVERY = 500


def _entry_checks(snapshot: IndexSnapshot, ctx: HealthContext, r: HealthReport, give_way: GiveWay = no_wait) -> None:
    titles = snapshot.by_title
    entries = snapshot.entries
    seen_pairs: set[tuple[str, str]] = set()
    for n, e in enumerate(entries):
        if n % GIVE_WAY_EVERY == 0:
            give_way()
        low_requires = {t.lower() for t in e.original_requires}
        low_excludes = {t.lower() for t in e.original_excludes}
        for t in e.original_requires:
            if t.lower() not in titles:
                r.add(
                    "error",
                    "requires_missing",
                    f"requires '{t}', which is not an entry; the requirement is ignored. Fix the title or remove it.",
                    e,
                )
        for t in e.original_excludes:
            if t.lower() not in titles:
                r.add(
                    "error",
                    "excludes_missing",
                    f"excludes '{t}', which is not an entry; the exclusion is ignored. Fix the title or remove it.",
                    e,
                )
        if e.title.lower() in low_excludes:
            r.add(
                "error",
                "excludes_self",
                "excludes itself, so it can never be injected. Remove its own title from excludes.",
                e,
            )
        for t in sorted(low_requires & low_excludes):
            r.add(
                "error", "requires_and_excludes", f"both requires and excludes '{t}', so it can never be injected.", e
            )
        for t in e.original_requires:
            others = titles.get(t.lower(), ())
            for other in others:
                if e.title.lower() in {x.lower() for x in other.original_requires} and other is not e:
                    low, high = sorted((e.title.lower(), other.title.lower()))
                    pair = (low, high)
                    if pair not in seen_pairs:
                        seen_pairs.add(pair)
                        r.add(
                            "error",
                            "circular_requires",
                            f"'{e.title}' and '{other.title}' require each other, so neither can be injected by keywords alone.",
                            e,
                        )
        for t in e.original_cascade_links:
            if t.lower() not in titles:
                r.add("warning", "cascade_missing", f"cascade link '{t}' is not an entry; it is ignored.", e)
        for t in e.excludes:
            target = titles.get(t.lower(), ())
            if any(x.constant or x.seed or x.bootstrap for x in target):
                r.add(
                    "warning",
                    "excludes_always_active",
                    f"excludes '{t}', which is constant, seed or bootstrap and so often active: this entry will be blocked whenever it is.",
                    e,
                )
        if not e.keys and not e.constant and not e.bootstrap and not e.guide:
            r.add(
                "warning",
                "no_keys",
                "has no keys, so only AI search or a cascade can select it. Add keys, or tag it lorebook-always.",
                e,
            )
        if not e.content:
            r.add("warning", "empty_content", "has no content after cleaning, so injecting it adds nothing.", e)
        if e.token_estimate > _LONG_ENTRY_TOKENS:
            r.add(
                "warning",
                "long_entry",
                f"is about {e.token_estimate} tokens; over {_LONG_ENTRY_TOKENS} it crowds out other entries. Consider splitting it.",
                e,
            )
        if ctx.ai_search_enabled and not e.summary and not e.guide:
            r.add("warning", "no_summary", "has no summary; AI search then judges it by its first lines only.", e)
        if e.warmup and e.warmup > 1 and e.keys and all(len(k) <= 3 for k in e.keys):
            r.add(
                "warning",
                "warmup_short_keys",
                f"needs {e.warmup} keyword hits but all its keys are 3 characters or fewer, which match by accident often.",
                e,
            )
        if e.bootstrap and not e.keys:
            r.add(
                "warning",
                "bootstrap_without_keys",
                "is bootstrap but has no keys: after the first messages of a chat nothing can select it.",
                e,
            )
        if e.seed and e.token_estimate > _LONG_SEED_TOKENS:
            r.add(
                "warning",
                "long_seed",
                f"is a seed of about {e.token_estimate} tokens; seeds over {_LONG_SEED_TOKENS} make every new-chat AI call expensive.",
                e,
            )
        effective_position = e.position or POSITION_NAMES.get(ctx.injection_position, "in_chat")
        if (e.depth is not None or e.role is not None) and effective_position != "in_chat":
            r.add(
                "warning",
                "depth_role_ignored",
                f"sets depth or role, which only apply in_chat, but its position is {effective_position}.",
                e,
            )
        if e.exclude_recursion and not e.keys:
            r.add(
                "warning",
                "exclude_recursion_without_keys",
                "sets excludeRecursion but has no keys, so the flag has no effect.",
                e,
            )
        if e.scan_depth == 0 and not ctx.ai_search_enabled and not e.constant and not e.bootstrap:
            r.add(
                "warning",
                "entry_scan_depth_zero_without_ai",
                "has scanDepth 0 (AI search only) but AI search is off, so only a cascade, recursion or a pin can inject it.",
                e,
            )
        if e.probability == 0:
            r.add("warning", "probability_zero", "has probability 0 and will never be injected.", e)
        for k in e.keys:
            if len(k) <= 2:
                r.add("info", "short_key", f"key '{k}' is 2 characters or fewer and will match inside many words.", e)
        if e.cooldown and e.constant:
            r.add("info", "cooldown_on_constant", "is constant, so its cooldown has no effect.", e)
        unresolved = [t for t in e.links if t.lower() not in titles]
        if unresolved:
            shown = ", ".join(unresolved[:5]) + (f" and {len(unresolved) - 5} more" if len(unresolved) > 5 else "")
            r.add("info", "unresolved_links", f"links to notes that are not entries: {shown}.", e)
        for w in e.warnings:
            r.add("info", w.code.lower(), w.message, e)


def _vault_wide_checks(snapshot: IndexSnapshot, ctx: HealthContext, r: HealthReport) -> None:
    for group in snapshot.by_title.values():
        by_vault: dict[str, list[Entry]] = {}
        for e in group:
            by_vault.setdefault(e.vault, []).append(e)
        for vault, copies in by_vault.items():
            if len(copies) > 1:
                paths = ", ".join(c.path for c in copies)
                r.add(
                    "error",
                    "duplicate_title",
                    f"{len(copies)} entries in vault '{vault}' share this title ({paths}); pins, cooldowns and links cannot tell them apart. Rename one.",
                    copies[0],
                )
        if len(by_vault) > 1 and snapshot.conflict_mode == "all":
            r.add(
                "info",
                "cross_vault_duplicate",
                f"is in vaults {', '.join(by_vault)}; both copies can be injected (conflict mode 'all').",
                group[0],
            )
    # Constants that count against the budget and the entry cap (outlets are outside both;
    # guides never reach the writing prompt).
    constants = [e for e in snapshot.entries if e.constant and not e.guide and not e.outlet]
    total = sum(e.token_estimate for e in constants)
    if constants and not ctx.unlimited_budget and total > ctx.max_tokens_budget:
        r.add(
            "warning",
            "constants_over_budget",
            f"Constant entries total about {total} tokens, more than the budget of {ctx.max_tokens_budget}: some constants will be cut and nothing else fits.",
        )
    if constants and not ctx.unlimited_entries and len(constants) >= ctx.max_entries:
        r.add(
            "warning",
            "constants_over_entry_cap",
            f"{len(constants)} constant entries fill the entry cap of {ctx.max_entries}: no keyword or semantic match can be injected. Raise max entries or make fewer entries constant.",
        )
    key_owners: dict[str, list[str]] = {}
    for e in snapshot.entries:
        for k in e.keys:
            key_owners.setdefault(k.lower(), []).append(e.title)
    for key, owners in sorted(key_owners.items()):
        owners = list(dict.fromkeys(owners))
        if len(owners) > 1:
            r.add(
                "info",
                "shared_keyword",
                f"the key '{key}' triggers {len(owners)} entries: {', '.join(owners[:6])}.",
                title=owners[0],
            )
    for skip in snapshot.skipped:
        if skip.code in ("SKIP_BAD_FRONTMATTER", "SKIP_READ_ERROR", "SKIP_OUTSIDE_VAULT"):
            where = f"{skip.path}" + (f", line {skip.line}" if skip.line else "")
            r.warnings.append(
                HealthFinding(
                    "warning",
                    skip.code.lower(),
                    f"{where}: {skip.reason}. The note is not indexed until this is fixed.",
                    entry=None,
                    vault=skip.vault,
                    path=skip.path,
                )
            )


def _index_warnings(snapshot: IndexSnapshot, r: HealthReport) -> None:
    for w in snapshot.warnings:
        r.add("warning", "index_warning", w)


def _entries_report(snapshot: IndexSnapshot, ctx: HealthContext, give_way: GiveWay = no_wait) -> HealthReport:
    """The findings that depend on the entries (and the notes not indexed), not on the index's
    own warnings."""
    report = HealthReport()
    _entry_checks(snapshot, ctx, report, give_way)
    give_way()
    _vault_wide_checks(snapshot, ctx, report)
    return report


def _joined(*parts: HealthReport) -> HealthReport:
    return HealthReport(
        [f for p in parts for f in p.errors], [f for p in parts for f in p.warnings], [f for p in parts for f in p.info]
    )


def run_health_check(snapshot: IndexSnapshot, ctx: HealthContext = HealthContext()) -> HealthReport:
    return HealthChecker().run(snapshot, ctx)


class HealthChecker:
    """Runs the check, keeping the entries' findings of the last run: a snapshot of the very same
    entries (the reconcile that follows a restart publishes one, differing only in its cache
    warning) reuses them instead of checking 10,000 entries again (a quarter of a second)."""

    def __init__(self) -> None:
        self._last: tuple[IndexSnapshot, HealthContext, HealthReport] | None = None

    def run(
        self, snapshot: IndexSnapshot, ctx: HealthContext = HealthContext(), give_way: GiveWay = no_wait
    ) -> HealthReport:
        """`give_way` is called between pieces of the entries' checks (`core.user_activity`)."""
        last = self._last
        if last is not None and last[1] == ctx and snapshot.same_entries_as(last[0]):
            entries = last[2]
        else:
            entries = _entries_report(snapshot, ctx, give_way)
            self._last = (snapshot, ctx, entries)
        config, warnings = HealthReport(), HealthReport()
        _config_checks(ctx, config)
        _index_warnings(snapshot, warnings)
        return _joined(config, entries, warnings)
