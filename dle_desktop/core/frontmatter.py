"""Split a note into frontmatter and body, and read the frontmatter with a real YAML parser.

DLE hand-parses frontmatter line by line. We keep its delimiter rules (the block must start on
the very first line, `---` closes it) but read the block as YAML, so inline `# comments`,
`|-`/`>-` block scalars, quoting and escapes work as YAML says. YAML 1.1 quirks that would
surprise a lore author are switched off: `yes`/`no`/`on`/`off` stay strings (only
true/false are booleans, as in DLE), and dates stay strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from dle_desktop.core.simple_yaml import simple_reader

try:  # the libyaml parser is ~10x faster on a large vault
    _BaseLoader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _BaseLoader = yaml.SafeLoader

_FM_RE = re.compile(r"^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)([\s\S]*)$")
_EMPTY_FM_RE = re.compile(r"^---\r?\n---[ \t]*(?:\r?\n|$)([\s\S]*)$")
#: The closing delimiter line of `_FM_RE`, found by a search; slicing then gives the same block
#: and body without the regex engine stepping through every character of the note.
_CLOSE_RE = re.compile(r"\n---[ \t]*(?:\r?\n|$)")


class _LoreLoader(_BaseLoader):  # type: ignore[misc, valid-type]  # PyYAML ships no types: its loader is Any
    pass


_LoreLoader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")]
    for ch, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
_LoreLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)

#: Most frontmatter is flat `key: value` lines and lists; this reads it with the loader's own
#: type rules several times faster than the YAML parser, and hands anything else to it.
_read_simple = simple_reader(_LoreLoader.yaml_implicit_resolvers)


@dataclass(frozen=True)
class FrontmatterError:
    line: int  # 1-based line in the note file
    message: str


@dataclass(frozen=True)
class SplitNote:
    data: dict[str, Any] | None  # None when the note has no frontmatter block
    body: str
    error: FrontmatterError | None = None
    #: 1-based file line where the body starts (for messages).
    body_line: int = 1


def _split_block(text: str) -> tuple[str, str] | None:
    """(block, body) as `_FM_RE` gives them, or None where it does not match."""
    if text.startswith("---\n"):
        start = 4
    elif text.startswith("---\r\n"):
        start = 5
    else:
        return None
    # The regex's lazy block ends at the first closing line, and leaves out a `\r` before it.
    m = _CLOSE_RE.search(text, start)
    if m is None:
        return None
    end = m.start()
    if end > start and text[end - 1] == "\r":
        end -= 1
    return text[start:end], text[m.end() :]


def split_note(text: str) -> SplitNote:
    """Separate frontmatter from body. Never raises: YAML problems come back in `error`."""
    if text.startswith("\ufeff"):
        text = text[1:]
    m = _EMPTY_FM_RE.match(text)
    if m:
        return SplitNote(data={}, body=m.group(1), body_line=3)
    parts = _split_block(text)
    if parts is None:
        return SplitNote(data=None, body=text)
    block, body = parts
    body_line = block.count("\n") + 4  # opening ---, the block lines, closing ---
    simple = _read_simple(block)
    if simple is not None:
        return SplitNote(data=simple, body=body, body_line=body_line)
    try:
        loaded = yaml.load(block, Loader=_LoreLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = (mark.line + 2) if mark is not None else 2
        problem = exc.problem or exc.context or "invalid YAML"
        return SplitNote(
            data=None,
            body=body,
            body_line=body_line,
            error=FrontmatterError(line, f"frontmatter is not valid YAML: {problem}"),
        )
    except yaml.YAMLError as exc:
        return SplitNote(
            data=None,
            body=body,
            body_line=body_line,
            error=FrontmatterError(2, f"frontmatter is not valid YAML: {exc}"),
        )
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        kind = type(loaded).__name__
        return SplitNote(
            data=None,
            body=body,
            body_line=body_line,
            error=FrontmatterError(2, f"frontmatter must be a mapping of fields, found a {kind}"),
        )
    # YAML allows non-string keys (`1: x`); a field name is always text.
    data = {str(k): v for k, v in loaded.items()}
    return SplitNote(data=data, body=body, body_line=body_line)
