"""A note's text cut into pieces that join back byte for byte (BOM, frontmatter, body), and the
exact character span and style of every top-level frontmatter field, read with ruamel.yaml's
event parser. Pure: no I/O. Used by frontmatter_edit.py."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

from dle_desktop.errors import FrontmatterEditError

BOM = "\ufeff"

# The same delimiter rules as core/frontmatter.py, with every piece captured so it can be kept.
_FM_RE = re.compile(r"^---(\r?\n)([\s\S]*?)(\r?\n)(---[ \t]*(?:\r?\n|$))([\s\S]*)$")
_EMPTY_FM_RE = re.compile(r"^---(\r?\n)(---[ \t]*(?:\r?\n|$))([\s\S]*)$")


@dataclass(frozen=True)
class NoteParts:
    """A note's text in pieces that join back to it byte for byte."""

    bom: str
    #: Everything from the opening `---` to the end of the closing `---` line, verbatim ("" if none).
    frontmatter: str
    opening_nl: str  # the line break after the opening `---`
    block: str  # the YAML between the delimiters
    closing_nl: str  # the line break before the closing `---` ("" for an empty `---`/`---` pair)
    closing: str  # the closing `---` line, with its line break if it has one
    body: str

    @property
    def has_frontmatter(self) -> bool:
        return bool(self.frontmatter)

    def with_block(self, block: str) -> str:
        if block == "":
            return f"{self.bom}---{self.opening_nl}{self.closing}{self.body}"
        return f"{self.bom}---{self.opening_nl}{block}{self.closing_nl or self.opening_nl}{self.closing}{self.body}"

    def with_body(self, body: str) -> str:
        return self.bom + self.frontmatter + body


def split_parts(text: str) -> NoteParts:
    bom = BOM if text.startswith(BOM) else ""
    rest = text[len(bom) :]
    m = _EMPTY_FM_RE.match(rest)
    if m:
        return NoteParts(bom, rest[: m.start(3)], m.group(1), "", "", m.group(2), m.group(3))
    m = _FM_RE.match(rest)
    if m:
        return NoteParts(bom, rest[: m.start(5)], m.group(1), m.group(2), m.group(3), m.group(4), m.group(5))
    return NoteParts(bom, "", "", "", "", "", rest)


# --------------------------------------------------------------------------- reading the block


@dataclass
class Field:
    name: str
    key_start: int
    key_end: int
    key_col: int
    colon_end: int
    value_start: int
    value_end: int  # exclusive, trailing whitespace trimmed
    kind: str  # scalar | empty | alias | flow-seq | block-seq | flow-map | block-map
    scalar_style: str | None = None
    item_styles: list[str | None] = field(default_factory=list)
    dash_col: int | None = None
    item_col: int | None = None
    child_col: int | None = None


class _Node:
    def __init__(self) -> None:
        self.end = -1
        self.kind = "scalar"
        self.style: str | None = None
        self.start = -1
        self.empty = False
        self.item_styles: list[str | None] = []
        self.dash_col: int | None = None
        self.item_col: int | None = None
        self.child_col: int | None = None


def _read_node(events: list[Any], i: int) -> tuple[int, _Node]:
    """Consume one node starting at events[i]; the node's end is the furthest exact end of what
    it holds (block collections' end events point at the next key, so they are not used)."""
    ev = events[i]
    node = _Node()
    node.start = ev.start_mark.index
    if isinstance(ev, ScalarEvent):
        node.style = ev.style
        node.end = ev.end_mark.index
        node.empty = ev.value == "" and ev.style is None and ev.start_mark.index == ev.end_mark.index
        node.kind = "empty" if node.empty else "scalar"
        return i + 1, node
    if isinstance(ev, AliasEvent):
        node.kind, node.end = "alias", ev.end_mark.index
        return i + 1, node
    if isinstance(ev, (SequenceStartEvent, MappingStartEvent)):
        is_seq = isinstance(ev, SequenceStartEvent)
        flow = bool(ev.flow_style)
        node.kind = ("flow-" if flow else "block-") + ("seq" if is_seq else "map")
        if is_seq and not flow:
            node.dash_col = ev.start_mark.column
        if not is_seq and not flow:
            node.child_col = ev.start_mark.column
        i += 1
        end_type = SequenceEndEvent if is_seq else MappingEndEvent
        first = True
        while not isinstance(events[i], end_type):
            if is_seq and isinstance(events[i], ScalarEvent):
                node.item_styles.append(events[i].style)
            if is_seq and first and not flow:
                node.item_col = events[i].start_mark.column
            first = False
            i, child = _read_node(events, i)
            node.end = max(node.end, child.end)
        if flow:
            node.end = events[i].end_mark.index
        return i + 1, node
    raise FrontmatterEditError(f"unexpected YAML structure ({type(ev).__name__}) in the frontmatter")


def _yaml_problem(exc: Exception) -> str:
    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
        return f"{exc.problem or exc.context or 'invalid YAML'}{where}"
    return str(exc) or type(exc).__name__


def scan_fields(block: str) -> list[Field]:
    try:
        events = list(YAML(typ="rt").parse(block))
    except (YAMLError, ValueError) as exc:
        raise FrontmatterEditError(
            f"the frontmatter is not valid YAML: {_yaml_problem(exc)}; nothing written"
        ) from None
    i = 0
    while i < len(events) and isinstance(events[i], (StreamStartEvent, DocumentStartEvent)):
        i += 1
    if i >= len(events) or isinstance(events[i], (StreamEndEvent, DocumentEndEvent)):
        return []  # only comments (or nothing) between the delimiters
    root = events[i]
    if not isinstance(root, MappingStartEvent):
        raise FrontmatterEditError("the frontmatter is not a list of `name: value` fields; nothing written")
    if root.flow_style:
        raise FrontmatterEditError(
            "the frontmatter is one `{...}` flow mapping; its fields cannot be changed one "
            "by one without rewriting it: edit this note by hand"
        )
    i += 1
    fields: list[Field] = []
    while not isinstance(events[i], MappingEndEvent):
        key = events[i]
        if not isinstance(key, ScalarEvent):
            raise FrontmatterEditError("the frontmatter has a complex (non-text) field name; edit this note by hand")
        colon = re.compile(r"[ \t]*:").match(block, key.end_mark.index)
        if colon is None:
            raise FrontmatterEditError(f"cannot find the ':' after the field {key.value!r}; edit this note by hand")
        i, node = _read_node(events, i + 1)
        if node.kind == "empty":
            end = colon.end()
        else:
            end = node.end
            while end > node.start and block[end - 1] in " \t\r\n":
                end -= 1
        fields.append(
            Field(
                name=str(key.value),
                key_start=key.start_mark.index,
                key_end=key.end_mark.index,
                key_col=key.start_mark.column,
                colon_end=colon.end(),
                value_start=node.start,
                value_end=end,
                kind=node.kind,
                scalar_style=node.style,
                item_styles=node.item_styles,
                dash_col=node.dash_col,
                item_col=node.item_col,
                child_col=node.child_col,
            )
        )
    return fields
