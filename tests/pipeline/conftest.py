"""Helpers for the retrieval-pipeline tests: notes are written as text, parsed with the real
parser and indexed with the real snapshot builder, so the tests exercise what users get."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:  # `pytest` run without `python -m`
    sys.path.insert(0, str(_ROOT))

from dle_desktop.core.entry import Entry  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.fields import DEFAULT_DEFINITIONS, FieldDefinitions, parse_field_definitions  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.index import IndexSnapshot, VaultSlice, build_snapshot  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.note_parser import parse_note  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.chat import ChatMessage  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.config import MatchConfig  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.run import GenerationResult, run_generation  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.state import ChatState  # noqa: E402 - needs the sys.path setup above

USER = "Anon"
CHAR = "Bot"


def note(
    title: str,
    keys: Sequence[str] = (),
    body: str | None = None,
    *,
    folder: str | None = None,
    tags: Sequence[str] = ("lorebook",),
    **fields,
) -> tuple[str, str]:
    """(vault path, note text). Extra frontmatter fields are written as JSON (valid YAML)."""
    lines = ["---", "tags: " + json.dumps(list(tags))]
    if keys:
        lines.append("keys: " + json.dumps(list(keys), ensure_ascii=False))
    for name, value in fields.items():
        lines.append(f"{name}: {json.dumps(value, ensure_ascii=False)}")
    lines.append("---")
    lines.append(f"# {title}")
    lines.append(body if body is not None else f"Lore about {title}.")
    path = f"{folder}/{title}.md" if folder else f"{title}.md"
    return path, "\n".join(lines) + "\n"


def parse(
    path_text: tuple[str, str], vault: str = "v", field_definitions: FieldDefinitions = DEFAULT_DEFINITIONS
) -> Entry:
    e = parse_note(vault, path_text[0], path_text[1], field_definitions=field_definitions)
    assert isinstance(e, Entry), e
    return e


def snapshot(
    *notes: tuple[str, str], vault: str = "v", field_definitions: FieldDefinitions = DEFAULT_DEFINITIONS
) -> IndexSnapshot:
    entries = tuple(parse(n, vault, field_definitions) for n in notes)
    return build_snapshot([VaultSlice(vault, entries)], field_definitions=field_definitions)


def multi_snapshot(vaults: dict[str, Iterable[tuple[str, str]]]) -> IndexSnapshot:
    slices = [VaultSlice(name, tuple(parse(n, name) for n in notes)) for name, notes in vaults.items()]
    return build_snapshot(slices)


def fields_yaml(*fields: dict) -> FieldDefinitions:
    """Field definitions in the layout DLE writes (`fields:` then items)."""
    return parse_field_definitions(json.dumps({"fields": list(fields)}))


def msg(mes: str, name: str | None = None, *, user: bool = True, **kw) -> ChatMessage:
    return ChatMessage(name=name if name is not None else (USER if user else CHAR), mes=mes, is_user=user, **kw)


def chat(*texts: str, pad: int = 0) -> list[ChatMessage]:
    """Messages alternating user / character, preceded by `pad` neutral messages (so the
    chat is past the new-chat threshold when needed)."""
    out = [msg("filler line", user=(i % 2 == 0)) for i in range(pad)]
    for t in texts:
        out.append(msg(t, user=(len(out) % 2 == 0)))
    return out


def run(
    snap: IndexSnapshot,
    messages: Sequence[ChatMessage],
    state: ChatState | None = None,
    cfg: MatchConfig | None = None,
    **kw,
) -> tuple[GenerationResult, ChatState]:
    return run_generation(snap, messages, state if state is not None else ChatState(), cfg or MatchConfig(), **kw)


def titles(result: GenerationResult) -> list[str]:
    return [i.entry.title for i in result.injected]


def verdicts(result: GenerationResult, title: str, stage: str | None = None, outcome: str | None = None):
    return [
        v
        for v in result.verdicts
        if v.title == title and (stage is None or v.stage == stage) and (outcome is None or v.outcome == outcome)
    ]


def matched_by(result: GenerationResult, title: str) -> str:
    for i in result.injected:
        if i.entry.title == title:
            return i.matched_by
    raise AssertionError(f"{title} not injected: {titles(result)}")


class FixedRng:
    """random() returns the given values in order (then repeats the last); records the calls."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)
        self.calls = 0

    def random(self) -> float:
        v = self.values[min(self.calls, len(self.values) - 1)]
        self.calls += 1
        return v


#: Default config but with strip-dedup off, so state-carrying tests isolate one mechanism.
NO_STRIP = MatchConfig(strip_duplicate_injections=False)


@pytest.fixture
def no_strip() -> MatchConfig:
    return NO_STRIP
