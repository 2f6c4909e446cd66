"""The Desktop Entry spec's rules, written out independently of dle_desktop.desktop.autostart, to read back
what it writes: string unescaping, then the Exec key's quoting."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path

_STRING_ESCAPES = {"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value) and value[i + 1] in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[value[i + 1]])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def split_exec(value: str) -> list[str]:
    """An Exec value (already string-unescaped) into its arguments."""
    args, cur, i, quoted, started = [], [], 0, False, False
    while i < len(value):
        ch = value[i]
        if quoted:
            if ch == "\\" and i + 1 < len(value) and value[i + 1] in '"`$\\':
                cur.append(value[i + 1])
                i += 2
                continue
            if ch == '"':
                quoted = False
            else:
                cur.append(ch)
        elif ch == '"':
            quoted, started = True, True
        elif ch == " ":
            if cur or started:
                args.append("".join(cur))
            cur, started = [], False
        else:
            assert ch not in "\\'`$<>|&;*?#()~\t", f"unquoted reserved character {ch!r} in Exec"
            cur.append(ch)
        i += 1
    assert not quoted, "unterminated quote in Exec"
    if cur or started:
        args.append("".join(cur))
    return [a.replace("%%", "%") for a in args]


def parse(path: Path) -> dict[str, str]:
    """The [Desktop Entry] group, read with configparser (keys keep their case); fails on any
    line that is neither a group, a key=value pair nor a comment."""
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",), comment_prefixes=("#",), strict=True)
    parser.optionxform = str
    parser.read_string(path.read_text(encoding="utf-8"))
    assert parser.sections()[0] == "Desktop Entry"
    return dict(parser["Desktop Entry"])


def validate(path: Path) -> None:
    """desktop-file-validate's verdict when it is installed (Debian: desktop-file-utils)."""
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        return
    result = subprocess.run([tool, str(path)], capture_output=True, text=True, timeout=30)
    problems = [line for line in (result.stdout + result.stderr).splitlines() if "error:" in line or "warning:" in line]
    assert result.returncode == 0 and not problems, result.stdout + result.stderr
