"""Bad input to the retrieval API: a 4xx with a JSON `error` that names the problem, and nothing in
the chat's state changes. Regex-looking keys and all kinds of Unicode never crash retrieval."""

from __future__ import annotations

import json

import pytest

from dle_desktop.core.pipeline.chat_input import MAX_MESSAGE_CHARS, MAX_MESSAGES, parse_chat_document
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.engine.retrieval import NotReady, RetrievalService
from dle_desktop.state.chat_store import ChatStore

from ._support import API, LiveServer, messages, titles, verdicts_for, write_world

CHAT = "victim"
GOOD = messages("tamsin rings the bell")


def _body(**fields) -> bytes:
    return json.dumps({"chat_id": CHAT, "messages": GOOD, **fields}).encode()


def _msg_body(msg: dict) -> bytes:
    return json.dumps({"chat_id": CHAT, "messages": [msg]}).encode()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    """One server for the many bad-input cases (they must change nothing, and each checks that)."""
    root = tmp_path_factory.mktemp("bad-input")
    server = LiveServer(write_world(root / "world"), root / "data")
    yield server
    server.close()


@pytest.fixture
def primed(shared_server):
    """A chat with state worth protecting: a generation, pins, context, folder filter, notebook."""
    server = shared_server
    if server.state(CHAT)["generation_count"]:
        return server
    server.put(CHAT, "pins", "pins", ["Omen"])
    server.put(CHAT, "context", "context", {"era": "Eel Year"})
    server.put(CHAT, "folder-filter", "folder_filter", ["Artifacts", "People", "Rules"])
    server.put(CHAT, "notebook", "notebook", "keep me")
    server.retrieve(CHAT, GOOD)
    return server


def _db_rows(server) -> list:
    with server.db() as db:
        return (
            db.execute("SELECT chat_id, state FROM chats ORDER BY chat_id").fetchall()
            + db.execute("SELECT chat_id, gen, record FROM generations ORDER BY chat_id, gen").fetchall()
        )


RETRIEVE_CASES = [
    # (id, body bytes, words the error must contain)
    ("empty body", b"", ["empty"]),
    ("whitespace body", b"   ", ["not valid JSON"]),
    ("broken JSON", b'{"chat_id": "victim", "messages": [', ["not valid JSON", "line 1"]),
    ("non-UTF-8 bytes", b'{"chat_id": "victim", "messages": [{"mes": "caf\xe9"}]}', ["UTF-8"]),
    ("UTF-16", json.dumps({"chat_id": CHAT, "messages": GOOD}).encode("utf-16"), ["UTF-8"]),
    ("JSON array", json.dumps(GOOD).encode(), ["object"]),
    ("JSON string", b'"hello"', ["object"]),
    ("JSON null", b"null", ["object"]),
    ("missing chat_id", json.dumps({"messages": GOOD}).encode(), ["chat_id"]),
    ("empty chat_id", json.dumps({"chat_id": "  ", "messages": GOOD}).encode(), ["chat_id"]),
    ("chat_id a number", json.dumps({"chat_id": 7, "messages": GOOD}).encode(), ["chat_id"]),
    ("chat_id too long", json.dumps({"chat_id": "x" * 513, "messages": GOOD}).encode(), ["chat_id", "512"]),
    ("missing messages", json.dumps({"chat_id": CHAT}).encode(), ["messages", "missing"]),
    ("messages not a list", json.dumps({"chat_id": CHAT, "messages": {"0": GOOD[0]}}).encode(), ["messages", "list"]),
    ("messages a string", json.dumps({"chat_id": CHAT, "messages": "tamsin"}).encode(), ["messages", "list"]),
    ("message not an object", _body(messages=["tamsin"]), ["messages[0]", "object"]),
    ("mes a number", _msg_body({"name": "U", "mes": 42, "is_user": True}), ["messages[0].mes", "text"]),
    ("mes missing", _msg_body({"name": "U", "is_user": True}), ["messages[0].mes", "missing"]),
    ("is_user a string", _msg_body({"name": "U", "mes": "hi", "is_user": "true"}), ["messages[0].is_user"]),
    ("is_system a number", _msg_body({"name": "U", "mes": "hi", "is_system": 1}), ["messages[0].is_system"]),
    ("name a list", _msg_body({"name": ["U"], "mes": "hi"}), ["messages[0].name"]),
    ("swipe_id negative", _msg_body({"name": "U", "mes": "hi", "swipe_id": -1}), ["messages[0].swipe_id"]),
    ("extra a list", _msg_body({"name": "U", "mes": "hi", "extra": ["x"]}), ["messages[0].extra"]),
    ("unknown top-level field", _body(temperature=0.7), ["unknown", "temperature"]),
    ("two unknown fields", _body(zeta=1, alpha=2), ["alpha", "zeta"]),
    ("settings not accepted over HTTP", _body(settings={"scanDepth": 1}), ["unknown", "settings"]),
    ("swipe a string", _body(swipe="yes"), ["swipe"]),
    ("dry_run a number", _body(dry_run=1), ["dry_run"]),
    ("seed a float", _body(seed=1.5), ["seed"]),
    ("seed a bool", _body(seed=True), ["seed"]),
    ("seed with 5000 digits", b'{"chat_id": "victim", "messages": [], "seed": ' + b"9" * 5000 + b"}", ["number"]),
    ("deeply nested JSON", b"[" * 100_000 + b"]" * 100_000, ["nested"]),
    ("character_name a number", _body(character_name=5), ["character_name"]),
    ("pins of the wrong type", _body(pins="Omen"), ["pins"]),
    ("a pin that is a number", _body(pins=[5]), ["pins[0]"]),
    ("a pin without a title", _body(pins=[{"vault": "lore"}]), ["pins[0]"]),
    ("blocks an object", _body(blocks={"title": "Omen"}), ["blocks"]),
    ("context with an object value", _body(context={"era": {"name": "Eel Year"}}), ["context.era"]),
    ("context a list", _body(context=["era"]), ["context"]),
    ("folder_filter a number", _body(folder_filter=5), ["folder_filter"]),
    ("folder_filter a list of numbers", _body(folderFilter=[1, 2]), ["folder_filter"]),
    ("notebook a number", _body(notebook=5), ["notebook"]),
    ("notebook over 64 KiB", _body(notebook="n" * (64 * 1024 + 1)), ["notebook", "64 KiB"]),
    ("notebook over 64 KiB in UTF-8 bytes", _body(notebook="é" * 40_000), ["notebook", "64 KiB"]),
    (
        "10 MB message",
        _msg_body({"name": "U", "mes": "x" * (10 * 1024 * 1024), "is_user": True}),
        ["messages[0].mes", str(MAX_MESSAGE_CHARS)],
    ),
    (
        "lone surrogate escape in a message",
        b'{"chat_id": "victim", "messages": [{"mes": "tamsin \\udfff"}]}',
        ["surrogate"],
    ),
    ("lone surrogate escape in a pin", b'{"chat_id": "victim", "messages": [], "pins": ["\\ud800"]}', ["surrogate"]),
    ("lone surrogate escape in the chat id", b'{"chat_id": "victim\\ud83d", "messages": []}', ["surrogate"]),
    (
        "25,000 messages",
        json.dumps({"chat_id": CHAT, "messages": [{"name": "U", "mes": "tamsin"}] * 25_000}).encode(),
        ["25000 messages", str(MAX_MESSAGES)],
    ),
]


@pytest.mark.parametrize("body,words", [c[1:] for c in RETRIEVE_CASES], ids=[c[0] for c in RETRIEVE_CASES])
def test_bad_retrieve_is_a_4xx_naming_the_problem_and_changes_nothing(primed, body, words):
    before, rows = primed.everything(CHAT), _db_rows(primed)
    r = primed.client.post(f"{API}/retrieve", content=body, headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    assert r.headers["content-type"].startswith("application/json")
    error = r.json()["error"]
    for word in words:
        assert word in error, error
    assert len(error) < 400
    assert primed.everything(CHAT) == before
    assert _db_rows(primed) == rows


FIELD_CASES = [
    ("pins", b'{"pins": "Omen"}', ["pins"]),
    ("pins", b'{"pins": [{"title": ""}]}', ["pins[0]"]),
    ("pins", b'{"pin": ["Omen"]}', ['"pins"']),
    ("pins", b'["Omen"]', ['"pins"']),
    ("blocks", b'{"blocks": 3}', ["blocks"]),
    ("blocks", b'{"blocks": [null]}', ["blocks[0]"]),
    ("context", b'{"context": {"era": {"x": 1}}}', ["context.era"]),
    ("context", b'{"context": {"era": [["nested"]]}}', ["context.era"]),
    ("context", b'{"context": "era=Founding"}', ["context"]),
    ("folder-filter", b'{"folder_filter": 5}', ["folder_filter"]),
    ("folder-filter", b'{"folderFilter": ["Places"]}', ['"folder_filter"']),
    ("notebook", b'{"notebook": 5}', ["notebook"]),
    ("notebook", b'{"notebook": null}', ["notebook"]),
    ("notebook", json.dumps({"notebook": "n" * (64 * 1024 + 1)}).encode(), ["notebook", "64 KiB"]),
    ("notebook", b"", ["empty"]),
    ("notebook", b"{", ["not valid JSON"]),
    ("notebook", b'{"notebook": "caf\xe9"}', ["UTF-8"]),
    ("notebook", b'{"notebook": "x\\udfffy"}', ["surrogate"]),
    ("context", b'{"context": {"k\\ud800": "v"}}', ["surrogate"]),
]


@pytest.mark.parametrize(
    "seg,body,words", FIELD_CASES, ids=[f"{c[0]}:{c[1][:30].decode('latin-1')}" for c in FIELD_CASES]
)
def test_bad_put_is_a_4xx_and_changes_nothing(primed, seg, body, words):
    before, rows = primed.everything(CHAT), _db_rows(primed)
    r = primed.client.put(f"{API}/chats/{CHAT}/{seg}", content=body)
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    error = r.json()["error"]
    for word in words:
        assert word in error, error
    assert primed.everything(CHAT) == before
    assert _db_rows(primed) == rows


def test_notebook_limit_is_inclusive(primed):
    assert primed.put(CHAT, "notebook", "notebook", "n" * 64 * 1024)["notebook"] == "n" * 64 * 1024


def test_bad_chat_ids_in_the_path(primed):
    c = primed.client
    for url in (f"{API}/chats/%20", f"{API}/chats/{'x' * 513}", f"{API}/chats/{'x' * 513}/pins"):
        r = c.get(url)
        assert r.status_code == 400 and "chat id" in r.json()["error"]
    r = c.put(f"{API}/chats/%20/pins", json={"pins": ["Omen"]})
    assert r.status_code == 400
    r = c.delete(f"{API}/chats/%20")
    assert r.status_code == 400
    assert primed.state(CHAT)["pins"] == ["Omen"]


def test_body_over_the_server_limit_is_413(primed):
    from dle_desktop.server.app import MAX_BODY_BYTES

    before = primed.everything(CHAT)
    # Declared too big: refused before reading.
    r = primed.client.post(f"{API}/retrieve", content=b"x" * (MAX_BODY_BYTES + 1))
    assert r.status_code == 413 and "limit" in r.json()["error"]

    # Chunked (no Content-Length): refused while reading.
    def chunks():
        block = b" " * (1024 * 1024)
        for _ in range(MAX_BODY_BYTES // len(block) + 2):
            yield block

    r = primed.client.post(f"{API}/retrieve", content=chunks())
    assert r.status_code == 413 and "limit" in r.json()["error"]
    r = primed.client.put(f"{API}/chats/{CHAT}/notebook", content=chunks())
    assert r.status_code == 413
    assert primed.everything(CHAT) == before


def test_unknown_route_and_method_are_json_errors(primed):
    r = primed.client.get(f"{API}/bogus")
    assert r.status_code == 404 and "no route" in r.json()["error"]
    # Chat ids may hold "/" (SillyTavern's group chats): this is chat "<CHAT>/bogus", fresh, not CHAT's.
    r = primed.client.get(f"{API}/chats/{CHAT}/bogus")
    assert r.status_code == 200 and r.json()["chat_id"] == f"{CHAT}/bogus" and r.json()["generation_count"] == 0
    r = primed.client.post(f"{API}/chats/{CHAT}/pins")
    assert r.status_code == 405 and set(r.headers["allow"].split(", ")) == {"GET", "HEAD", "PUT"}
    r = primed.client.get(f"{API}/retrieve")
    assert r.status_code == 405 and "POST" in r.json()["error"]


def test_retrieve_before_the_index_is_ready_is_503(world, start_server):
    s = start_server(world, sync=False)
    assert s.engine.snapshot is None
    r = s.client.post(f"{API}/retrieve", json={"chat_id": "early", "messages": GOOD})
    assert r.status_code == 503 and "not ready" in r.json()["error"]
    assert s.state("early")["generation_count"] == 0 and s.records("early") == []
    # Chat settings can be prepared meanwhile; the first sync makes retrieval work.
    s.put("early", "pins", "pins", ["Omen"])
    s.thread.call(s.engine.sync_now(), timeout=30)
    gen = s.retrieve("early", GOOD)
    assert "Omen" in titles(gen) and "Tamsin Reed" in titles(gen)


def test_retrieval_service_without_a_snapshot_raises_not_ready(tmp_path):
    import asyncio

    store = ChatStore(tmp_path / "s.sqlite")
    service = RetrievalService(store_factory=lambda: store, snapshot_getter=lambda: None, config=MatchConfig())
    doc = parse_chat_document({"chat_id": "c", "messages": GOOD})
    with pytest.raises(NotReady) as err:
        asyncio.run(service.retrieve(doc))
    assert err.value.http_status == 503 and "not ready" in str(err.value)
    assert store.records("c", 10) == [] and store.chats() == []
    service.close()


REGEX_FILES = {
    "Regex/Slashes.md": ("Slashes", ("/foo(/",)),
    "Regex/Star.md": ("Star", ("a.b*",)),
    "Regex/Bracket.md": ("Bracket", ("[unclosed",)),
    "Regex/Odd Probability.md": ("Odd Probability", ("oddprob",)),
}


def test_regex_like_keys_are_plain_text(make_vault, lore, start_server):
    files = {p: lore(t, k) for p, (t, k) in REGEX_FILES.items()}
    files["Regex/Odd Probability.md"] = lore("Odd Probability", ("oddprob",), extra="probability: 1.5\nwarmup: -2")
    # Single-quoted YAML, so that backslashes stay literal.
    files["Regex/Mixed.md"] = "---\ntags: [lorebook]\nkeys: ['(?P<x>', '\\d+', '^$', '.*']\n---\n# Mixed\nMixed.\n"
    s = start_server(make_vault(files, name="regex"))
    entries = {e["title"]: e for e in s.client.get(f"{API}/entries").json()["entries"]}
    assert entries["Mixed"]["keys"] == ["(?P<x>", "\\d+", "^$", ".*"]
    # Literal occurrences match...
    gen = s.retrieve("re", messages("we found /foo(/ and a.b* and [unclosed here"))
    assert sorted(titles(gen)) == ["Bracket", "Slashes", "Star"]
    assert {i["title"]: i["matched_by"] for i in gen["injected"]} == {
        "Slashes": "/foo(/",
        "Star": "a.b*",
        "Bracket": "[unclosed",
    }
    # ...regex meanings do not.
    gen = s.retrieve("re2", messages("foo and aXbbb and unclosed and 12345 and x"))
    assert titles(gen) == []
    gen = s.retrieve("re3", messages("a literal \\d+ too"))
    assert titles(gen) == ["Mixed"]
    gen = s.retrieve("re4", messages("oddprob"), seed=3)
    assert titles(gen) == ["Odd Probability"]  # probability above 1 reads as always


UNICODE_FILES = {
    "Uni/Dragon Palace.md": ("Dragon Palace", ("龍宮城",)),
    "Uni/Dragon Emoji.md": ("Dragon Emoji", ("🐉",)),
    "Uni/Family.md": ("Family", ("👩‍👩‍👧",)),
    "Uni/Cafe.md": ("Café Noir", ("café noir",)),
    "Uni/Moon.md": ("Moon", ("القمر",)),
    "Uni/Shalom.md": ("Shalom", ("שלום",)),
    "Uni/Magic.md": ("Magic", ("Магия",)),
    "Uni/Istanbul.md": ("Istanbul", ("İstanbul",)),
}


@pytest.fixture
def unicode_server(make_vault, lore, start_server):
    files = {p: lore(t, k) for p, (t, k) in UNICODE_FILES.items()}
    return start_server(make_vault(files, name="unicode"))


@pytest.mark.parametrize(
    "text,expected",
    [
        ("我们到达了龍宮城的大门。", ["Dragon Palace"]),  # CJK, no spaces
        ("A 🐉 circles overhead 🐉🐉", ["Dragon Emoji"]),
        ("The family 👩‍👩‍👧 waits", ["Family"]),
        ("Tea at the Cafe\u0301 Noir", ["Café Noir"]),  # combining acute (NFD) vs the NFC key
        ("CAFÉ NOIR, upper case", ["Café Noir"]),
        ("\u202bرأينا القمر فوق النهر\u202c", ["Moon"]),  # RTL with embedding marks
        ("הוא אמר שלום ויצא", ["Shalom"]),
        ("Магиям учатся долго", ["Magic"]),  # substring mode: DLE matches inside a longer word
        ("İSTANBUL by night", ["Istanbul"]),
        ("Z̤̈a̤l̈g̤ö text \u200b\u200d\ufeff\u0000 and \U0010ffff", []),
        ("Escaped pairs travel fine: \U0001f409", ["Dragon Emoji"]),
    ],
)
def test_unicode_messages(unicode_server, text, expected):
    gen = unicode_server.retrieve("u", messages(text), dry_run=True)
    # The same chat sent with every non-ASCII character escaped (\uXXXX, surrogate pairs) is the same.
    body = json.dumps({"chat_id": "u", "messages": messages(text), "dry_run": True}, ensure_ascii=True).encode()
    r = unicode_server.client.post(f"{API}/retrieve", content=body)
    assert r.status_code == 200, r.text
    assert r.json()["injected"] == gen["injected"]
    assert sorted(titles(gen)) == expected
    for title in expected:
        assert verdicts_for(gen, title)[-1][1] == "injected"


def test_unicode_in_chat_ids_names_and_state(unicode_server):
    s = unicode_server
    chat = "Аня - 2024-05-01@12h00m 龍 🐉"
    gen = s.retrieve(chat, [{"name": "ユーザー", "mes": "龍宮城 🐉", "is_user": True}], character_name="Мирела")
    assert sorted(titles(gen)) == ["Dragon Emoji", "Dragon Palace"]
    s.put(chat, "context", "context", {"место": "Сафре"})
    from urllib.parse import quote

    st = s.client.get(f"{API}/chats/{quote(chat)}").json()
    assert st["chat_id"] == chat and st["generation_count"] == 1 and st["context"] == {"место": "Сафре"}


def test_regex_like_keys_in_whole_word_mode(make_vault, lore, start_server):
    from dle_desktop.state.settings import Settings

    files = {p: lore(t, k) for p, (t, k) in REGEX_FILES.items()}
    s = start_server(make_vault(files, name="regex-ww"), Settings(match_whole_words=True))
    gen = s.retrieve("ww", messages("see /foo(/ then a.b* then [unclosed ."))
    assert sorted(titles(gen)) == ["Bracket", "Slashes", "Star"]
    assert titles(s.retrieve("ww2", messages("x/foo(/y and za.b*q and w[unclosedw"))) == []
