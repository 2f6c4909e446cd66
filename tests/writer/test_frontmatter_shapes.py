"""Every frontmatter shape: change one field, and only that field's text changes; the rest of the
file is byte-identical and the app's own parser reads the new value (and every other value as
before). Shapes are real-world notes in tests/writer/shapes/ plus every note of the bundled
sample vault."""

from __future__ import annotations

import re

import pytest

from dle_desktop.core.frontmatter import split_note
from dle_desktop.errors import FrontmatterEditError
from dle_desktop.vault.frontmatter_edit import REMOVE, edit_fields, split_parts
from tests.writer.conftest import read_exact, sample_notes, shape_files

#: (shape, field) pairs where the change must be refused, and why.
REFUSED = {
    ("13-anchors.md", "base_keys"): "its anchor &base is what `keys` reads",
}


def _new_value(value):
    """A different value of the same kind, as an editor would set it."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.25
    if isinstance(value, str):
        return value + "\nand one more line" if "\n" in value else value + " (edited)"
    if isinstance(value, list):
        return [*value, "added key"] if all(isinstance(v, str) for v in value) else ["replaced"]
    if isinstance(value, dict):
        return {**value, "added": "yes please"}
    return "now set"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _changed_range(old: str, new: str) -> tuple[int, int, int, int]:
    """(first differing line, end of the differing old lines, end of the differing new lines, old line count)."""
    a, b = _lines(old), _lines(new)
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[-1 - s] == b[-1 - s]:
        s += 1
    return p, len(a) - s, len(b) - s, len(a)


def _field_region(text: str, name: str) -> tuple[int, int]:
    """Line range of field `name` in the frontmatter: its key line up to the next top-level key
    or the closing delimiter (found without the editor's own code)."""
    lines = _lines(text.lstrip("\ufeff"))
    key = re.compile(r"^(?:" + re.escape(name) + r"|\"" + re.escape(name) + r"\"|'" + re.escape(name) + r"')[ \t]*:")
    start = next(i for i, line in enumerate(lines) if i > 0 and key.match(line))
    end = start + 1
    while end < len(lines) and not re.match(r"^(---|[^\s#-])", lines[end]):
        end += 1
    return start, end


def _cases(paths):
    for path in paths:
        data = split_note(read_exact(path)).data or {}
        for name in data:
            yield pytest.param(path, name, id=f"{path.name}:{name}")


ALL_NOTES = [*shape_files(), *sample_notes()]


def test_there_are_enough_shapes():
    assert len(shape_files()) >= 30
    assert len(sample_notes()) >= 5


@pytest.mark.parametrize(("path", "name"), list(_cases(ALL_NOTES)))
def test_changing_one_field_changes_only_its_text(path, name):
    old = read_exact(path)
    before = split_note(old).data
    value = _new_value(before[name])
    if (path.name, name) in REFUSED:
        with pytest.raises(FrontmatterEditError):
            edit_fields(old, {name: value})
        return
    new = edit_fields(old, {name: value})

    after = split_note(new)
    assert after.error is None
    assert after.data[name] == value
    assert {k: v for k, v in after.data.items() if k != name} == {k: v for k, v in before.items() if k != name}
    assert after.body == split_note(old).body

    first, old_end, new_end, _ = _changed_range(old, new)
    start, end = _field_region(old, name)
    assert start <= first and old_end <= end, f"lines outside {name!r} changed"
    old_parts, new_parts = split_parts(old), split_parts(new)
    assert new_parts.bom == old_parts.bom
    assert new_parts.body == old_parts.body  # byte for byte, line endings and all
    if end - start == 1 and "\n" not in str(before[name]):
        assert (old_end - first, new_end - first) == (1, 1), "a one-line field became more (or fewer) lines"


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in ALL_NOTES])
def test_adding_a_field_only_inserts_before_the_closing_line(path):
    old = read_exact(path)
    if split_note(old).error is not None:  # the sample vault keeps one broken note on purpose
        with pytest.raises(FrontmatterEditError, match="not valid YAML"):
            edit_fields(old, {"dle_test_added": ["one", "two"]})
        return
    new = edit_fields(old, {"dle_test_added": ["one", "two"]})
    assert split_note(new).data["dle_test_added"] == ["one", "two"]
    if not split_parts(old).has_frontmatter:
        assert new.endswith(split_parts(old).body)
        return
    a, b = _lines(old), _lines(new)
    first, old_end, new_end, _ = _changed_range(old, new)
    if old_end == first:  # a pure insertion
        inserted = "".join(b[first:new_end])
        assert "dle_test_added" in inserted
    else:  # the block's last line gained a line break (it is followed by the new lines)
        assert old_end - first == 1 and b[first].rstrip("\r\n") == a[first].rstrip("\r\n")
    assert split_parts(new).body == split_parts(old).body


@pytest.mark.parametrize(("path", "name"), list(_cases(shape_files())))
def test_removing_a_field_removes_only_its_lines(path, name):
    old = read_exact(path)
    before = split_note(old).data
    try:
        new = edit_fields(old, {name: REMOVE})
    except FrontmatterEditError:
        assert any(v == before[name] and k != name for k, v in before.items()), "only an anchor's removal is refused"
        return
    after = split_note(new).data
    assert name not in after
    assert after == {k: v for k, v in before.items() if k != name}
    first, old_end, _new_end, _ = _changed_range(old, new)
    start, end = _field_region(old, name)
    assert start - 1 <= first and old_end <= end
    assert split_parts(new).body == split_parts(old).body
