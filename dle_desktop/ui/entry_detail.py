"""Renders one entry as HTML for the detail pane: every field, links both ways, the cleaned text."""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from dle_desktop.core.entry import Entry
from dle_desktop.core.index import IndexSnapshot

_CSS = """
<style>
 h2 { margin: 0 0 2px 0; }
 .path { color: #666; }
 .badge { background: #2f4858; color: white; padding: 1px 5px; border-radius: 3px; }
 .warn { color: #a15c00; }
 .dead { color: #999; text-decoration: line-through; }
 table.fields td { padding: 1px 8px 1px 0; vertical-align: top; }
 td.k { color: #555; white-space: nowrap; }
 pre.content { white-space: pre-wrap; font-family: sans-serif; background: #f6f6f4; padding: 6px; }
</style>
"""


def entry_link(e: Entry) -> str:
    return f"entry:{quote(e.uid, safe='')}"


def _titles(titles, snapshot: IndexSnapshot, kept: tuple[str, ...] | None = None) -> str:
    out = []
    for t in titles:
        target = snapshot.find(t)
        if target is not None and (kept is None or t in kept):
            out.append(f'<a href="{entry_link(target)}">{escape(t)}</a>')
        else:
            out.append(f'<span class="dead" title="not an entry: ignored">{escape(t)}</span>')
    return ", ".join(out) or "—"


def render_entry(e: Entry, snapshot: IndexSnapshot) -> str:
    rows: list[tuple[str, str]] = []

    def row(label: str, value) -> None:
        rows.append((label, value if isinstance(value, str) else escape(str(value))))

    row("Keys", escape(", ".join(e.keys)) or "<i>none</i>")
    if e.refine_keys:
        row("Refine keys", escape(", ".join(e.refine_keys)))
    row("Priority", f"{e.priority:g} <span class='path'>(lower runs first)</span>")
    row("Tokens", f"~{e.token_estimate}")
    if e.original_requires:
        row("Requires", _titles(e.original_requires, snapshot, e.requires))
    if e.original_excludes:
        row("Excludes", _titles(e.original_excludes, snapshot, e.excludes))
    if e.original_cascade_links:
        row("Cascade", _titles(e.original_cascade_links, snapshot, e.cascade_links))
    placement = ", ".join(
        f"{k} {v}" for k, v in (("position", e.position), ("depth", e.depth), ("role", e.role)) if v is not None
    )
    if placement:
        row("Placement", escape(placement))
    timing = ", ".join(
        f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
        for k, v in (("scan depth", e.scan_depth), ("warmup", e.warmup), ("cooldown", e.cooldown), ("probability", e.probability))
        if v is not None
    )
    if timing:
        row("Timing", escape(timing))
    if e.exclude_recursion:
        row("Recursion", "its text does not trigger other entries")
    if e.outlet:
        row("Outlet", escape(e.outlet))
    if not e.graph:
        row("Graph", "hidden")
    if e.tags:
        row("Tags", escape(", ".join(e.tags)))
    for name, value in e.custom_fields.items():
        shown = ", ".join(map(str, value)) if isinstance(value, tuple) else str(value)
        row(name, escape(shown))
    if e.summary:
        row("Summary", escape(e.summary).replace("\n", "<br>"))
    row("Links", _titles(e.links, snapshot) if e.links else "—")
    back = snapshot.backlinks.get(e.title, ())
    row("Linked from", _titles(back, snapshot) if back else "—")
    row("Hash", f"<span class='path'>{escape(e.content_hash)}</span>")

    badges = " ".join(f"<span class='badge'>{b}</span>" for b, on in (
        ("constant", e.constant), ("seed", e.seed), ("bootstrap", e.bootstrap), ("guide", e.guide)) if on)
    warnings = "".join(f"<li class='warn'>{escape(w.code)}: {escape(w.message)}</li>" for w in e.warnings)
    table = "".join(f"<tr><td class='k'>{escape(k)}</td><td>{v}</td></tr>" for k, v in rows)
    return (
        f"{_CSS}<h2>{escape(e.title)}</h2>"
        f"<div class='path'>{escape(e.vault)} · {escape(e.path)}</div>"
        f"<p>{badges}</p>"
        f"<table class='fields'>{table}</table>"
        + (f"<p><b>Parser notes</b></p><ul>{warnings}</ul>" if warnings else "")
        + f"<p><b>Injected text</b></p><pre class='content'>{escape(e.content) or '<i>(empty)</i>'}</pre>"
    )
