"""The entry draft the librarian and the user edit together, and what it becomes on disk.

The note is built as DLE's Librarian writes it (§5.4(b) write flow): frontmatter `fileClass`
(except for stories), `type`, `status: active`, `priority`, `tags`, `keys`, `summary`, then
`# Title` and the content; through `compose_note`, so the YAML is the writer's own house style."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from dle_desktop.core.entry import Entry, TagConfig
from dle_desktop.core.health import HealthReport, run_health_check
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.note_parser import parse_note
from dle_desktop.core.pipeline.matcher import KeywordIndex, count_occurrences, normalise
from dle_desktop.vault.frontmatter_edit import compose_note

TYPES = ("character", "location", "lore", "organization", "story")
SUMMARY_MAX = 600
_DRAFT_FIELDS = ("title", "type", "priority", "tags", "keys", "summary", "content")


@dataclass(frozen=True)
class Target:
    """The note a draft updates (None on the draft: a new note)."""

    vault: str
    path: str
    base_hash: str

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Draft:
    title: str = ""
    type: str = "lore"
    priority: int = 50
    tags: tuple[str, ...] = ("lorebook",)
    keys: tuple[str, ...] = ()
    summary: str = ""
    content: str = ""
    target: Target | None = None

    def merged(self, partial: Mapping[str, Any]) -> Draft:
        """This draft with the fields of a (validated) partial draft from the AI; absent fields stay."""
        changes: dict[str, Any] = {
            k: (tuple(v) if isinstance(v, list) else v) for k, v in partial.items() if k in _DRAFT_FIELDS
        }
        return replace(self, **changes)

    @property
    def empty(self) -> bool:
        return not (self.title.strip() or self.content.strip() or self.keys or self.summary.strip())

    def to_json(self) -> dict:
        out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items() if k != "target"}
        out["target"] = self.target.to_json() if self.target else None
        return out

    @classmethod
    def from_json(cls, raw: Any) -> Draft:
        if not isinstance(raw, dict):
            return cls()
        target = raw.get("target")
        values = {k: raw[k] for k in _DRAFT_FIELDS if k in raw}
        draft = cls().merged(values)
        if isinstance(target, dict) and all(isinstance(target.get(k), str) for k in ("vault", "path", "base_hash")):
            draft = replace(draft, target=Target(target["vault"], target["path"], target["base_hash"]))
        return draft

    # -- the note ------------------------------------------------------------------------------
    def frontmatter(self, tags_config: TagConfig = TagConfig()) -> dict[str, Any]:
        tags = list(dict.fromkeys(t.strip() for t in self.tags if t.strip()))
        if tags_config.lorebook not in [t.lower() for t in tags]:
            tags.insert(0, tags_config.lorebook)
        fields: dict[str, Any] = {}
        if self.type != "story":
            fields["fileClass"] = self.type
        fields.update(
            {
                "type": self.type,
                "status": "active",
                "priority": int(self.priority),
                "tags": tags,
                "keys": [k.strip() for k in self.keys if k.strip()],
            }
        )
        if self.summary.strip():
            fields["summary"] = self.summary.strip()[:SUMMARY_MAX]
        return fields

    def body(self) -> str:
        content = self.content.strip("\n")
        return f"# {self.title.strip()}\n\n{content}\n" if content else f"# {self.title.strip()}\n"

    def note_text(self, tags_config: TagConfig = TagConfig()) -> str:
        return compose_note(self.frontmatter(tags_config), self.body())


@dataclass(frozen=True)
class DraftReport:
    tokens: int
    key_hits: tuple[tuple[str, int], ...]  # each key and how often it occurs in the recent chat
    warnings: tuple[str, ...]
    problems: tuple[str, ...] = field(default=())  # what stops a write (no title, bad frontmatter)


def analyse(
    draft: Draft,
    chat_text: str = "",
    snapshot: IndexSnapshot | None = None,
    tags_config: TagConfig = TagConfig(),
    whole_words: bool = True,
) -> DraftReport:
    """Token count, key preview and health warnings of the note the draft would write: the same
    parser, matcher and health rules the index uses, so what is shown is what the vault will see."""
    problems: list[str] = []
    if not draft.title.strip():
        problems.append("the draft has no title")
    try:
        text = draft.note_text(tags_config)
    except Exception as exc:  # noqa: BLE001 - any compose failure is a problem to show, not a crash
        return DraftReport(0, (), (), (*problems, f"the frontmatter cannot be written: {exc}"))
    parsed = parse_note("draft", "draft.md", text, tags_config)
    if not isinstance(parsed, Entry):
        return DraftReport(0, (), (), (*problems, parsed.reason))
    warnings: list[str] = []
    existing = snapshot.find(draft.title.strip()) if snapshot is not None and draft.title.strip() else None
    if existing is not None and (
        draft.target is None or (existing.vault, existing.path) != (draft.target.vault, draft.target.path)
    ):
        warnings.append(
            f"an entry titled '{existing.title}' already exists ({existing.path}); writing a new "
            "note with this title is refused"
        )
    report: HealthReport = run_health_check(IndexSnapshot([parsed]))
    warnings += [
        f.message for f in (*report.errors, *report.warnings) if f.code not in ("requires_missing", "excludes_missing")
    ]
    if len(draft.summary.strip()) > SUMMARY_MAX:
        warnings.append(f"the summary is over {SUMMARY_MAX} characters and will be cut")
    hits: list[tuple[str, int]] = []
    if parsed.keys:
        matcher = KeywordIndex([parsed])
        scan = matcher.scan(chat_text) if chat_text else None
        for key in parsed.keys:
            n = count_occurrences(scan, [normalise(key, False)], whole_words) if scan is not None else 0
            hits.append((key, n))
        if chat_text and not any(n for _, n in hits):
            warnings.append("none of the keys occurs in the recent chat")
    return DraftReport(parsed.token_estimate, tuple(hits), tuple(warnings), tuple(problems))


def draft_from_entry(entry: Entry, base_hash: str) -> Draft:
    """An existing entry loaded into the editor (an update of that note)."""
    t = entry.custom_fields.get("type") if isinstance(entry.custom_fields.get("type"), str) else None
    return Draft(
        title=entry.title,
        type=t if t in TYPES else "lore",
        priority=int(entry.priority),
        tags=tuple(entry.tags),
        keys=tuple(entry.keys),
        summary=entry.summary,
        content=entry.content,
        target=Target(entry.vault, entry.path, base_hash),
    )
