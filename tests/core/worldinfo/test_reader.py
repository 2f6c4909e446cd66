"""Reading World Info books in every form SillyTavern users have them, and every way one can be bad."""

from __future__ import annotations

import base64
import json
import struct
import zlib

import pytest

from dle_desktop.core.worldinfo import MAX_BOOK_BYTES, WiEntry, WorldInfoError, read_book_bytes, read_book_value
from dle_desktop.core.worldinfo.reader import st_fields

from ._cards import SIGNATURE, card_text, card_v2, card_v3, chunk, image_chunks, png, text_chunk

WI_ENTRY = {
    "uid": 7,
    "key": ["lighthouse", "beacon"],
    "keysecondary": ["storm"],
    "comment": "The Lighthouse",
    "content": "It has not gone dark in 90 years.",
    "order": 120,
    "position": 1,
}
CHAR_ENTRY = {
    "id": 3,
    "keys": ["lighthouse"],
    "secondary_keys": ["fog"],
    "comment": "Lamp",
    "content": "The lamp burns whale oil.",
    "constant": False,
    "selective": True,
    "insertion_order": 40,
    "enabled": True,
    "position": "before_char",
    "extensions": {"position": 4, "depth": 2, "role": 1, "sticky": 2, "group_weight": 30, "outlet_name": ""},
}


def as_bytes(value: object) -> bytes:
    return json.dumps(value).encode("utf-8")


def test_a_world_info_export_keyed_by_uid():
    book = read_book_bytes(as_bytes({"entries": {"7": WI_ENTRY}}), name="Coast")
    assert (book.name, book.kind, book.problems) == ("Coast", "world-info", ())
    assert book.entries == (
        WiEntry(
            uid="7",
            comment="The Lighthouse",
            keys=("lighthouse", "beacon"),
            secondary_keys=("storm",),
            content="It has not gone dark in 90 years.",
            raw=WI_ENTRY,
        ),
    )


def test_the_entries_key_names_an_entry_without_a_uid():
    entry = {k: v for k, v in WI_ENTRY.items() if k != "uid"}
    book = read_book_value({"entries": {"12": entry}}, name="b")
    assert book.entries[0].uid == "12"


def test_entries_as_a_list_and_a_bare_array():
    listed = read_book_value({"entries": [WI_ENTRY, {"key": ["x"], "content": "y"}]}, name="b")
    assert (listed.kind, [e.uid for e in listed.entries]) == ("world-info", ["7", "1"])
    array = read_book_value([{"key": ["x"], "content": "y"}, WI_ENTRY], name="b")
    assert (array.kind, [e.uid for e in array.entries]) == ("array", ["0", "7"])


def test_keys_as_a_comma_string_and_numbers_become_text():
    book = read_book_value(
        [{"key": "harbour, docks ,, quay", "keysecondary": [1990, 2.0, 2.5], "content": ""}], name="b"
    )
    assert book.entries[0].keys == ("harbour", "docks", "quay")
    assert book.entries[0].secondary_keys == ("1990", "2", "2.5")


def test_a_utf8_bom_is_accepted():
    book = read_book_bytes(b"\xef\xbb\xbf" + as_bytes({"entries": {"7": WI_ENTRY}}), name="b")
    assert book.entries[0].comment == "The Lighthouse"


@pytest.mark.parametrize(("make", "kind"), [(card_v2, "card-v2"), (card_v3, "card-v3")])
def test_character_cards_v2_and_v3_as_json(make, kind):
    book = read_book_bytes(as_bytes(make([CHAR_ENTRY])), name="")
    assert (book.kind, book.name) == (kind, "Mira's book")
    (entry,) = book.entries
    assert (entry.uid, entry.comment, entry.keys, entry.secondary_keys) == ("3", "Lamp", ("lighthouse",), ("fog",))
    assert entry.raw == CHAR_ENTRY  # untouched


def test_a_character_book_entry_in_sillytaverns_names():
    fields = st_fields(CHAR_ENTRY)
    assert fields["key"] == ["lighthouse"] and fields["keysecondary"] == ["fog"]
    assert fields["order"] == 40 and fields["disable"] is False and fields["selective"] is True
    # extensions.position wins over the spec's before_char, as in SillyTavern's convertCharacterBook
    assert (fields["position"], fields["depth"], fields["role"]) == (4, 2, 1)
    assert (fields["sticky"], fields["groupWeight"], fields["outletName"]) == (2, 30, "")


def test_a_character_book_entry_without_extensions_uses_its_spec_fields():
    entry = {"keys": ["a"], "content": "b", "insertion_order": 5, "enabled": False, "position": "after_char"}
    fields = st_fields(entry)
    assert (fields["position"], fields["disable"], fields["selective"]) == (1, True, False)
    assert st_fields({**entry, "position": "before_char"})["position"] == 0
    assert st_fields({"keys": ["a"], "name": "Named", "case_sensitive": True})["comment"] == "Named"
    assert st_fields({"keys": ["a"], "case_sensitive": True})["caseSensitive"] is True


def test_a_card_without_spec_but_with_a_character_book():
    book = read_book_value({"name": "Old", "first_mes": "hi", "character_book": {"entries": [CHAR_ENTRY]}}, name="")
    assert (book.kind, book.name, len(book.entries)) == ("card-v2", "Old", 1)


@pytest.mark.parametrize(
    "card",
    [
        {"name": "Mira", "description": "d", "first_mes": "Hello.", "personality": "calm"},
        {"spec": "chara_card_v2", "data": {"name": "Mira", "first_mes": "Hello."}},
        {"spec": "chara_card_v3", "data": {"name": "Mira", "character_book": None}},
    ],
)
def test_a_card_without_a_lorebook(card):
    with pytest.raises(WorldInfoError, match="this card has no embedded lorebook"):
        read_book_bytes(as_bytes(card), name="c")


def test_a_card_whose_book_has_no_entry_list():
    with pytest.raises(WorldInfoError, match="character_book is damaged"):
        read_book_value({"spec": "chara_card_v2", "data": {"character_book": {"entries": {}}}}, name="c")


# -- PNG cards ----------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["tEXt", "zTXt", "iTXt", "iTXt-z"])
def test_a_png_card_in_each_text_chunk_form(form):
    data = png(text_chunk("chara", card_text(card_v2([CHAR_ENTRY])), form))
    book = read_book_bytes(data, name="Mira.png")
    assert (book.kind, book.name, book.entries[0].keys) == ("card-v2", "Mira.png", ("lighthouse",))


def test_ccv3_is_preferred_over_chara_in_either_order():
    v2 = card_v2([{**CHAR_ENTRY, "comment": "from chara"}])
    v3 = card_v3([{**CHAR_ENTRY, "comment": "from ccv3"}])
    for chunks in (
        [text_chunk("chara", card_text(v2)), text_chunk("ccv3", card_text(v3))],
        [text_chunk("ccv3", card_text(v3), "zTXt"), text_chunk("chara", card_text(v2))],
    ):
        book = read_book_bytes(png(*chunks), name="m")
        assert (book.kind, book.entries[0].comment) == ("card-v3", "from ccv3")


def test_the_card_keyword_is_case_insensitive_and_other_text_chunks_are_ignored():
    data = png(
        text_chunk("Comment", b"made with a paint program"), text_chunk("CHARA", card_text(card_v2([CHAR_ENTRY])))
    )
    assert read_book_bytes(data, name="m").entries[0].comment == "Lamp"


def test_base64_split_over_lines_is_read():
    text = card_text(card_v2([CHAR_ENTRY]))
    wrapped = b"\n".join(text[i : i + 76] for i in range(0, len(text), 76))
    assert read_book_bytes(png(text_chunk("chara", wrapped)), name="m").entries[0].comment == "Lamp"


def test_a_png_without_a_card():
    with pytest.raises(WorldInfoError, match="this PNG holds no character card"):
        read_book_bytes(png(text_chunk("Software", b"GIMP")), name="photo.png")


def test_a_truncated_png():
    data = png(text_chunk("chara", card_text(card_v2([CHAR_ENTRY]))))
    with pytest.raises(WorldInfoError, match="truncated"):
        read_book_bytes(data[: len(data) // 2], name="m")
    with pytest.raises(WorldInfoError, match="truncated: it ends inside a chunk header"):
        read_book_bytes(SIGNATURE + image_chunks()[0] + b"\0\0", name="m")
    with pytest.raises(WorldInfoError, match="ends before its IEND chunk"):
        read_book_bytes(png(end=False), name="m")


def test_a_card_after_a_missing_iend_is_still_read():
    data = png(text_chunk("chara", card_text(card_v2([CHAR_ENTRY]))), end=False)
    assert read_book_bytes(data, name="m").entries[0].comment == "Lamp"


def test_a_png_chunk_with_a_wrong_checksum():
    good = text_chunk("chara", card_text(card_v2([CHAR_ENTRY])))
    bad = good[:-4] + struct.pack(">I", (zlib.crc32(good[4:-4]) + 1) & 0xFFFFFFFF)
    with pytest.raises(WorldInfoError, match="the checksum of its 'tEXt' chunk does not match"):
        read_book_bytes(png(bad), name="m")


def test_a_png_card_chunk_that_is_not_base64_or_not_json():
    with pytest.raises(WorldInfoError, match="'chara' chunk is not valid base64"):
        read_book_bytes(png(text_chunk("chara", b"not base64 at all!")), name="m")
    with pytest.raises(WorldInfoError, match=r"the PNG's character card is not valid JSON: .* at line 1, column 2"):
        read_book_bytes(png(text_chunk("chara", base64.b64encode(b"{{nope"))), name="m")
    with pytest.raises(WorldInfoError, match="its JSON is no card object"):
        read_book_bytes(png(text_chunk("chara", base64.b64encode(b"[1, 2]"))), name="m")


def test_a_ztxt_card_that_does_not_inflate():
    broken = chunk(b"zTXt", b"chara\0\0" + b"this is not zlib")
    with pytest.raises(WorldInfoError, match="does not decompress"):
        read_book_bytes(png(broken), name="m")


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        (b"zTXt", b"chara\0\x05compressed by an unknown method"),
        (b"iTXt", b"chara\0"),
        (b"iTXt", b"ccv3\0\0\0no language terminator"),
        (b"iTXt", b"chara\0\x01\x07\0\0" + zlib.compress(b"x")),
    ],
)
def test_a_malformed_card_chunk_is_named(kind, data):
    with pytest.raises(WorldInfoError, match=f"its '(chara|ccv3)' {kind.decode()} chunk is malformed"):
        read_book_bytes(png(chunk(kind, data)), name="m")


def test_a_text_chunk_without_a_keyword_is_ignored():
    data = png(chunk(b"tEXt", b"no separator here"), text_chunk("chara", card_text(card_v2([CHAR_ENTRY]))))
    assert read_book_bytes(data, name="m").entries[0].comment == "Lamp"


def test_an_array_of_character_book_entries():
    book = read_book_value([CHAR_ENTRY], name="b")
    assert (book.kind, book.entries[0].uid, book.entries[0].keys) == ("array", "3", ("lighthouse",))


def test_a_compressed_card_bigger_than_the_limit_is_refused_while_inflating():
    bomb = zlib.compress(b"A" * (MAX_BOOK_BYTES + 10), 9)  # about 50 KB of zlib
    with pytest.raises(WorldInfoError, match="more than 50 MB"):
        read_book_bytes(png(chunk(b"zTXt", b"chara\0\0" + bomb)), name="m")


# -- bad JSON ---------------------------------------------------------------------------


def test_malformed_json_says_where():
    with pytest.raises(WorldInfoError) as err:
        read_book_bytes(b'{"entries": {\n  "0": {"key": ["a"],}\n}}', name="b")
    assert (
        str(err.value)
        == "the file is not valid JSON: Expecting property name enclosed in double quotes at line 2, column 22"
    )


def test_a_file_over_the_limit_is_refused_before_parsing():
    data = b"[" + b" " * MAX_BOOK_BYTES + b"]"  # valid JSON: only the size can refuse it
    with pytest.raises(WorldInfoError, match="the limit is 50 MB"):
        read_book_bytes(data, name="huge")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the file is empty"),
        (b"  \n", "the file is empty"),
        (b"\xff\xd8\xff\xe0\0\x10JFIF", "neither JSON nor a PNG character card"),
        (b'{"entries": "caf\xe9"}', "not UTF-8 text (byte 16 cannot be read)"),
        (b"[" * 100_000 + b"]" * 100_000, "nests too deeply"),
    ],
)
def test_bytes_that_are_no_json(data, message):
    with pytest.raises(WorldInfoError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_book_bytes(data, name="b")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a string", "it is a text, not a World Info book"),
        (42, "it is a number"),
        (
            {"name": "x", "version": 2},
            "it has no `entries` and is not a character card (its top-level fields: name, version)",
        ),
        ({"entries": "lots"}, "`entries` is a text"),
        ({"lorebookVersion": 5, "entries": []}, "this is a NovelAI lorebook"),
        ({"kind": "memory", "entries": []}, "this is an Agnai memory book"),
        ({"type": "risu", "data": []}, "this is a RisuAI lorebook"),
    ],
)
def test_json_that_is_no_book(value, message):
    with pytest.raises(WorldInfoError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_book_value(value, name="b")


def test_entries_that_are_not_objects_are_skipped_and_the_rest_kept():
    book = read_book_value({"entries": {"0": "text", "1": WI_ENTRY, "2": None, "3": [1]}}, name="b")
    assert [e.uid for e in book.entries] == ["7"]
    assert book.problems == (
        "entry 0: is text, not an entry object; skipped",
        "entry 2: is null, not an entry object; skipped",
        "entry 3: is list, not an entry object; skipped",
    )


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            {"uid": 4, "comment": "Bad", "key": {"a": 1}},
            "entry 4 ('Bad'): `key` is object, expected a list of text; skipped",
        ),
        ({"uid": 4, "key": True}, "entry 4: `key` is boolean, expected a list of text; skipped"),
        ({"uid": 4, "key": ["ok", {"x": 1}]}, 'entry 4: `key` holds object {"x": 1}, expected text; skipped'),
        (
            {"uid": 4, "key": ["ok"], "keysecondary": [None, False]},
            "entry 4: `keysecondary` holds boolean false, expected text; skipped",
        ),
        ({"uid": 4, "key": ["ok"], "content": {"text": "x"}}, "entry 4: `content` is object, expected text; skipped"),
        ({"uid": 4, "key": ["ok"], "comment": ["x"]}, "entry 4: `comment` is list, expected text; skipped"),
    ],
)
def test_key_lists_and_texts_of_the_wrong_type(entry, problem):
    book = read_book_value({"entries": {"0": entry, "1": WI_ENTRY}}, name="b")
    assert [e.uid for e in book.entries] == ["7"]
    assert book.problems == (problem,)


def test_a_character_book_entry_with_bad_keys_names_the_card_field():
    book = read_book_value(card_v2([{"id": 1, "keys": "fine"}, {"id": 2, "keys": [["nested"]]}]), name="c")
    assert [e.uid for e in book.entries] == ["1"]
    assert book.problems == ('entry 2: `keys` holds list ["nested"], expected text; skipped',)
