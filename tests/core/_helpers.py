"""Small builders shared by the core tests."""

from __future__ import annotations

from dle_desktop.core.entry import Entry, Skip
from dle_desktop.core.index import IndexSnapshot, VaultSlice, build_snapshot
from dle_desktop.core.note_parser import parse_note


def note(frontmatter: str, body: str = "# Title\nSome text.") -> str:
    """A note file: `---`, the frontmatter lines, `---`, the body."""
    return f"---\n{frontmatter.strip(chr(10))}\n---\n{body}"


def lore(frontmatter: str = "", body: str = "# Title\nSome text.", **kw) -> Entry:
    """Parse a note that carries the lorebook tag plus `frontmatter`; it must be admitted."""
    fm = "tags: [lorebook]\n" + frontmatter
    result = parse_note(kw.pop("vault", "v"), kw.pop("path", "n.md"), note(fm, body), **kw)
    assert isinstance(result, Entry), result
    return result


def parse(text: str, path: str = "n.md", vault: str = "v", **kw) -> Entry | Skip:
    return parse_note(vault, path, text, **kw)


def codes(entry: Entry) -> list[str]:
    return [w.code for w in entry.warnings]


def entry(
    title: str, vault: str = "v", path: str | None = None, fm: str = "", body: str = "", tags: str = "lorebook", **kw
) -> Entry:
    """An admitted entry titled `title` (via its H1) with extra frontmatter lines."""
    path = path or f"{title}.md"
    text = note(f"tags: [{tags}]\n" + fm, f"# {title}\n{body or title + ' text.'}")
    result = parse_note(vault, path, text, **kw)
    assert isinstance(result, Entry), result
    return result


def snapshot(*slices: tuple[str, list[Entry]], mode: str = "all", **kw) -> IndexSnapshot:
    return build_snapshot([VaultSlice(name, tuple(es)) for name, es in slices], conflict_mode=mode, **kw)


def one_vault(*entries: Entry, **kw) -> IndexSnapshot:
    return snapshot(("v", list(entries)), **kw)
