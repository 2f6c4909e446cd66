"""`dle-desktop match` with AI search, as a user runs it: a subprocess, a settings file holding a
connection profile that points at the fake provider, `--ai`, `--profile`, `--ai-offline`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.retrieval._support import note_text

ROOT = Path(__file__).resolve().parents[2]


def setup(tmp_path: Path, fake_url: str) -> tuple[Path, Path, Path]:
    vault = tmp_path / "v"
    vault.mkdir()
    for title, key in (("Harbor", "harbor"), ("Market", "market")):
        (vault / f"{title}.md").write_text(note_text(title, (key,)), encoding="utf-8")
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "connection_profiles": [
                    {
                        "id": "p1",
                        "name": "Local fake",
                        "provider": "openai",
                        "flavor": "llamacpp",
                        "base_url": fake_url + "/v1",
                        "model": "m",
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps([{"name": "User", "is_user": True, "mes": "the harbor and the market"}]), encoding="utf-8"
    )
    return vault, settings, chat


def match(tmp_path: Path, vault: Path, settings: Path, chat: Path, *args: str) -> subprocess.CompletedProcess:
    argv = [
        sys.executable,
        "-m",
        "dle_desktop",
        "match",
        "--data-dir",
        str(tmp_path / "data"),
        "--vault",
        str(vault),
        "--chat",
        str(chat),
        "--settings",
        str(settings),
        "--json",
        *args,
    ]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, encoding="utf-8", timeout=120)


def test_two_stage_through_a_named_profile(tmp_path, ai_fake):
    vault, settings, chat = setup(tmp_path, ai_fake.url)
    ai_fake.reply(text='[{"title": "Market", "confidence": "high", "reason": "they shop"}]')
    out = match(tmp_path, vault, settings, chat, "--ai", "two-stage", "--profile", "local FAKE")
    assert out.returncode == 0, out.stderr
    gen = json.loads(out.stdout)["generations"][0]
    assert [i["title"] for i in gen["injected"]] == ["Market"]
    assert gen["injected"][0]["matched_by"] == "market + AI: they shop (high)"
    assert ai_fake.last.model == "m"


def test_ai_offline_makes_no_call_and_falls_back(tmp_path, ai_fake):
    vault, settings, chat = setup(tmp_path, ai_fake.url)
    out = match(tmp_path, vault, settings, chat, "--ai", "ai-only", "--profile", "p1", "--ai-offline")
    assert out.returncode == 0, out.stderr
    gen = json.loads(out.stdout)["generations"][0]
    assert ai_fake.requests == []
    assert {i["title"] for i in gen["injected"]} == {"Harbor", "Market"}  # the keyword fallback
    assert any("--ai-offline" in n for n in gen["notes"])


def test_an_unknown_profile_is_a_clear_error(tmp_path, ai_fake):
    vault, settings, chat = setup(tmp_path, ai_fake.url)
    out = match(tmp_path, vault, settings, chat, "--ai", "two-stage", "--profile", "nope")
    assert out.returncode == 2 and "no connection profile called 'nope'" in out.stderr and "Local fake" in out.stderr


def test_ai_settings_in_dle_names_from_the_settings_file(tmp_path, ai_fake):
    vault, settings, chat = setup(tmp_path, ai_fake.url)
    raw = json.loads(settings.read_text(encoding="utf-8"))
    raw.update(
        {"aiSearchEnabled": True, "aiSearchMode": "two-stage", "aiSearchProfileId": "p1", "aiEmptyFallback": "keyword"}
    )
    settings.write_text(json.dumps(raw), encoding="utf-8")
    ai_fake.reply(text="[]")
    out = match(tmp_path, vault, settings, chat)
    assert out.returncode == 0, out.stderr
    gen = json.loads(out.stdout)["generations"][0]
    assert {i["title"] for i in gen["injected"]} == {"Harbor", "Market"}
    assert "the AI picked no entries; fallback: keyword" in gen["notes"]
