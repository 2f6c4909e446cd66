"""`dle-desktop wi ...`: SillyTavern World Info books in and out of the vault.

  wi books    the books of the SillyTavern installs found (or --st PATH), with entry counts
  wi import   a book (a file, `-` for standard input, or `st:<book name>`) into a vault, after a
              preview; --dry-run writes nothing, --yes writes without asking
  wi undo     take a whole import back (its batch id is printed when it ends)
  wi export   the indexed vault (or a folder or tag of it) as a World Info book file

Headless: the engine is built as `index` builds it (no server, no Qt). Errors print `error: ...`
on stderr and exit with status 2; a cancelled import (Ctrl+C) removes what it wrote and exits 130.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from dle_desktop.cli.errors import INTERRUPTED, run_command
from dle_desktop.errors import ConfigError, InputError

#: The status a refused or failed command exits with (as `index`, `health` and `match`).
ERROR_STATUS = 2
ST_PREFIX = "st:"


def add_wi_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="wi_command", metavar="{books,import,undo,export}")
    sub.required = True

    def common(q: argparse.ArgumentParser, vaults: bool = True) -> None:
        # SUPPRESS: `dle-desktop --data-dir X wi ...` keeps X (see main._common).
        q.add_argument(
            "--data-dir",
            metavar="DIR",
            default=argparse.SUPPRESS,
            help="keep settings, cache and logs in DIR (default: the platform's app folders)",
        )
        if vaults:
            q.add_argument(
                "--vault",
                action="append",
                metavar="PATH|URL",
                default=argparse.SUPPRESS,
                help="a vault folder, or http(s)://HOST:PORT for an Obsidian REST vault (repeatable; default: "
                "the saved vaults). An import writes into the first one",
            )

    def st_options(q: argparse.ArgumentParser) -> None:
        q.add_argument("--st", metavar="PATH", help="the SillyTavern folder (default: the installs found)")
        q.add_argument("--user", metavar="NAME", help="the SillyTavern user (default: default-user)")

    q = sub.add_parser("books", help="list the World Info books of SillyTavern installs, with entry counts")
    st_options(q)
    q.add_argument("--json", action="store_true", help="print machine-readable JSON")
    common(q, vaults=False)

    q = sub.add_parser("import", help="import a World Info book or character card into a vault (preview first)")
    q.add_argument(
        "source",
        metavar="SOURCE",
        help="a book file (.json, or a character card .json/.png), - for standard input, or st:NAME for a "
        "SillyTavern book (with --st/--user)",
    )
    q.add_argument("--folder", default="", metavar="F", help="the vault folder the notes go into (default: the top)")
    q.add_argument(
        "--on-collision",
        choices=("rename", "skip", "overwrite"),
        default="rename",
        help="when a note of that name exists: rename the import (DLE's NAME_imported.md; the default), skip "
        "the entry, or overwrite the note (the preview shows the diff)",
    )
    q.add_argument("--dry-run", action="store_true", help="show the preview and write nothing")
    q.add_argument("--yes", "-y", action="store_true", help="write without asking")
    q.add_argument("--diff", action="store_true", help="print the full diff of every note to be overwritten")
    st_options(q)
    common(q)

    q = sub.add_parser("undo", help="undo a whole import by its batch id (notes edited since are kept)")
    q.add_argument("batch", metavar="BATCH", help="the batch id `wi import` printed")
    common(q)

    q = sub.add_parser("export", help="export the vault (or a folder or tag of it) as a World Info book")
    q.add_argument("--folder", metavar="F", help="only the notes in this vault folder")
    q.add_argument("--tag", metavar="T", help="only the notes with this tag")
    q.add_argument("--out", required=True, metavar="FILE", help="the book file to write (replaced atomically)")
    common(q)


# -- SillyTavern books ---------------------------------------------------------------------------


def _installs(args: Any) -> list[Any]:
    from dle_desktop.st_bridge.install import find_installs, inspect

    if args.st:
        return [inspect(Path(args.st))]
    from dle_desktop.state.paths import resolve_paths
    from dle_desktop.state.settings import SettingsStore

    settings = SettingsStore(resolve_paths(getattr(args, "data_dir", None)).settings_file).load()
    installs = find_installs(list(settings.st_folders))
    if not installs:
        raise ConfigError("no SillyTavern install found; give its folder with --st PATH (the one with server.js)")
    return installs


def _users(st: Any, user: str | None) -> list[str]:
    if user:
        return [user]
    return list(st.users) or ["default-user"]


def _books(args: Any) -> int:
    from dle_desktop.worldinfo import list_books

    out = []
    for st in _installs(args):
        for user in _users(st, args.user):
            listed = list_books(st.root, user, st.data_root)
            out.append((st, user, listed))
    if args.json:
        doc = [
            {
                "install": str(st.root),
                "user": user,
                "books": [
                    {"name": b.name, "path": str(b.path), "entries": b.entries, "size": b.size, "error": b.error}
                    for b in listed
                ],
            }
            for st, user, listed in out
        ]
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return 0
    for i, (st, user, listed) in enumerate(out):
        if i:
            print()
        print(
            f"SillyTavern {st.version or ''} at {st.root}, user {user}: {len(listed)} World Info books".replace(
                "  ", " "
            )
        )
        width = max((len(b.name) for b in listed), default=0)
        for b in listed:
            what = f"{b.entries} entries" if b.error is None else f"unreadable: {b.error}"
            print(f"  {b.name:<{width}}  {what}")
    return 0


# -- import --------------------------------------------------------------------------------------


def _read_source(args: Any) -> Any:
    from dle_desktop.worldinfo import find_book, read_book_file, read_book_stream

    source: str = args.source
    if source == "-":
        return read_book_stream(sys.stdin.buffer, "standard input")
    if source.startswith(ST_PREFIX):
        name = source[len(ST_PREFIX) :]
        installs = _installs(args)
        st = installs[0]
        return read_book_file(find_book(st.root, name, args.user or "default-user", st.data_root))
    return read_book_file(Path(source))


def _print_plan(plan: Any, show_diff: bool) -> None:
    counts = plan.counts()
    where = f"vault {plan.vault}" + (f", folder {plan.folder}" if plan.folder else "")
    print(f"Import of {plan.book!r} into {where}: {len(plan.rows)} entries")
    for row in plan.rows:
        extra = ""
        if row.diff:
            added = sum(1 for line in row.diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
            removed = sum(1 for line in row.diff.splitlines() if line.startswith("-") and not line.startswith("---"))
            extra = f"  (+{added} -{removed} lines)"
        print(f"  {row.action:<9}  {row.path or row.title}{extra}")
        for warning in row.warnings:
            print(f"             ! {warning}")
        if row.kept:
            print(f"             kept for the round trip, not enforced here: {', '.join(row.kept)}")
        if show_diff and row.diff:
            for line in row.diff.splitlines():
                print(f"             {line}")
    for note in plan.notes:
        print(f"note: {note}")
    for problem in plan.problems:
        print(f"problem: {problem}")
    print(
        f"{counts['create']} to create, {counts['rename']} renamed, {counts['overwrite']} to overwrite, "
        f"{counts['skip']} skipped"
    )


def _confirm(count: int) -> bool:
    sys.stdout.write(f"Write {count} notes? [y/N] ")
    sys.stdout.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty() and (done == total or done % 25 == 0):
        sys.stderr.write(f"\rwriting {done}/{total}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _engine(args: Any) -> Any:
    from dle_desktop.app.context import make_context, make_engine

    ctx = make_context(getattr(args, "data_dir", None), log_to_stderr=False)
    engine = make_engine(ctx, getattr(args, "vault", None))
    if not engine.sources:
        raise ConfigError("no vault: give one with --vault PATH")
    return engine


async def _indexed(engine: Any) -> None:
    await asyncio.to_thread(engine.indexer.load_cache)
    await engine.indexer.sync_all()


async def _close(engine: Any) -> None:
    for source in engine.sources:
        await source.close()
    if engine.writer.history is not None:
        engine.writer.history.close()


def _import(args: Any) -> int:
    book = _read_source(args)  # a bad book fails before any vault is opened
    engine = _engine(args)
    vault = engine.sources[0].name
    if vault in engine.writer.read_only:
        raise ConfigError(f"{engine.writer.read_only[vault]} (give the vault to import into with --vault PATH)")
    if not args.yes and not args.dry_run and (not sys.stdin.isatty() or args.source == "-"):
        raise InputError("add --yes to write without asking (there is no terminal to ask on), or --dry-run")

    async def go() -> int:
        # One event loop for the preview and the writes: an Obsidian REST vault's client is bound to it.
        try:
            await _indexed(engine)
            plan = await engine.worldinfo.plan_import(
                book, vault=vault, folder=args.folder, collision=args.on_collision
            )
            _print_plan(plan, args.diff)
            if args.dry_run or not plan.writes:
                print("dry run: nothing was written" if args.dry_run else "nothing to write")
                return 0
            if not args.yes and not await asyncio.to_thread(_confirm, plan.writes):
                print("nothing was written")
                return 0
            result = await engine.worldinfo.run_import(plan, progress=_progress)
        finally:
            await _close(engine)
        print(f"Imported {len(result.written)} notes into {vault} ({len(result.skipped)} skipped).")
        print(f"batch {result.batch}: undo the whole import with  dle-desktop wi undo {result.batch}")
        return 0

    try:
        return asyncio.run(go())
    except KeyboardInterrupt:
        # The import's task was cancelled: it removed what it had written before it ended.
        print("\ncancelled: nothing of the import was kept", file=sys.stderr)
        return INTERRUPTED


def _undo(args: Any) -> int:
    engine = _engine(args)

    async def go() -> Any:
        try:
            return await engine.worldinfo.undo_import(args.batch)
        finally:
            await _close(engine)

    undo = asyncio.run(go())
    print(f"Undid {len(undo.undone)} writes of import {args.batch}.")
    for conflict in undo.conflicts:
        print(f"  kept {conflict.path}: it changed after the import (undo it by hand if you want)")
    for refused in undo.refused:
        print(f"  not undone: {refused}")
    return 0 if undo.complete else 1


# -- export --------------------------------------------------------------------------------------


def _export(args: Any) -> int:
    from dle_desktop.worldinfo import save_book

    engine = _engine(args)
    out = Path(args.out)
    if out.is_dir():
        raise InputError(f"--out {out} is a folder; name the book file to write")

    async def go() -> Any:
        try:
            await _indexed(engine)
            return await engine.worldinfo.export(folder=args.folder, tag=args.tag)
        finally:
            await _close(engine)

    book, report = asyncio.run(go())
    save_book(out, book)
    print(f"Exported {report.entries} entries to {out}")
    lossy = [line for line in report.lines if line.lost]
    if lossy:
        print(f"What World Info cannot express ({len(lossy)} entries):")
        for line in lossy:
            print(f"  {line.title} ({line.path}): {'; '.join(line.lost)}")
    return 0


def run_wi(args: Any) -> int:
    commands = {"books": _books, "import": _import, "undo": _undo, "export": _export}
    return run_command(lambda: commands[args.wi_command](args), status=ERROR_STATUS, os_error_status=ERROR_STATUS)
