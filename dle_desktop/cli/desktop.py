"""`dle-desktop diagnostics` and `dle-desktop --install-desktop-entry / --remove-desktop-entry`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dle_desktop.cli.errors import fail, run_command
from dle_desktop.fileio import private_opener


def add_diagnostics_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="DLE Desktop's settings, keys and logs folder (default: the platform's app folders)",
    )
    p.add_argument(
        "--out",
        metavar="PATH",
        help="where to write it (default: dle-desktop-diagnostics-<time>.zip here; with --text, "
        "standard output; '-' is standard output too)",
    )
    p.add_argument("--text", action="store_true", help="plain text instead of a zip")
    p.add_argument(
        "--log-lines", type=int, default=500, metavar="N", help="how many of the last log lines (default 500)"
    )


def run_diagnostics(args: Any) -> int:
    return run_command(lambda: _diagnostics(args), os_error_status=1)


def _diagnostics(args: Any) -> int:
    from dle_desktop.app.context import make_context
    from dle_desktop.desktop import diagnostics

    ctx = make_context(getattr(args, "data_dir", None), log_to_stderr=False)
    report = diagnostics.collect(
        ctx.paths, ctx.settings, ctx.secrets, settings_problem=ctx.store.problem, log_lines=max(0, args.log_lines)
    )
    if args.text:
        text = diagnostics.render_text(report)
        if args.out in (None, "-"):
            sys.stdout.write(text)
            return 0
        out = Path(args.out).expanduser()
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", encoding="utf-8", opener=private_opener) as fh:
            fh.write(text)
    else:
        if args.out == "-":
            return fail("a zip cannot go to standard output; use --text, or --out FILE", 2)
        out = diagnostics.write_zip(
            report, Path(args.out).expanduser() if args.out else Path.cwd() / diagnostics.default_name()
        )
    print(f"Diagnostics written to {out.resolve()}")
    print("API keys, tokens and passwords are replaced by ***; look it over before you attach it to a bug report.")
    return 0


def run_desktop_entry(install: bool) -> int:
    return run_command(lambda: _desktop_entry(install), os_error_status=1)


def _desktop_entry(install: bool) -> int:
    from dle_desktop.desktop import menu_entry as desktop_entry

    if install:
        written = desktop_entry.install()
        print(f"Menu entry installed: {written[0]}")
        print(f"Icons installed under {desktop_entry.icons_root()}")
    else:
        removed = desktop_entry.remove()
        print(f"Removed {len(removed)} files" if removed else "No menu entry was installed")
    return 0
