"""The librarian's tools, executed locally (dle-behaviour §5.4(b) table). All read the index
snapshot; only `flag_entry_update` writes, and only a gap record, never a note.

A bad call (unknown tool, arguments that are not an object, a path outside the vault, an entry
that does not exist) is answered with a tool error the model can read and correct; it never
raises and never writes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dle_desktop.ai.types import ToolSpec
from dle_desktop.core.entry import Entry
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.errors import DleError
from dle_desktop.librarian.draft import Draft, draft_from_entry
from dle_desktop.librarian.gaps import GapStore
from dle_desktop.vault.filenames import check_note_path

SNIPPET = 200
PREVIEW = 2000
FULL = 16000
COMPARE = 6000
_PATHLIKE = re.compile(r"[/\\]|\.md$|^\.\.?$", re.I)


def _s(description: str, **extra: Any) -> dict:
    return {"type": "string", "description": description, **extra}


def _n(description: str) -> dict:
    return {"type": "integer", "description": description}


def _obj(props: dict, required: Sequence[str] = ()) -> dict:
    return {"type": "object", "properties": props, "required": list(required)}


_TITLE = _s("the entry's title (or its vault-relative note path)")
_VAULT = _s("which vault, when several have the title")
SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search_vault",
        "BM25 search over the vault: titles, types, priorities, scores, keys and a snippet.",
        _obj({"query": _s("what to look for"), "top_k": _n("how many results (default 10, at most 20)")}, ["query"]),
    ),
    ToolSpec(
        "get_entry",
        "One entry's metadata and a ~2000-character preview.",
        _obj({"title": _TITLE, "vault_source": _VAULT}, ["title"]),
    ),
    ToolSpec(
        "get_full_content",
        "One entry's full content (up to 16000 characters); it is loaded into the "
        "draft editor as an update of that entry.",
        _obj({"title": _TITLE, "vault_source": _VAULT}, ["title"]),
    ),
    ToolSpec(
        "find_similar",
        "Entries that may duplicate a proposed entry.",
        _obj(
            {"query": _s("title or description"), "threshold": {"type": "number", "description": "0..1 (default 0.5)"}},
            ["query"],
        ),
    ),
    ToolSpec(
        "list_flags",
        "The gap records (lore the story asked for and the vault lacked).",
        _obj({"status": _s("pending or written (default: all)")}),
    ),
    ToolSpec("get_links", "The entries an entry links to.", _obj({"title": _TITLE}, ["title"])),
    ToolSpec("get_backlinks", "The entries that link to an entry.", _obj({"title": _TITLE}, ["title"])),
    ToolSpec(
        "list_entries",
        "Titles, types and priorities, optionally filtered.",
        _obj({"type": _s("only this type"), "tag": _s("only entries with a tag containing this")}),
    ),
    ToolSpec("get_recent_chat", "The last chat lines.", _obj({"count": _n("how many (default 10, at most 50)")})),
    ToolSpec(
        "flag_entry_update",
        "Record that an entry needs an update (a gap record; nothing is written).",
        _obj(
            {
                "title": _TITLE,
                "reason": _s("what is out of date or missing"),
                "fields": {"type": "array", "items": {"type": "string"}, "description": "fields to change"},
                "vault_source": _VAULT,
            },
            ["title", "reason"],
        ),
    ),
    ToolSpec(
        "compare_entry_to_chat",
        "An entry and the recent chat side by side, to spot what is stale.",
        _obj({"title": _TITLE, "chat_count": _n("chat lines (default 15)"), "vault_source": _VAULT}, ["title"]),
    ),
    ToolSpec(
        "get_writing_guide",
        "A writing guide entry of this vault (tagged lorebook-guide).",
        _obj({"name": _s("the guide's name, kebab-case")}, ["name"]),
    ),
)
NAMES = frozenset(s.name for s in SPECS)


@dataclass(frozen=True)
class ToolResult:
    text: str
    error: bool = False
    draft: Draft | None = None  # get_full_content loads the entry into the editor


@dataclass
class ToolContext:
    snapshot: Callable[[], IndexSnapshot | None]
    gaps: GapStore
    chat_lines: Callable[[], Sequence[str]] = lambda: ()
    base_hash: Callable[[Entry], str] = field(default=lambda e: e.content_hash)


def _kebab(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def specs_for(snapshot: IndexSnapshot | None) -> tuple[ToolSpec, ...]:
    """get_writing_guide is offered only when the vault has guides (as DLE)."""
    has_guides = snapshot is not None and any(e.guide for e in snapshot.entries)
    return SPECS if has_guides else tuple(s for s in SPECS if s.name != "get_writing_guide")


class ToolError(Exception):
    pass


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def _int(args: dict, name: str, default: int, lo: int, hi: int) -> int:
    value = args.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if value is None:
            return default
        raise ToolError(f"'{name}' must be a number")
    return max(lo, min(hi, int(value)))


def _text(args: dict, name: str, required: bool = True) -> str:
    value = args.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise ToolError(f"'{name}' is required and must be text")
    return value.strip()


def _type_of(e: Entry) -> str:
    t = e.custom_fields.get("type")
    return t if isinstance(t, str) else ""


def _meta(e: Entry) -> dict:
    return {
        "title": e.title,
        "type": _type_of(e),
        "priority": e.priority,
        "vaultSource": e.vault,
        "path": e.path,
        "keys": list(e.keys),
        "tags": list(e.tags),
        "summary": e.summary,
    }


def _entry(snap: IndexSnapshot, args: dict) -> Entry:
    ref = _text(args, "title")
    vault = _text(args, "vault_source", required=False)
    if _PATHLIKE.search(ref) or ref.startswith(("~", "..")):
        try:
            rel = check_note_path(ref if ref.lower().endswith(".md") else ref + ".md")
        except DleError as exc:
            raise ToolError(f"{exc}; only notes inside the vault can be read") from None
        for e in snap.entries:
            if e.path == rel and (not vault or e.vault == vault):
                return e
        raise ToolError(f"no entry at {rel!r} in the vault")
    hits = snap.by_title.get(ref.lower(), ())
    if vault:
        hits = tuple(e for e in hits if e.vault == vault)
    if not hits:
        raise ToolError(f"no entry titled {ref!r}; use search_vault or list_entries to find the right title")
    return hits[0]


def run_tool(ctx: ToolContext, name: str, args: dict[str, Any] | None) -> ToolResult:
    if name not in NAMES:
        return ToolResult(f"error: unknown tool {name!r}; the tools are: {', '.join(sorted(NAMES))}", error=True)
    if not isinstance(args, dict):
        return ToolResult(f"error: the arguments of {name} must be a JSON object", error=True)
    snap = ctx.snapshot()
    if snap is None:
        return ToolResult("error: the vault is still being indexed; try again in a moment", error=True)
    try:
        return _TOOLS[name](ctx, snap, args)
    except ToolError as exc:
        return ToolResult(f"error: {exc}", error=True)


def _search_vault(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    query = _text(args, "query")
    top_k = _int(args, "top_k", 10, 1, 20)
    hits = snap.bm25.search(query, top_k=top_k, min_score=0.3)
    if not hits:
        ctx.gaps.record_search_miss(query, "the librarian's search found nothing")
        return ToolResult(f"no entries match {query!r} (recorded as a gap)")
    out = []
    for uid, score in hits:
        e = snap.by_uid.get(uid)
        if e is not None:
            out.append(
                {
                    **{k: v for k, v in _meta(e).items() if k not in ("tags", "summary", "path")},
                    "score": round(score, 3),
                    "snippet": e.content[:SNIPPET],
                }
            )
    return ToolResult(_dump(out))


def _get_entry(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    e = _entry(snap, args)
    return ToolResult(_dump({**_meta(e), "links": list(e.resolved_links), "preview": e.content[:PREVIEW]}))


def _get_full_content(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    e = _entry(snap, args)
    return ToolResult(_dump({**_meta(e), "content": e.content[:FULL]}), draft=draft_from_entry(e, ctx.base_hash(e)))


def _find_similar(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    query = _text(args, "query")
    threshold = args.get("threshold", 0.5)
    threshold = float(threshold) if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) else 0.5
    hits = snap.bm25.search(query, top_k=20, min_score=0.0)
    if not hits:
        return ToolResult("no similar entries")
    best = hits[0][1] or 1.0
    out = [
        {"title": snap.by_uid[uid].title, "similarity": round(score / best, 2)}
        for uid, score in hits
        if uid in snap.by_uid and score / best >= threshold
    ]
    return ToolResult(_dump(out[:10]))


def _list_flags(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    status = _text(args, "status", required=False) or None
    gaps = ctx.gaps.list(status=status)
    return ToolResult(
        _dump(
            [
                {
                    k: getattr(g, k)
                    for k in (
                        "id",
                        "type",
                        "subtype",
                        "query",
                        "reason",
                        "urgency",
                        "frequency",
                        "status",
                        "entry_title",
                    )
                }
                for g in gaps[:50]
            ]
        )
    )


def _get_links(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    return ToolResult(_dump(list(_entry(snap, args).resolved_links)))


def _get_backlinks(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    e = _entry(snap, args)
    return ToolResult(_dump(list(snap.backlinks.get(e.title, ()))))


def _list_entries(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    want_type = _text(args, "type", required=False).lower()
    tag = _text(args, "tag", required=False).lower()
    out = [
        {"title": e.title, "type": _type_of(e), "priority": e.priority}
        for e in snap.entries
        if (not want_type or _type_of(e).lower() == want_type) and (not tag or any(tag in t for t in e.tags))
    ]
    return ToolResult(_dump(out[:300]) + (f"\n({len(out) - 300} more not shown)" if len(out) > 300 else ""))


def _get_recent_chat(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    count = _int(args, "count", 10, 1, 50)
    lines = list(ctx.chat_lines())[-count:]
    return ToolResult("\n".join(lines) if lines else "(no chat loaded in this session)")


def _flag_entry_update(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    e = _entry(snap, args)
    reason = _text(args, "reason")
    fields = args.get("fields")
    if isinstance(fields, list) and fields:
        reason += f" (fields: {', '.join(str(f) for f in fields)})"
    gap = ctx.gaps.flag(e.title, reason, subtype="update", entry_title=e.title)
    return ToolResult(f"flagged {e.title!r} for an update (gap {gap.id}, seen {gap.frequency}×)")


def _compare_entry_to_chat(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    e = _entry(snap, args)
    count = _int(args, "chat_count", 15, 1, 50)
    chat = "\n".join(list(ctx.chat_lines())[-count:]) or "(no chat loaded in this session)"
    half = COMPARE // 2
    return ToolResult(f"## Entry: {e.title}\n{e.content[:half]}\n\n## Recent chat\n{chat[-half:]}")


def _get_writing_guide(ctx: ToolContext, snap: IndexSnapshot, args: dict) -> ToolResult:
    name = _kebab(_text(args, "name"))
    guides = {_kebab(e.title): e for e in snap.entries if e.guide}
    if name not in guides:
        raise ToolError(f"no writing guide {name!r}; the guides are: {', '.join(sorted(guides)) or 'none'}")
    return ToolResult(guides[name].content[:FULL])


_TOOLS = {
    "search_vault": _search_vault,
    "get_entry": _get_entry,
    "get_full_content": _get_full_content,
    "find_similar": _find_similar,
    "list_flags": _list_flags,
    "get_links": _get_links,
    "get_backlinks": _get_backlinks,
    "list_entries": _list_entries,
    "get_recent_chat": _get_recent_chat,
    "flag_entry_update": _flag_entry_update,
    "compare_entry_to_chat": _compare_entry_to_chat,
    "get_writing_guide": _get_writing_guide,
}
