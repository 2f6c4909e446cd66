"""Command line: `dle-desktop` opens the app; subcommands script the same engine."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from typing import Any

from dle_desktop import __version__
from dle_desktop.cli.args import embedding_model_arg, port_arg
from dle_desktop.cli.errors import run_command


def _common(p: argparse.ArgumentParser, sub: bool = False) -> None:
    # On a subcommand the options default to SUPPRESS, so `dle-desktop --data-dir X match` keeps X
    # (argparse would otherwise overwrite it with the subcommand's default, None).
    extra: dict[str, Any] = {"default": argparse.SUPPRESS} if sub else {}
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        help="keep settings, cache and logs in DIR (default: the platform's app folders)",
        **extra,
    )
    p.add_argument(
        "--vault",
        action="append",
        metavar="PATH|URL",
        help="a vault folder, or http(s)://HOST:PORT for an Obsidian REST vault (repeatable); its key "
        "comes from DLE_OBSIDIAN_KEY or the saved vault at that address (keyring). "
        "http://KEY@HOST:PORT still works but shows the key in the process list",
        **extra,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dle-desktop", description="DLE Desktop: a native lore engine for SillyTavern."
    )
    parser.add_argument("--version", action="version", version=f"dle-desktop {__version__}")
    _common(parser)
    parser.add_argument("--minimized", action="store_true", help="start in the system tray without showing the window")
    parser.add_argument(
        "--port",
        type=port_arg,
        metavar="PORT",
        help="port of the HTTP server for SillyTavern (default from settings, 8765; 0 = any free "
        "port); kept until another port is chosen in Settings",
    )
    entry = parser.add_mutually_exclusive_group()
    entry.add_argument(
        "--install-desktop-entry",
        action="store_true",
        help="add DLE Desktop to the desktop's application menu (freedesktop: Linux, BSD) and exit",
    )
    entry.add_argument(
        "--remove-desktop-entry", action="store_true", help="remove that menu entry and its icons, and exit"
    )
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("index", help="index the vaults and print the entries")
    _common(p, sub=True)
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("--force", action="store_true", help="re-parse every note, ignoring the cache")
    p.add_argument("--no-content", action="store_true", help="leave entry content out of the JSON")

    p = sub.add_parser("health", help="run the vault health check")
    _common(p, sub=True)
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")

    p = sub.add_parser("match", help="run the retrieval pipeline on a chat and explain every decision")
    _common(p, sub=True)
    p.add_argument(
        "--chat",
        required=True,
        metavar="FILE",
        help="a SillyTavern chat: a JSON list of messages, or an object with messages",
    )
    p.add_argument("--settings", metavar="FILE", help="JSON settings (DLE's or our names) on top of the saved ones")
    p.add_argument("--replay", action="store_true", help="one generation per user message, state carried between them")
    p.add_argument("--seed", type=int, help="seed for probability rolls (reproducible results)")
    p.add_argument(
        "--semantic",
        action="store_true",
        help="turn the semantic stage on (embeds the vault's new or changed entries first)",
    )
    p.add_argument(
        "--embedding-model",
        metavar="PATH",
        help="a local GGUF embedding model for the semantic stage; overrides the setting",
    )
    p.add_argument("--ai", choices=("two-stage", "ai-only"), help="turn AI search on in this mode")
    p.add_argument("--profile", metavar="NAME", help="the connection profile (name or id) AI search uses for this run")
    p.add_argument(
        "--ai-offline",
        action="store_true",
        help="forbid network calls: AI search falls back as configured (cache hits still count)",
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")

    p = sub.add_parser("serve", help="run the engine and HTTP server without a window")
    _common(p, sub=True)
    p.add_argument("--host", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=port_arg,
        default=argparse.SUPPRESS,
        help="port to bind (default from settings, 8765; 0 = any free port)",
    )
    p.add_argument(
        "--embedding-model",
        metavar="PATH",
        help="a local GGUF embedding model for this run (no download); overrides the setting",
    )
    p.add_argument(
        "--keys-file",
        metavar="FILE",
        help="API keys for this run, NAME=KEY lines (DLE_AI_KEY_<PROFILE ID>, DLE_VAULT_KEY_<VAULT NAME>, "
        "DLE_OBSIDIAN_KEY); the file must be readable only by you (chmod 600). The same names "
        "work as environment variables",
    )

    p = sub.add_parser("server-token", help="print the token that LAN clients and listed web pages send to the server")
    _common(p, sub=True)

    p = sub.add_parser("olra-key", help="print the API key DeepLore Enhanced sends to the Obsidian REST emulation")
    _common(p, sub=True)

    p = sub.add_parser(
        "st", help="find SillyTavern installs; install, update or remove the DLE Desktop bridge extension"
    )
    from dle_desktop.cli.st import add_st_arguments

    add_st_arguments(p)

    p = sub.add_parser("wi", help="SillyTavern World Info: list books, import one into the vault, export the vault")
    from dle_desktop.cli.worldinfo import add_wi_arguments

    add_wi_arguments(p)

    p = sub.add_parser("embed", help="embed one text with a local GGUF model and print the vector")
    from dle_desktop.cli.embed import add_embed_arguments

    add_embed_arguments(p)

    p = sub.add_parser(
        "diagnostics",
        help="write a zip (or text) to attach to a bug report: versions, settings "
        "without secrets, the last log lines, index stats, recent errors",
    )
    from dle_desktop.cli.desktop import add_diagnostics_arguments

    add_diagnostics_arguments(p)
    return parser


def _print_index(result, as_json: bool, with_content: bool) -> None:
    snap = result.snapshot
    if as_json:
        json.dump(snap.to_json(with_content=with_content), sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return
    print(f"{len(snap)} entries, {len(snap.skipped)} skipped, {result.seconds * 1000:.0f} ms")
    for e in snap.entries:
        flags = "".join(c for c, on in (("C", e.constant), ("S", e.seed), ("B", e.bootstrap), ("G", e.guide)) if on)
        print(f"  {e.vault}:{e.path}  [{flags or '-'}] p{e.priority} ~{e.token_estimate}t  keys: {', '.join(e.keys)}")
    for s in snap.skipped:
        print(f"  skipped {s.vault}:{s.path}: {s.reason}" + (f" (line {s.line})" if s.line else ""))
    for w in snap.warnings:
        print(f"  warning: {w}")


def _print_health(report, as_json: bool) -> None:
    if as_json:
        json.dump(report.to_json(), sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return
    for label, items in (("ERROR", report.errors), ("WARNING", report.warnings), ("INFO", report.info)):
        for f in items:
            who = f"{f.entry}: " if f.entry else ""
            print(f"{label:7} [{f.code}] {who}{f.message}")
    e, w, i = report.counts
    print(f"{e} errors, {w} warnings, {i} info")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "st":
        from dle_desktop.cli.st import run_st

        return run_st(args)
    if args.command == "wi":
        from dle_desktop.cli.worldinfo import run_wi

        return run_wi(args)
    if args.command == "embed":
        from dle_desktop.cli.embed import run_embed

        return run_embed(args)
    if args.command == "diagnostics":
        from dle_desktop.cli.desktop import run_diagnostics

        return run_diagnostics(args)
    if args.install_desktop_entry or args.remove_desktop_entry:
        from dle_desktop.cli.desktop import run_desktop_entry

        return run_desktop_entry(args.install_desktop_entry)
    return run_command(lambda: _run(args, whole_process=argv is None))


def _run(args: argparse.Namespace, whole_process: bool = False) -> int:
    """`whole_process`: this command is the whole life of the process (the command line, not a
    caller in the same interpreter), so it may tune the interpreter for a short run."""
    from dle_desktop.app.context import index_once, make_context, make_engine

    if args.command in ("index", "health"):
        if whole_process:
            # A run of a second whose index lives until the exit: the cycle collector would only
            # walk it, during the run and again when the interpreter shuts down (half a second
            # at 10,000 entries). Frozen objects are left to the exit.
            gc.disable()
        ctx = make_context(args.data_dir)
        engine = make_engine(ctx, args.vault)
        result = index_once(engine, force=getattr(args, "force", False))
        if args.command == "index":
            _print_index(result, args.json, not args.no_content)
        else:
            _print_health(engine.health(), args.json)
        if whole_process:
            gc.freeze()
        return 0
    if args.command == "match":
        from dle_desktop.cli.matching import run_match

        return run_match(args)
    if args.command in ("server-token", "olra-key"):
        from dle_desktop.olra import olra_key
        from dle_desktop.server.security import server_token

        ctx = make_context(args.data_dir)
        print((server_token if args.command == "server-token" else olra_key)(ctx.secrets))
        if not ctx.secrets.persistent:
            print(f"warning: {ctx.secrets.problem}", file=sys.stderr)
        return 0
    if args.command == "serve":
        from dle_desktop.app.runtime import run_headless

        ctx = make_context(args.data_dir, keys_file=args.keys_file)
        if args.embedding_model:
            ctx.settings = ctx.settings.replace(embedding_model_path=embedding_model_arg(args.embedding_model))
        return run_headless(ctx, make_engine(ctx, args.vault), args.host, args.port)
    from dle_desktop.app.gui import run_gui

    return run_gui(args)
