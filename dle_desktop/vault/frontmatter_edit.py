"""Change frontmatter fields of a note's text, leaving every other byte as it was. Pure: no I/O.

A round-trip dump of the whole block (even ruamel.yaml's) still re-flows what it did not need to
touch: it re-indents lists, re-spaces flow sequences, moves comments. So ruamel.yaml is used to
*read* the block (its event parser gives the exact character span of every top-level field) and
to *render* only the changed field, in the style that field had (flow or block, its list
indentation, its quoting); the new text is spliced over that field's span. Everything outside the
span (comments, other fields, blank lines, line endings, the body, a BOM) is the original text.

Every edit is then re-read with the app's own parser (core/frontmatter.py): the changed fields
must read back as the values asked for, every other field as it was, the body unchanged. A
change that fails that check (an anchor another field uses, a string YAML 1.1 would read as a
number) is rendered again double-quoted, and refused with FrontmatterEditError if still wrong.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    FoldedScalarString,
    LiteralScalarString,
    SingleQuotedScalarString,
)

from dle_desktop.core.frontmatter import split_note
from dle_desktop.core.note_parser import CANONICAL_FIELDS
from dle_desktop.errors import FrontmatterEditError
from dle_desktop.vault.frontmatter_scan import BOM, Field, NoteParts, scan_fields, split_parts

__all__ = ["BOM", "REMOVE", "NoteParts", "compose_note", "edit_fields", "match_newlines", "replace_body", "split_parts"]

_COMMENT_TAIL = re.compile(r"^[ \t]+(#.*)$")


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


#: The value that removes a field: `edit_fields(text, {"old_field": REMOVE})`.
REMOVE = _Remove()


def replace_body(text: str, body: str) -> str:
    """`text` with its body (everything after the frontmatter) replaced; the BOM and frontmatter
    are kept byte for byte. A note written with CRLF throughout gets the new body in CRLF too."""
    parts = split_parts(text)
    return parts.with_body(match_newlines(body, text))


def match_newlines(new: str, like: str) -> str:
    """`new` with lone LFs made CRLF when `like` uses CRLF and nothing else (editors hand us LF)."""
    crlf = like.count("\r\n")
    if crlf and crlf == like.count("\n"):
        return re.sub(r"(?<!\r)\n", "\r\n", new)
    return new


# --------------------------------------------------------------------------- rendering a field


@dataclass(frozen=True)
class _ListStyle:
    flow: bool = False
    dash_offset: int = 2  # columns from the key to the '-'
    item_offset: int = 4  # columns from the key to the item's text
    quote: str | None = None  # the quoting most items use: None (plain), "'" or '"'


def _majority_quote(styles: list[str | None]) -> str | None:
    quoted = [s for s in styles if s in ("'", '"')]
    if not quoted or len(quoted) * 2 < len(styles):
        return None
    return max(("'", '"'), key=quoted.count)


def _list_style(f: Field) -> _ListStyle:
    if f.kind == "flow-seq":
        return _ListStyle(flow=True, quote=_majority_quote(f.item_styles))
    dash = (f.dash_col or 0) - f.key_col
    item = (f.item_col if f.item_col is not None else (f.dash_col or 0) + 2) - f.key_col
    return _ListStyle(False, max(dash, 0), max(item, dash + 2), _majority_quote(f.item_styles))


def _note_list_style(fields: list[Field]) -> _ListStyle:
    """How this note writes lists, for a field that was not a list before: like its first list."""
    lists = [f for f in fields if f.kind in ("flow-seq", "block-seq")]
    return _list_style(lists[0]) if lists else _ListStyle()


def _styled_string(value: str, style: str | None) -> Any:
    if style == '"':
        return DoubleQuotedScalarString(value)
    if style == "'":
        return SingleQuotedScalarString(value) if "\n" not in value else DoubleQuotedScalarString(value)
    if style == "|":
        return LiteralScalarString(value)
    if style == ">":
        return FoldedScalarString(value)
    if "\n" in value:
        return LiteralScalarString(value)
    return value


def _to_yaml(value: Any, style: str | None, lists: _ListStyle, flow_map: bool, force_quotes: bool) -> Any:
    if isinstance(value, str):
        return DoubleQuotedScalarString(value) if force_quotes else _styled_string(value, style)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FrontmatterEditError(f"{value!r} is not a number a note can hold")
        return value
    if isinstance(value, (list, tuple)):
        seq = CommentedSeq(_to_yaml(v, lists.quote, lists, False, force_quotes) for v in value)
        if lists.flow:
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, Mapping):
        out = CommentedMap((str(k), _to_yaml(v, None, lists, False, force_quotes)) for k, v in value.items())
        if flow_map:
            out.fa.set_flow_style()
        return out
    raise FrontmatterEditError(
        f"a frontmatter value must be text, a number, true/false, empty, a list or a "
        f"mapping, not {type(value).__name__}"
    )


#: A string ruamel.yaml writes as a plain scalar in block context, for certain: a letter first,
#: then letters, digits, spaces and a few marks (no `:`, `#`, quote or bracket that could make it
#: quote one), and not a word YAML 1.1 reads as a boolean or null.
_SAFE_PLAIN = re.compile(r"[^\W\d_][\w .,'()/-]*")
_SAFE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_PLAIN_FLOAT = re.compile(r"-?[0-9]+\.[0-9]+")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def _plain_scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # ruamel writes a finite float as its repr when that has a point and no exponent.
        text = repr(value)
        return text if _PLAIN_FLOAT.fullmatch(text) else None
    if (
        isinstance(value, str)
        and _SAFE_PLAIN.fullmatch(value)
        and not value.endswith(" ")
        and value.lower() not in _YAML_WORDS
    ):
        return value
    return None


def _plain_render(name: str, value: Any) -> str | None:
    """What ruamel.yaml renders for a new field in the house style (block lists as `  - item`),
    written directly, or None when ruamel must decide. ruamel takes about a millisecond a field,
    most of it set-up; an import of 10,000 notes renders 100,000 fields. tests/writer checks the
    two give the same bytes."""
    if not _SAFE_NAME.fullmatch(name) or name.lower() in _YAML_WORDS:
        return None
    if isinstance(value, (list, tuple)):
        items = [_plain_scalar(v) for v in value]
        if not items or any(item is None for item in items):
            return None
        return name + ":" + "".join(f"\n  - {item}" for item in items)
    scalar = _plain_scalar(value)
    return None if scalar is None else f"{name}: {scalar}"


def _render(name: str, value: Any, f: Field | None, note_lists: _ListStyle, force_quotes: bool, map_indent: int) -> str:
    """`name: value` as YAML text (no final line break, '\n' inside), styled like field `f`."""
    if f is None and not force_quotes and note_lists == _ListStyle():
        fast = _plain_render(name, value)
        if fast is not None:
            return fast
    return _ruamel_render(name, value, f, note_lists, force_quotes, map_indent)


def _ruamel_render(
    name: str, value: Any, f: Field | None, note_lists: _ListStyle, force_quotes: bool, map_indent: int
) -> str:
    lists = _list_style(f) if f is not None and f.kind in ("flow-seq", "block-seq") else note_lists
    style = f.scalar_style if f is not None and f.kind == "scalar" else None
    flow_map = f is not None and f.kind == "flow-map"
    if f is not None and f.kind == "block-map" and f.child_col is not None:
        map_indent = max(f.child_col - f.key_col, 1)
    yaml = YAML(typ="rt")
    yaml.width = 1_000_000  # never fold a line: a long summary stays one line, as it was
    yaml.indent(mapping=map_indent, sequence=lists.item_offset, offset=lists.dash_offset)
    out = io.StringIO()
    yaml.dump(CommentedMap([(name, _to_yaml(value, style, lists, flow_map, force_quotes))]), out)
    return out.getvalue().rstrip("\n")


# --------------------------------------------------------------------------- the edit


def _canonical(name: str) -> str | None:
    return CANONICAL_FIELDS.get(name.lower().replace("_", "").replace("-", ""))


def _find(fields: list[Field], name: str) -> list[Field]:
    exact = [f for f in fields if f.name == name]
    if exact:
        return exact
    # `Keys:` or `cascade-links:` is how the parser reads `keys`/`cascade_links` (lenient
    # authoring): change the spelling the note uses instead of adding a second one.
    canon = _canonical(name)
    return [f for f in fields if canon is not None and _canonical(f.name) == canon] if canon else []


def _line_break_at(block: str, index: int, default: str) -> str:
    eol = block.find("\n", index)
    if eol < 0:
        return default
    return "\r\n" if eol > 0 and block[eol - 1] == "\r" else "\n"


def _line_end(block: str, index: int) -> int:
    """Index of the end of the line holding `index` (before its line break)."""
    eol = block.find("\n", index)
    if eol < 0:
        return len(block)
    return eol - 1 if eol > 0 and block[eol - 1] == "\r" else eol


def _carried_comment(block: str, f: Field, first_line_end: int, line_end: int) -> str:
    """A comment on the field's first line (`keys: [a]  # why`, `keys:  # why`), spacing and
    all, so that it stays with the field; "" when there is none or it sits inside the value."""
    if first_line_end == line_end:
        start = f.value_end
    elif f.value_start > first_line_end:
        start = f.colon_end
    else:
        return ""  # the value starts on the key line and goes on (a block scalar's header)
    tail = block[start:first_line_end]
    return tail if _COMMENT_TAIL.match(tail) else ""


def _splice(block: str, fields: list[Field], changes: Mapping[str, Any], nl: str, force_quotes: bool) -> str:
    note_lists = _note_list_style(fields)
    map_indent = next((f.child_col - f.key_col for f in fields if f.kind == "block-map" and f.child_col), 2)
    indent = fields[0].key_col if fields else 0
    edits: list[tuple[int, int, str]] = []
    removed: list[tuple[int, int]] = []  # whole lines, each with its line break
    appended: list[str] = []
    for name, value in changes.items():
        found = _find(fields, name)
        if len(found) > 1:
            raise FrontmatterEditError(
                f"the field {found[0].name!r} is written {len(found)} times in the frontmatter; "
                "remove the extra ones by hand first"
            )
        if not found:
            if value is not REMOVE:
                appended.append(_render(name, value, None, note_lists, force_quotes, map_indent))
            continue
        f = found[0]
        line_end = _line_end(block, f.value_end)
        if value is REMOVE:
            after = block.find("\n", line_end)
            removed.append((block.rfind("\n", 0, f.key_start) + 1, after + 1 if after >= 0 else len(block)))
            continue
        first_line_end = _line_end(block, f.key_start)
        comment = _carried_comment(block, f, first_line_end, line_end)
        # Rendered under a stand-in name, so the field name keeps its own spelling and quoting.
        rendered = _render("k", value, f, note_lists, force_quotes, map_indent)
        rendered = rendered[1:]
        gap = block[f.colon_end : f.value_start]
        if rendered.startswith(": ") and f.value_start < first_line_end and gap.strip(" \t") == "":
            rendered = ":" + gap + rendered[2:]  # `keys:   [a, b]` keeps its spacing
        lines = (block[f.key_start : f.colon_end - 1] + rendered).split("\n")
        lines[0] += comment
        edits.append((f.key_start, line_end, (_line_break_at(block, f.key_start, nl) + " " * f.key_col).join(lines)))
    edits += [(start, end, "") for start, end in _merge_removals(block, fields, removed)]
    for start, end, text in sorted(edits, reverse=True):
        block = block[:start] + text + block[end:]
    if appended:
        lines = [" " * indent + line for item in appended for line in item.split("\n")]
        if fields and _open_scalar(block, fields[-1]) and not block[fields[-1].value_end :].strip(" \t\r\n"):
            # After a `|`/`>` scalar that ends the block, new lines would give it the line break
            # it does not have; they go in before it instead.
            at = block.rfind("\n", 0, fields[-1].key_start) + 1
            block = block[:at] + "".join(line + nl for line in lines) + block[at:]
        else:
            tail = nl.join(lines)
            block = f"{block}{nl}{tail}" if block.strip() else tail
    return block


def _merge_removals(block: str, fields: list[Field], removed: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Removed line ranges joined into runs. A run that ends the block takes the line break
    before it instead of after (there is none), unless the field before it is a `|`/`>` scalar:
    ending the block, it would lose its final line break, and an empty line keeps it."""
    runs: list[list[int]] = []
    for start, end in sorted(removed):
        if runs and start <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], end)
        else:
            runs.append([start, end])
    if runs and runs[-1][1] == len(block) and runs[-1][0] > 0:
        start = runs[-1][0]
        before = [f for f in fields if f.key_start < start]
        if not (before and _open_scalar(block, before[-1])):
            start -= 1
            if start > 0 and block[start - 1] == "\r":
                start -= 1
            runs[-1][0] = start
    return [(start, end) for start, end in runs]


def _open_scalar(block: str, f: Field) -> bool:
    """Whether `f` is a `|` or `>` scalar without strip chomping: one that the parser reads without
    its final line break when it ends the block."""
    header = re.match(r"[|>][0-9+-]*", block[f.value_start :])
    return f.kind == "scalar" and f.scalar_style in ("|", ">") and header is not None and "-" not in header.group(0)


def _expected(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_expected(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _expected(v) for k, v in value.items()}
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal as the parser reads them: `True` is not `1`, NaN equals NaN."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    equal: bool = a == b
    return equal


def _read_back_problems(old_text: str, new_text: str, targets: Mapping[str, Any]) -> list[str]:
    """What reads back wrong in `new_text` (`targets` by the names the file uses): the changed
    fields that do not hold the values asked for, "<yaml>" when it does not parse, "<others>"
    when another field or the body changed."""
    old, new = split_note(old_text), split_note(new_text)
    if new.error is not None or new.data is None:
        return ["<yaml>"]
    wrong = []
    for name, value in targets.items():
        if value is REMOVE:
            if name in new.data:
                wrong.append(name)
        elif name not in new.data or not _same(new.data[name], _expected(value)):
            wrong.append(name)
    others_old = {k: v for k, v in (old.data or {}).items() if k not in targets}
    others_new = {k: v for k, v in new.data.items() if k not in targets}
    if not _same(others_old, others_new) or old.body != new.body:
        wrong.append("<others>")
    return wrong


def _verified(old_text: str, build: Callable[[bool], str], targets: Mapping[str, Any]) -> str:
    """build(False), or else build(True) (every new string double-quoted), whichever reads back
    right; FrontmatterEditError when neither does."""
    for force_quotes in (False, True):
        new_text = build(force_quotes)
        wrong = _read_back_problems(old_text, new_text, targets)
        if not wrong:
            return new_text
    if "<yaml>" in wrong:
        raise FrontmatterEditError(
            "this change would leave the frontmatter unreadable (does another field use an "
            "anchor '&' of this one with '*'?); nothing written: edit this note by hand"
        )
    if "<others>" in wrong:
        raise FrontmatterEditError(
            "this change would also change other fields of the note (an anchor '&' that "
            "another field uses with '*'?); nothing written: edit this note by hand"
        )
    raise FrontmatterEditError(
        f"{', '.join(repr(w) for w in wrong)} would not read back as the value given; nothing written"
    )


def _check_names(changes: Mapping[str, Any]) -> None:
    for name in changes:
        if not isinstance(name, str) or not name.strip():
            raise FrontmatterEditError(f"a frontmatter field needs a name, not {name!r}")


def edit_fields(text: str, changes: Mapping[str, Any]) -> str:
    """`text` with the frontmatter fields in `changes` set (or removed: value REMOVE); every other
    byte as it was. A note without frontmatter gets a block. FrontmatterEditError, with nothing
    changed, when the YAML is malformed or the change cannot be made safely."""
    _check_names(changes)
    parts = split_parts(text)
    if not parts.has_frontmatter:
        sets = {k: v for k, v in changes.items() if v is not REMOVE}
        if not sets:
            return text
        if re.match(r"---[ \t]*\r?\n", parts.body):
            raise FrontmatterEditError(
                "the note starts with '---' but its frontmatter is never closed by a second "
                "'---' line; fix it by hand first"
            )
        nl = "\r\n" if re.match(r"[^\n]*\r\n", parts.body) else "\n"
        return _verified(
            text, lambda force: f"{parts.bom}---{nl}{_splice('', [], sets, nl, force)}{nl}---{nl}{parts.body}", sets
        )
    checked = split_note(text)
    if checked.error is not None:
        raise FrontmatterEditError(f"{checked.error.message} (line {checked.error.line}); nothing written")
    if not changes:
        return text
    fields = scan_fields(parts.block)
    targets = {}
    for name, value in changes.items():
        found = _find(fields, name)
        targets[found[0].name if found else name] = value
    return _verified(
        text, lambda force: parts.with_block(_splice(parts.block, fields, changes, parts.opening_nl, force)), targets
    )


def compose_note(fields: Mapping[str, Any], body: str, newline: str = "\n") -> str:
    """A new note's text: a frontmatter block with `fields` in DLE's house style (block lists as
    `  - item`), then `body`."""
    _check_names(fields)
    if not fields:
        return body
    sets = {k: v for k, v in fields.items() if v is not REMOVE}
    return _verified(
        body, lambda force: f"---{newline}{_splice('', [], sets, newline, force)}{newline}---{newline}{body}", sets
    )
