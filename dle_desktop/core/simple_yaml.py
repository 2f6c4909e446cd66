"""A fast reader for the frontmatter most notes have, giving exactly what the YAML parser gives.

Most frontmatter is a flat mapping of `key: value` lines, one-line `[a, b]` lists and `- item`
block lists. Reading that through PyYAML (a C scanner, but a Python constructor and resolver
called per node) was the largest single cost of a cold index. `read_simple` reads only that
shape, with YAML's own implicit-type rules (the same resolver table and constructors), and
returns None for anything else: quoting with escapes, nested mappings, multi-line values,
anchors, tabs, odd characters. The caller then hands the block to the real YAML parser, which
also produces every error message. Being strict costs nothing but speed; being loose would
change results, so every doubtful construct is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

#: Characters that YAML reads as themselves in every position this reader accepts. Anything
#: else (controls, tabs, carriage returns, NEL and the Unicode line and paragraph separators,
#: a byte order mark, non-characters, lone surrogates) sends the block to the YAML parser.
_UNSAFE_CHAR_RE = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_KEY_LINE_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,127}):(?: (.*))?")
_ITEM_LINE_RE = re.compile(r"( *)- (.*)")
#: A plain scalar may not start with one of these (YAML indicators); `-` is let through when a
#: non-space follows it (`-5`, `-ish`).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
#: A plain scalar this reader accepts contains none of these anywhere: `:` (`a: b` is a mapping,
#: `a:b` is not, and telling them apart is not worth it), the flow indicators, and `#` after a
#: space (a comment: removed before the check).
_PLAIN_FORBIDDEN_RE = re.compile(r"[:\[\]{},]| #")
#: The same for the inside of a `[...]` list, whose commas separate the items.
_ITEMS_FORBIDDEN_RE = re.compile(r"[:\[\]{}]| #")

_STR = "tag:yaml.org,2002:str"
_CONSTRUCTOR = SafeConstructor()
_BUILD: dict[str, Callable[[ScalarNode], Any]] = {
    "tag:yaml.org,2002:null": lambda node: None,
    "tag:yaml.org,2002:bool": lambda node: _CONSTRUCTOR.construct_yaml_bool(node),
    "tag:yaml.org,2002:int": lambda node: _CONSTRUCTOR.construct_yaml_int(node),
    "tag:yaml.org,2002:float": lambda node: _CONSTRUCTOR.construct_yaml_float(node),
}


class _Refused(Exception):
    """The block is not of the simple shape: the YAML parser must read it."""


def _scalar_reader(resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]]) -> Callable[[str], Any]:
    """Plain scalar text → its value, by the same implicit resolvers the YAML loader uses."""
    wildcard = resolvers.get(None, [])
    #: First characters no resolver looks at (most letters): such text is a string at once.
    typed_starts = frozenset(ch for ch, table in resolvers.items() if table and ch is not None)

    def value(text: str) -> Any:
        if not wildcard and text and text[0] not in typed_starts:
            return text
        for tag, pattern in resolvers.get(text[0] if text else "", []) + wildcard:
            if pattern.match(text):
                build = _BUILD.get(tag)
                if build is None:  # a merge key, `=`, or a tag this reader does not build
                    raise _Refused
                return build(ScalarNode(tag, text))
        return text

    return value


def _check_start(text: str) -> str:
    if not text or (text[0] in _INDICATORS and not (text[0] == "-" and len(text) > 1 and text[1] != " ")):
        raise _Refused
    return text


def _check_plain(text: str) -> str:
    if _PLAIN_FORBIDDEN_RE.search(text):
        raise _Refused
    return _check_start(text)


def _after(rest: str) -> None:
    """What may follow a complete value on its line: spaces, then a comment."""
    stripped = rest.lstrip(" ")
    if stripped and not (stripped[0] == "#" and len(stripped) < len(rest)):
        raise _Refused


def _quoted(text: str) -> tuple[str, str]:
    """(content, the rest of the line) of a one-line quoted scalar without escapes."""
    quote = text[0]
    end = text.find(quote, 1)
    if end < 0:
        raise _Refused  # multi-line or unterminated: the parser decides
    content = text[1:end]
    if quote == '"' and "\\" in content:
        raise _Refused
    if quote == "'" and text[end + 1 : end + 2] == "'":
        raise _Refused  # '' is an escaped quote
    return content, text[end + 1 :]


def _memo_items(scalar: Callable[[str], Any]) -> Callable[[str], Any]:
    """`scalar(check_start(raw.strip(" ")))` for the raw text of a list item, remembered: the same
    tags and keys recur across a vault's notes. Values are immutable, so sharing them is safe."""
    seen: dict[str, Any] = {}

    def item(raw: str) -> Any:
        value = seen.get(raw, seen)
        if value is seen:
            value = scalar(_check_start(raw.strip(" ")))
            if len(seen) >= 8192:
                seen.clear()
            seen[raw] = value
        return value

    return item


def _flow_list(text: str, scalar: Callable[[str], Any], item: Callable[[str], Any]) -> tuple[list[Any], str]:
    """([items], the rest of the line) of a one-line `[a, "b", c]` list of scalars."""
    end = text.find("]")
    inner = text[1:end]
    if end > 0 and '"' not in inner and "'" not in inner:
        # No quotes: the first `]` closes the list and every `,` separates two items.
        if not inner.strip(" "):
            return [], text[end + 1 :]
        if _ITEMS_FORBIDDEN_RE.search(inner):
            raise _Refused
        return list(map(item, inner.split(","))), text[end + 1 :]
    items: list[Any] = []
    i = 1
    if text[1:].lstrip(" ").startswith("]"):
        return items, text[text.index("]") + 1 :]
    while True:
        while text[i : i + 1] == " ":
            i += 1
        if text[i : i + 1] in ('"', "'"):
            content, rest = _quoted(text[i:])
            items.append(content)
            i = len(text) - len(rest)
            while text[i : i + 1] == " ":
                i += 1
        else:
            j = i
            while j < len(text) and text[j] not in ",]":
                j += 1
            items.append(scalar(_check_plain(text[i:j].rstrip(" "))))
            i = j
        sep = text[i : i + 1]
        if sep == "]":
            return items, text[i + 1 :]
        if sep != "," or not text[i + 1 :].lstrip(" ") or text[i + 1 :].lstrip(" ")[0] in ",]":
            raise _Refused  # unclosed, a trailing comma, or an empty item
        i += 1


def _value(text: str, scalar: Callable[[str], Any], item: Callable[[str], Any] | None) -> Any:
    """A complete one-line value (the text after `key: ` or `- `)."""
    first = text[:1]
    if first in ('"', "'"):
        content, rest = _quoted(text)
        _after(rest)
        return content
    if first == "[" and item is not None:  # None: a list item, where a nested list is refused
        items, rest = _flow_list(text, scalar, item)
        _after(rest)
        return items
    comment = text.find(" #")
    plain = (text if comment < 0 else text[:comment]).rstrip(" ")
    return scalar(_check_plain(plain))


def _reader(resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]]) -> Callable[[str], dict[str, Any] | None]:
    scalar = _scalar_reader(resolvers)
    item = _memo_items(scalar)
    text_keys: set[str] = set()  # field names already known to read as text (`tags`, `keys`)

    def read(block: str) -> dict[str, Any] | None:
        if _UNSAFE_CHAR_RE.search(block):
            return None
        data: dict[str, Any] = {}
        open_key: str | None = None  # a key with no value yet: block list items may follow
        items: list[Any] | None = None
        indent = -1
        try:
            for line in block.split("\n"):
                content = line.lstrip(" ")
                if not content or content[0] == "#":
                    continue
                if line[0] != " " and line[0] != "-":
                    m = _KEY_LINE_RE.fullmatch(line)
                    if m is None:
                        raise _Refused
                    key, text = m.group(1), m.group(2)
                    if key in data:
                        raise _Refused  # a repeated key
                    if key not in text_keys:
                        if not isinstance(scalar(key), str):
                            raise _Refused  # a key YAML reads as a bool, number or null
                        if len(text_keys) < 4096:
                            text_keys.add(key)
                    rest = "" if text is None else text.lstrip(" ")
                    if not rest or rest[0] == "#":
                        data[key] = None
                        open_key, items, indent = key, None, -1
                    else:
                        data[key] = _value(rest, scalar, item)
                        open_key = None
                    continue
                m = _ITEM_LINE_RE.fullmatch(line)
                if m is None or open_key is None:
                    raise _Refused
                if items is None:
                    items, indent = [], len(m.group(1))
                    data[open_key] = items
                elif len(m.group(1)) != indent:
                    raise _Refused
                text = m.group(2).lstrip(" ")
                if not text or text[0] == "#":
                    raise _Refused  # an empty item
                items.append(_value(text, scalar, None))
        except _Refused:
            return None
        return data

    return read


def simple_reader(
    resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]],
) -> Callable[[str], dict[str, Any] | None]:
    """A `read_simple(block)` for a loader's implicit resolver table: the mapping the loader
    would build from `block`, or None when the block is not of the simple shape."""
    return _reader(resolvers)
