"""`python -m dle_desktop` as a subprocess with a temporary --data-dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dle_desktop import __version__

REPO = Path(__file__).resolve().parents[2]

ENTRY_FIELDS = {
    "path",
    "vault",
    "title",
    "keys",
    "refine_keys",
    "priority",
    "constant",
    "seed",
    "bootstrap",
    "guide",
    "requires",
    "excludes",
    "cascade_links",
    "scan_depth",
    "exclude_recursion",
    "warmup",
    "cooldown",
    "probability",
    "position",
    "depth",
    "role",
    "outlet",
    "tags",
    "summary",
    "links",
    "resolved_links",
    "folder",
    "custom_fields",
    "token_estimate",
    "content_hash",
    "content",
}


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("DLE_DESKTOP_DATA_DIR", None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def dle(*args: str, data_dir: Path, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dle_desktop", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        env=cli_env(),
        cwd=cwd or data_dir.parent,
    )


@pytest.fixture
def data_dir(tmp_path) -> Path:
    return tmp_path / "data"


def test_version(data_dir):
    proc = subprocess.run(
        [sys.executable, "-m", "dle_desktop", "--version"], capture_output=True, text=True, timeout=60, env=cli_env()
    )
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"dle-desktop {__version__}"


def test_index_json_on_the_sample_vault(data_dir):
    proc = dle("index", "--json", data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"entries", "skipped", "warnings"}
    assert len(out["entries"]) == 61
    for e in out["entries"]:
        assert set(e) >= ENTRY_FIELDS, ENTRY_FIELDS - set(e)
        assert e["vault"] == "Sample vault"
        assert "\\" not in e["path"] and e["path"].endswith(".md")
    crab = [s for s in out["skipped"] if s["path"] == "Creatures/Stiltcrabs.md"]
    assert len(crab) == 1
    assert isinstance(crab[0]["line"], int) and crab[0]["line"] > 0
    assert crab[0]["reason"]
    assert {s["path"] for s in out["skipped"]} == {
        "README.md",
        "Scratch — Plot Hooks.md",
        "History/Session 1 Notes.md",
        "History/The Salt Famine.md",
        "Creatures/The Thing Beneath.md",
        "Creatures/Stiltcrabs.md",
    }
    # The cache it wrote makes the second run agree exactly.
    again = dle("index", "--json", data_dir=data_dir)
    assert json.loads(again.stdout)["entries"] == out["entries"]
    assert list((data_dir / "index-cache").glob("*.idx"))
    assert (data_dir / "logs" / "dle-desktop.log").exists()


def test_index_no_content_and_text_output(data_dir):
    proc = dle("index", "--json", "--no-content", data_dir=data_dir)
    assert proc.returncode == 0
    assert all("content" not in e for e in json.loads(proc.stdout)["entries"])
    text = dle("index", data_dir=data_dir)
    assert text.returncode == 0
    assert text.stdout.startswith("61 entries, 6 skipped")
    assert "skipped Sample vault:Creatures/Stiltcrabs.md" in text.stdout


def test_index_json_on_a_vault_given_with_vault(data_dir, make_vault, lore):
    root = make_vault(
        {
            "Places/Quay.md": lore("The Quay", ("quay",), body="Boats. [[Ferryman]] and [[Nowhere]]."),
            "People/Ferryman.md": lore("Ferryman", ("ferry",), extra="priority: 15\nrequires: [The Quay]"),
            "Broken.md": "---\ntags: [lorebook\n---\n",
        },
        name="My Lore",
    )
    proc = dle("index", "--json", "--vault", str(root), data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    by_title = {e["title"]: e for e in out["entries"]}
    assert set(by_title) == {"The Quay", "Ferryman"}
    quay = by_title["The Quay"]
    assert quay["vault"] == "My Lore" and quay["path"] == "Places/Quay.md" and quay["folder"] == "Places"
    assert quay["links"] == ["Ferryman", "Nowhere"] and quay["resolved_links"] == ["Ferryman"]
    assert by_title["Ferryman"]["priority"] == 15 and by_title["Ferryman"]["requires"] == ["The Quay"]
    assert [s["path"] for s in out["skipped"]] == ["Broken.md"]


def test_index_with_two_vaults(data_dir, make_vault, lore):
    a = make_vault({"A.md": lore("Alpha")}, name="first")
    b = make_vault({"B.md": lore("Beta")}, name="second")
    proc = dle("index", "--json", "--no-content", "--vault", str(a), "--vault", str(b), data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    assert {(e["vault"], e["title"]) for e in json.loads(proc.stdout)["entries"]} == {
        ("first", "Alpha"),
        ("second", "Beta"),
    }


def test_index_force_reparses(data_dir, make_vault, lore):
    root = make_vault({"A.md": lore("Alpha")})
    assert dle("index", "--json", "--vault", str(root), data_dir=data_dir).returncode == 0
    proc = dle("index", "--json", "--force", "--vault", str(root), data_dir=data_dir)
    assert proc.returncode == 0 and len(json.loads(proc.stdout)["entries"]) == 1


def test_health_json_on_the_sample_vault(data_dir):
    proc = dle("health", "--json", data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"errors", "warnings", "info"}
    for group in out.values():
        assert isinstance(group, list)
        for item in group:
            assert {"entry", "code", "message"} <= set(item)
            assert isinstance(item["message"], str) and item["message"]
    codes = {(i["code"], i["entry"]) for i in out["errors"]}
    assert ("duplicate_title", "The Drowned Bell") in codes
    circular = [i for i in out["errors"] if i["code"] == "circular_requires"]
    assert len(circular) == 1
    assert circular[0]["entry"] in ("The Secret Betrothal", "The Lovers' Letters")


def test_health_text_output(data_dir):
    proc = dle("health", data_dir=data_dir)
    assert proc.returncode == 0
    assert "[duplicate_title]" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].endswith("info")


def test_missing_vault_folder_exits_2_with_a_message(data_dir, tmp_path):
    missing = tmp_path / "no such vault"
    for command in ("index", "health", "serve"):
        proc = dle(command, "--vault", str(missing), data_dir=data_dir, timeout=60)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "error:" in proc.stderr and "no such vault" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_vault_that_is_a_file_exits_2(data_dir, tmp_path):
    f = tmp_path / "note.md"
    f.write_text("x")
    proc = dle("index", "--vault", str(f), data_dir=data_dir)
    assert proc.returncode == 2 and "error:" in proc.stderr


def test_unreachable_rest_vault_exits_2_without_leaking_the_key(data_dir, unused_port):
    key = "CliSecretKey-123456789"
    proc = dle("index", "--json", "--vault", f"http://{key}@127.0.0.1:{unused_port}", data_dir=data_dir)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "error:" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert key not in proc.stderr and key not in proc.stdout
    log = (data_dir / "logs" / "dle-desktop.log").read_text(encoding="utf-8")
    assert key not in log


def test_bad_arguments_exit_2(data_dir):
    proc = dle("index", "--no-such-flag", data_dir=data_dir)
    assert proc.returncode == 2 and "usage:" in proc.stderr
    proc = dle("serve", "--port", "not-a-number", data_dir=data_dir)
    assert proc.returncode == 2


def test_broken_pipe_prints_no_traceback(data_dir, make_generated_vault):
    root = make_generated_vault(400)  # well over a pipe buffer of JSON
    proc = subprocess.Popen(
        [sys.executable, "-m", "dle_desktop", "index", "--json", "--vault", str(root), "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=data_dir.parent,
    )
    head = proc.stdout.read(10)
    proc.stdout.close()  # like `| head -c 10`
    err = proc.stderr.read().decode("utf-8", "replace")
    code = proc.wait(timeout=120)
    assert head == b'{\n "entrie'
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err
    assert code in (0, 141)  # 141: the shell's code for SIGPIPE, if the platform kills instead


def test_broken_pipe_through_a_real_shell_pipeline(data_dir, make_generated_vault):
    root = make_generated_vault(400)
    cmd = (
        f"{sys.executable} -m dle_desktop index --json --vault '{root}' --data-dir '{data_dir}' "
        f"2>'{data_dir.parent / 'stderr.txt'}' | head -c 10; echo \" rc=${{PIPESTATUS[0]}}\""
    )
    proc = subprocess.run(
        ["bash", "-c", cmd], capture_output=True, text=True, timeout=120, env=cli_env(), cwd=data_dir.parent
    )
    assert proc.stdout.startswith('{\n "entrie')
    assert "rc=0" in proc.stdout
    err = (data_dir.parent / "stderr.txt").read_text()
    assert "Traceback" not in err and "Exception ignored" not in err, err


@pytest.fixture
def unused_port() -> int:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_data_dir_that_is_a_file_exits_2_with_a_message(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    proc = dle("index", "--json", data_dir=blocker)
    assert proc.returncode == 2, proc.stderr
    assert "error: cannot use the data folder" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert blocker.read_text() == "x"


def test_empty_vault_indexes_to_nothing(data_dir, make_vault):
    root = make_vault({}, name="empty")
    proc = dle("index", "--json", "--vault", str(root), data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"entries": [], "skipped": [], "warnings": []}
    health = dle("health", "--json", "--vault", str(root), data_dir=data_dir)
    assert health.returncode == 0
    assert json.loads(health.stdout)["errors"] == []


def test_health_json_on_a_tmp_vault(data_dir, make_vault, lore):
    root = make_vault(
        {
            "A.md": lore("Twin", ("a",)),
            "B.md": lore("Twin", ("b",)),
            "C.md": lore("Loner", ("c",), extra="requires: [Ghost]"),
        }
    )
    proc = dle("health", "--json", "--vault", str(root), data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    errors = {(i["code"], i["entry"]) for i in json.loads(proc.stdout)["errors"]}
    assert ("duplicate_title", "Twin") in errors
    assert ("requires_missing", "Loner") in errors


def test_settings_from_the_data_dir_are_used(data_dir, make_vault, lore):
    root = make_vault({"A.md": lore("Alpha"), "B.md": lore("Beta", tags="[lore]")})
    data_dir.mkdir()
    (data_dir / "settings.json").write_text(
        json.dumps(
            {
                "lorebookTag": "lore",
                "vaults": [{"name": "Configured", "path": str(root)}],
            }
        ),
        encoding="utf-8",
    )
    proc = dle("index", "--json", "--no-content", data_dir=data_dir)
    assert proc.returncode == 0, proc.stderr
    assert [(e["vault"], e["title"]) for e in json.loads(proc.stdout)["entries"]] == [("Configured", "Beta")]


def test_data_dir_before_the_command_is_honoured(tmp_path, make_vault, lore):
    vault = make_vault({"A.md": lore("A", keys=["a"])}, name="v")
    data = tmp_path / "early-data"
    proc = subprocess.run(
        [sys.executable, "-m", "dle_desktop", "--data-dir", str(data), "index", "--vault", str(vault)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        env=cli_env(),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert (data / "index-cache").is_dir() or any(data.rglob("*")), "the index cache went somewhere else"


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_serve_refuses_a_keys_file_others_can_read(data_dir, tmp_path):
    keys = tmp_path / "keys.env"
    keys.write_text("DLE_AI_KEY_MAIN=sk-readable-by-all\n", encoding="utf-8")
    keys.chmod(0o644)
    proc = dle("serve", "--port", "0", "--keys-file", str(keys), data_dir=data_dir)
    assert proc.returncode == 2
    assert "chmod 600" in proc.stderr and "sk-readable-by-all" not in proc.stderr


def test_help_says_where_a_rest_vault_key_goes():
    proc = subprocess.run(
        [sys.executable, "-m", "dle_desktop", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_env(),
        cwd=REPO,
    )
    text = " ".join(proc.stdout.split())
    assert "DLE_OBSIDIAN_KEY" in text and "process list" in text and "--keys-file" in text


# Every subcommand with the arguments it needs; which of them read vaults (and so take --vault).
SUBCOMMANDS = [
    (["index"], True),
    (["health"], True),
    (["match", "--chat", "chat.json"], True),
    (["serve"], True),
    (["server-token"], True),
    (["olra-key"], True),
    (["st", "find"], False),
    (["st", "install", "--st-dir", "ST"], False),
    (["st", "remove", "--st-dir", "ST"], False),
    (["st", "status", "--st-dir", "ST"], False),
    (["embed", "--embedding-model", "m.gguf", "--text", "x"], False),
    (["diagnostics"], False),
]


@pytest.mark.parametrize("command,reads_vaults", SUBCOMMANDS, ids=lambda c: " ".join(c) if isinstance(c, list) else "")
def test_data_dir_before_or_after_every_subcommand_and_vault_where_vaults_are_read(command, reads_vaults, capsys):
    from dle_desktop.cli.main import build_parser

    parser = build_parser()
    assert parser.parse_args(["--data-dir", "D", *command]).data_dir == "D"
    assert parser.parse_args([*command, "--data-dir", "D"]).data_dir == "D"
    if reads_vaults:
        assert parser.parse_args(["--vault", "V", *command]).vault == ["V"]
        assert parser.parse_args([*command, "--vault", "V"]).vault == ["V"]
    else:
        with pytest.raises(SystemExit) as refused:
            parser.parse_args([*command, "--vault", "V"])
        assert refused.value.code == 2 and "unrecognized arguments: --vault V" in capsys.readouterr().err


def test_the_readme_says_which_subcommands_take_vault():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    intro = readme.split("## Command line", 1)[1].split("```", 1)[0]
    assert "Every subcommand accepts `--data-dir DIR`" in intro
    vault_sentence = intro.split("`--vault PATH|URL`", 1)[0].rsplit(".", 1)[-1]
    named = {c[0] for c, reads in SUBCOMMANDS if reads}
    assert all(f"`{name}`" in vault_sentence for name in named), vault_sentence
    assert not any(f"`{c[0]}`" in vault_sentence for c, reads in SUBCOMMANDS if not reads), vault_sentence


def _usage_lines() -> dict[str, str]:
    """The README's usage block: each command's lines (continuations joined)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Command line", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    lines: dict[str, str] = {}
    current = ""
    for line in block.splitlines():
        if line.startswith("dle-desktop "):
            words = line.split("#", 1)[0].split()
            current = " ".join(w for w in words[1:3] if not w.startswith(("-", "[")))
            lines[current] = lines.get(current, "") + " " + line.split("#", 1)[0]
        elif line.startswith(" ") and current:
            lines[current] += " " + line
    return lines


def test_the_readme_usage_lines_name_every_option_of_every_subcommand():
    import argparse

    from dle_desktop.cli.main import build_parser

    usage = _usage_lines()
    missing = []

    def check(name: str, parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    check(f"{name} {sub_name}".strip(), sub)
                return
        for action in parser._actions:
            for option in action.option_strings:
                if option in ("-h", "--help", "--data-dir", "--vault") or not name:
                    continue
                if option not in usage.get(name, ""):
                    missing.append(f"{name}: {option}")

    check("", build_parser())
    assert missing == []
