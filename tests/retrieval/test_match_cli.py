"""`dle-desktop match` as a user runs it: a subprocess with --data-dir in tmp, --vault on a small
generated vault or a copy of the sample vault."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import messages, world_files

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli(tmp_path, make_vault, lore):
    vault = make_vault(world_files(lore), name="world")
    data = tmp_path / "cli-data"

    def run(*args: str, chat=None, settings=None, vault_path: Path | None = None, json_out: bool = True):
        argv = [
            sys.executable,
            "-m",
            "dle_desktop",
            "match",
            "--vault",
            str(vault_path or vault),
            "--data-dir",
            str(data),
        ]
        if chat is not None:
            path = tmp_path / f"chat-{len(list(tmp_path.glob('chat-*')))}.json"
            path.write_bytes(chat if isinstance(chat, bytes) else json.dumps(chat, ensure_ascii=False).encode())
            argv += ["--chat", str(path)]
        if settings is not None:
            path = tmp_path / f"settings-{len(list(tmp_path.glob('settings-*')))}.json"
            path.write_bytes(settings if isinstance(settings, bytes) else json.dumps(settings).encode())
            argv += ["--settings", str(path)]
        if json_out:
            argv.append("--json")
        argv += list(args)
        return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, encoding="utf-8", timeout=120)

    run.vault = vault
    return run


def _ok(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _titles(gen: dict) -> list[str]:
    return sorted(i["title"] for i in gen["injected"])


def _stable(out: dict) -> str:
    return json.dumps([{k: v for k, v in g.items() if k != "timings_ms"} for g in out["generations"]], sort_keys=True)


def _fails(proc, *words: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[:300], proc.stderr[-500:])
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("error: "), proc.stderr
    for w in words:
        assert w in line, line
    return line


CHAT = messages(
    "I ring the bell and call for tamsin.",
    "Tamsin hears the bell.",
    "Tamsin waves from the quay.",
    "The bell, once more.",
    "Tamsin again.",
)


def test_json_shape_one_generation_without_replay(cli):
    out = _ok(cli(chat=CHAT))
    assert list(out) == ["generations"]
    (gen,) = out["generations"]
    assert {"injected", "groups", "total_tokens", "verdicts", "timings_ms"} <= set(gen)
    assert gen["messages"] == len(CHAT)
    for i in gen["injected"]:
        assert {"title", "vault", "tokens", "truncated"} <= set(i) and i["vault"] == "world"
    for g in gen["groups"]:
        assert {"position", "depth", "role", "text"} <= set(g)
    for v in gen["verdicts"]:
        assert {"title", "stage", "outcome", "reason"} <= set(v)
    assert _titles(gen) == ["Drowned Bell", "Lantern Quay", "Tamsin Reed"]
    assert gen["total_tokens"] == sum(i["tokens"] for i in gen["injected"])


def test_replay_one_generation_per_user_message_with_state(cli):
    out = _ok(cli("--replay", chat=CHAT))
    gens = out["generations"]
    assert [g["messages"] for g in gens] == [1, 3, 5]  # after each user message
    assert _titles(gens[0]) == ["Drowned Bell", "Tamsin Reed"]
    # Generation 2: the bell is cooling down and Tamsin was injected one generation ago (strip-dedup).
    assert _titles(gens[1]) == ["Lantern Quay"]
    reasons = {v["title"]: (v["stage"], v["outcome"]) for v in gens[1]["verdicts"] if v["outcome"] != "matched"}
    assert reasons["Tamsin Reed"] == ("strip duplicates", "removed")
    assert reasons["Drowned Bell"] == ("keywords", "skipped")
    # Generation 3: bell cooldown 1 more; Tamsin still inside the look-back of 2.
    assert _titles(gens[2]) == []


def test_replay_without_user_messages_is_one_generation(cli):
    out = _ok(cli("--replay", chat=messages("tamsin", "bell", first_user=False)[:1]))
    assert len(out["generations"]) == 1


def test_seed_is_reproducible(cli):
    chat = messages("an omen", "omen again", "another omen", "omen", "omen!", "omen?", "omen.")
    runs = [_ok(cli("--replay", "--seed", str(seed), chat=chat)) for seed in (11, 11, 12)]
    assert _stable(runs[0]) == _stable(runs[1])
    outcomes = [["Omen" in _titles(g) for g in r["generations"]] for r in runs]
    assert len(outcomes[0]) == 4
    # Across the 8 generations of two seeds the 50 % entry goes both ways (deterministic given the seeds).
    assert set(outcomes[0] + outcomes[2]) == {True, False}


def test_chat_as_object_with_camel_case_fields(cli):
    chat = {
        "messages": messages("tamsin rings the bell on the quay"),
        "folderFilter": ["Places", "People"],
        "characterName": "Tamsin Reed",
        "chatId": "cli-chat",
        "pins": ["Hidden Archive"],
        "blocks": ["Lantern Quay"],
        "context": {"era": "Founding"},
    }
    gen = _ok(cli(chat=chat))["generations"][0]
    assert _titles(gen) == ["Hidden Archive", "Tamsin Reed"]
    stages = {(v["title"], v["stage"]) for v in gen["verdicts"] if v["outcome"] == "removed"}
    assert ("Drowned Bell", "folder filter") in stages and ("Lantern Quay", "blocks") in stages
    # characterName feeds the active-character boost when characterContextScan is on.
    chat2 = {"messages": messages("a quiet night"), "characterName": "Tamsin Reed"}
    assert _titles(_ok(cli(chat=chat2))["generations"][0]) == []
    gen = _ok(cli(chat=chat2, settings={"characterContextScan": True}))["generations"][0]
    assert _titles(gen) == ["Tamsin Reed"]
    assert gen["injected"][0]["matched_by"] == "(active character)"
    # snake_case spellings in the same object work too.
    chat3 = {
        "messages": messages("tamsin rings the bell"),
        "folder_filter": ["Artifacts"],
        "character_name": "x",
        "chat_id": "y",
    }
    assert _titles(_ok(cli(chat=chat3))["generations"][0]) == ["Drowned Bell"]


def test_chat_as_bare_list(cli):
    gen = _ok(cli(chat=messages("the quay")))["generations"][0]
    assert _titles(gen) == ["Lantern Quay"]


def test_settings_in_dle_and_snake_case_names(cli):
    chat = messages("tamsin and the bell", "x", "y", "z")  # the keys only in the 4th message from the end
    assert _titles(_ok(cli(chat=chat))["generations"][0]) == ["Drowned Bell", "Tamsin Reed"]
    dle = _ok(cli(chat=chat, settings={"scanDepth": 1, "maxTokensBudget": 100, "fuzzySearchEnabled": True}))
    ours = _ok(cli(chat=chat, settings={"scan_depth": 1, "max_tokens_budget": 100, "fuzzy_search_enabled": True}))
    assert _stable(dle) == _stable(ours)
    assert _titles(dle["generations"][0]) == []
    # The names mix freely, and take effect: a budget of 100 tokens with a tiny max_entries.
    mixed = _ok(cli(chat=messages("tamsin and the bell and the quay"), settings={"maxEntries": 1, "scan_depth": 4}))
    assert len(mixed["generations"][0]["injected"]) == 1
    # Settings inside the chat object work too.
    gen = _ok(cli(chat={"messages": chat, "settings": {"scanDepth": 1}}))["generations"][0]
    assert _titles(gen) == []


def test_human_output(cli):
    proc = cli(chat=messages("tamsin rings the bell"), json_out=False)
    assert proc.returncode == 0, proc.stderr
    assert "== generation after message 1: 2 entries" in proc.stdout
    assert "+ Tamsin Reed  [tamsin]" in proc.stdout


def test_sample_vault(cli, sample_copy):
    gen = _ok(
        cli(
            "--seed",
            "1",
            chat=messages("We step off the ferry at Lantern Quay and Tamsin waves."),
            vault_path=sample_copy,
        )
    )["generations"][0]
    assert {"Tamsin Reed", "Lantern Quay"} <= {i["title"] for i in gen["injected"]}


def test_unknown_settings_are_named(cli):
    line = _fails(
        cli(chat=CHAT, settings={"scanDepth": 2, "scanDeepth": 3, "bogus_name": 1}), "scanDeepth", "bogus_name"
    )
    assert "unknown setting" in line and "scanDepth," not in line
    _fails(cli(chat={"messages": CHAT, "settings": {"nope": 1}}), "unknown setting", "nope")


@pytest.mark.parametrize(
    "settings,words",
    [
        ({"scanDepth": 1000}, ["scan_depth", "1000", "0-100"]),
        ({"maxTokensBudget": 5}, ["max_tokens_budget", "100-100000"]),
        ({"fuzzySearchMinScore": 9.5}, ["fuzzy_search_min_score"]),
        ({"reinjectionCooldown": -1}, ["reinjection_cooldown"]),
        ({"scanDepth": "deep"}, ["scan_depth", "number"]),
        ({"fuzzySearchEnabled": "maybe"}, ["fuzzy_search_enabled", "true or false"]),
        ({"injectionMode": "sideways"}, ["injection_mode", "sideways"]),
        ([1, 2], ["settings", "object"]),
    ],
)
def test_bad_setting_values_exit_2(cli, settings, words):
    _fails(cli(chat=CHAT, settings=settings), *words)


def test_fractional_integer_setting_is_refused_or_rounded(cli):
    """scanDepth 2.5 must not reach the pipeline as a float (slicing by it crashed with a traceback)."""
    proc = cli(chat=CHAT, settings={"scanDepth": 2.5})
    if proc.returncode == 2:
        _fails(proc, "scan_depth")
    else:
        assert proc.returncode == 0, proc.stderr[-800:]


def test_settings_file_problems(cli, tmp_path):
    _fails(cli(chat=CHAT, settings=b"{not json"), "settings file", "not valid JSON")
    _fails(cli(chat=CHAT, settings=b'{"a":' * 3000 + b"1" + b"}" * 3000), "settings file", "nested too deeply")
    missing = tmp_path / "no-settings.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dle_desktop",
            "match",
            "--vault",
            str(cli.vault),
            "--data-dir",
            str(tmp_path / "d"),
            "--chat",
            str(tmp_path),
            "--settings",
            str(missing),
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    _fails(proc, "cannot be read")


def test_missing_chat_file(cli, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dle_desktop",
            "match",
            "--vault",
            str(cli.vault),
            "--data-dir",
            str(tmp_path / "d"),
            "--chat",
            str(tmp_path / "nope.json"),
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    _fails(proc, "chat file not found", "nope.json")


@pytest.mark.parametrize(
    "chat,words",
    [
        (b'[{"name": "U", "mes": "hi"', ["not valid JSON", "line 1"]),
        (b"", ["not valid JSON"]),
        (b"\xff\xfe\x00[", ["cannot be read"]),
        (b'{"messages": [{"name": "U", "mes": 42}]}', ["messages[0].mes", "text"]),
        (b'[{"name": "U", "mes": "hi", "is_user": "yes"}]', ["messages[0].is_user"]),
        (b'{"messages": "hello"}', ["messages must be a list"]),
        (b'{"msgs": []}', ["unknown field", "msgs"]),
        (b'{"context": {}}', ["messages is missing"]),
        (b'{"messages": [], "folderFilter": 5}', ["folder_filter"]),
        (b'{"messages": [], "pins": [7]}', ["pins[0]"]),
        (b'{"messages": [], "context": {"era": {"a": 1}}}', ["context.era"]),
        (b'{"messages": [], "seed": "x"}', ["seed"]),
        (b'"just a string"', ["list of messages or an object"]),
        (b"42", ["list of messages or an object"]),
        (b'{"messages": [], "settings": [1]}', ["settings must be an object"]),
        (b"[" * 100_000 + b"]" * 100_000, ["nested too deeply"]),
        (b'{"messages": [], "seed": ' + b"9" * 5000 + b"}", ["number", "too long"]),
        (
            b'{"messages": [{"name": "U", "mes": "tamsin", "is_user": true}], "folderFilter": ["\\ud800"]}',
            ["surrogate"],
        ),
        (b'[{"name": "U", "mes": "x \\udfff", "is_user": true}]', ["surrogate"]),
    ],
)
def test_bad_chat_files_exit_2(cli, chat, words):
    _fails(cli(chat=chat), "chat file", *words)


def test_unknown_vault_folder_exit_2(cli, tmp_path):
    proc = cli(chat=CHAT, vault_path=tmp_path / "no-such-vault")
    _fails(proc, "vault folder not found")


def test_unicode_chat_file(cli, make_vault, lore):
    vault = make_vault(
        {"Uni/Dragon.md": lore("龍宮", ("龍宮城", "🐉")), "Uni/Cafe.md": lore("Café", ("café noir",))}, name="uni"
    )
    chat = messages("我们到达了龍宮城 🐉 then the Cafe\u0301 Noir, \u202bשלום\u202c")
    gen = _ok(cli(chat=chat, vault_path=vault))["generations"][0]
    assert _titles(gen) == ["Café", "龍宮"]


def _jsonl(cli, tmp_path, text: str):
    path = tmp_path / "chat.jsonl"
    path.write_text(text, encoding="utf-8")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "dle_desktop",
            "match",
            "--vault",
            str(cli.vault),
            "--data-dir",
            str(tmp_path / "d"),
            "--chat",
            str(path),
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


def test_sillytavern_jsonl_export(cli, tmp_path):
    header = json.dumps({"user_name": "User", "character_name": "Tamsin Reed", "chat_metadata": {}})
    lines = [header] + [json.dumps(m) for m in messages("tamsin rings the bell", "aye", "the quay")]
    out = _ok(_jsonl(cli, tmp_path, "\n".join(lines) + "\n"))
    assert _titles(out["generations"][0]) == ["Drowned Bell", "Lantern Quay", "Tamsin Reed"]
    _fails(_jsonl(cli, tmp_path, header + "\n" + "[" * 100_000 + "\n"), "chat file", "nested too deeply")
    _fails(_jsonl(cli, tmp_path, header + "\n" + '{"name": "U", "mes": "x \\udfff"}\n'), "surrogate")


def test_one_line_jsonl_without_header(cli, tmp_path):
    out = _ok(_jsonl(cli, tmp_path, json.dumps(messages("tamsin")[0]) + "\n"))
    assert _titles(out["generations"][0]) == ["Tamsin Reed"]
