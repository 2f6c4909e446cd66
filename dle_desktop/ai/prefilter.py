"""The hierarchical pre-filter's pure parts (§4.5): on a large candidate set, a cheap first call
picks categories, and only their entries go into the full manifest."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dle_desktop.core.entry import Entry, TagConfig

UNCATEGORIZED = "Uncategorized"
MIN_SELECTABLE = 40
MIN_CLUSTERS = 4
SAMPLE_TITLES = 5
#: DLE's infrastructure tags; `lorebook-constant` is an alias it also ignores.
DEFAULT_INFRA_TAGS = frozenset(
    {
        "lorebook",
        "lorebook-always",
        "lorebook-seed",
        "lorebook-bootstrap",
        "lorebook-guide",
        "lorebook-never",
        "lorebook-constant",
    }
)


def infra_tags_for(tags: TagConfig) -> frozenset[str]:
    """The configured marker tags plus DLE's defaults, lowercased."""
    configured = {tags.lorebook, tags.constant, tags.never, tags.seed, tags.bootstrap, tags.guide}
    return frozenset(t.lower() for t in configured) | DEFAULT_INFRA_TAGS


def category_of(entry: Entry, infra_tags: Iterable[str] = DEFAULT_INFRA_TAGS) -> str:
    """The first tag that is not a marker tag; else the top folder; else Uncategorized."""
    infra = {t.lower() for t in infra_tags}
    tag = next((t for t in entry.tags if t.strip() and t.lower() not in infra), None)
    if tag:
        return tag.strip()
    if "/" in entry.path:
        return entry.path.split("/", 1)[0]
    return UNCATEGORIZED


def cluster_entries(entries: Sequence[Entry], infra_tags: Iterable[str] = DEFAULT_INFRA_TAGS) -> dict[str, list[Entry]]:
    """Entries by category, in entry order. Categories differing only in case are one, under
    the spelling seen first (the AI's answer is compared case-insensitively anyway)."""
    infra = frozenset(t.lower() for t in infra_tags)
    names: dict[str, str] = {}
    clusters: dict[str, list[Entry]] = {}
    for e in entries:
        cat = category_of(e, infra)
        name = names.setdefault(cat.lower(), cat)
        clusters.setdefault(name, []).append(e)
    return clusters


def should_prefilter(selectable: Sequence[Entry], clusters: dict[str, list[Entry]]) -> bool:
    return len(selectable) >= MIN_SELECTABLE and len(clusters) >= MIN_CLUSTERS


def category_manifest(clusters: dict[str, list[Entry]]) -> str:
    """One line per category, sorted by name so the text (and a provider's prompt cache) stays
    the same while the candidates do."""
    lines = []
    for name in sorted(clusters, key=lambda n: (n.casefold(), n)):
        entries = clusters[name]
        titles = ", ".join(e.title for e in entries[:SAMPLE_TITLES])
        more = len(entries) - SAMPLE_TITLES
        noun = "entry" if len(entries) == 1 else "entries"
        lines.append(f"[{name}] ({len(entries)} {noun}): {titles}" + (f" (+{more} more)" if more > 0 else ""))
    return "\n".join(lines)


def category_user_message(categories: str, chat_context: str) -> str:
    return f"## Categories\n{categories}\n\n## Recent Chat\n{chat_context}"


def apply_category_selection(
    selectable: Sequence[Entry],
    clusters: dict[str, list[Entry]],
    chosen: Iterable[str],
    chat_text: str,
    forced: Sequence[Entry] = (),
    aggressiveness: float = 0.8,
) -> list[Entry] | None:
    """The candidates that go on to the full AI search: entries of the chosen categories, plus
    entries whose primary key appears in the chat (case-insensitive substring: the category
    call must not lose what the keywords already found), plus the forced entries. None (use
    every candidate) when fewer than `selectable × (1 − aggressiveness)` would remain, since an
    answer that discards that much is more likely wrong than right."""
    wanted = {c.strip().lower() for c in chosen if isinstance(c, str) and c.strip()}
    category = {e.uid: name for name, entries in clusters.items() for e in entries}
    chat = chat_text.lower()
    kept = []
    for e in selectable:
        in_chosen = category.get(e.uid, "").lower() in wanted
        if in_chosen or any(k.strip() and k.strip().lower() in chat for k in e.keys):
            kept.append(e)
    share = min(1.0, max(0.0, aggressiveness))
    if len(kept) < len(selectable) * (1 - share):
        return None
    seen = {e.uid for e in kept}
    for e in forced:
        if e.uid not in seen:
            seen.add(e.uid)
            kept.append(e)
    return kept
