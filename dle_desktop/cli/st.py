"""`dle-desktop st ...`: find SillyTavern installs, install, update and remove the DLE Desktop
bridge extension in them.

Errors print `error: ...` on stderr and exit with status 1 (never a traceback). The server token
is written into the extension's `dle-config.json` and never printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dle_desktop.cli.errors import fail, run_command
from dle_desktop.errors import DleError


def add_st_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="st_command", metavar="{find,install,remove,status}")
    sub.required = True

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument(
            "--data-dir",
            metavar="DIR",
            default=argparse.SUPPRESS,
            help="DLE Desktop's settings, keys and logs folder (default: the platform's app folders)",
        )

    q = sub.add_parser("find", help="list SillyTavern installs and the bridge copies in them")
    q.add_argument(
        "--st-dir",
        action="append",
        default=[],
        metavar="PATH",
        help="a SillyTavern folder to look at besides the usual places (repeatable)",
    )
    q.add_argument("--json", action="store_true", help="print machine-readable JSON")
    common(q)

    q = sub.add_parser("install", help="install or update the bridge extension in a SillyTavern install")
    q.add_argument("--st-dir", required=True, metavar="PATH", help="the SillyTavern folder (the one with server.js)")
    who = q.add_mutually_exclusive_group()
    who.add_argument("--user", metavar="NAME", help="the SillyTavern user to install for (default: default-user)")
    who.add_argument(
        "--all-users", action="store_true", help="install for every user (into public/scripts/extensions/third-party)"
    )
    q.add_argument(
        "--server-url",
        metavar="URL",
        help="the address SillyTavern's page uses to reach DLE Desktop "
        "(default: http://127.0.0.1:<server port from settings>)",
    )
    q.add_argument(
        "--origin",
        action="append",
        default=[],
        metavar="URL",
        help="another address SillyTavern's page is opened at, to allow besides the ones its config.yaml "
        "gives (a SillyTavern started with --port, behind a launcher or a reverse proxy), e.g. "
        "https://tavern.example (repeatable)",
    )
    common(q)

    q = sub.add_parser("remove", help="remove the bridge extension from a SillyTavern install")
    q.add_argument("--st-dir", required=True, metavar="PATH", help="the SillyTavern folder (the one with server.js)")
    who = q.add_mutually_exclusive_group()
    who.add_argument("--user", metavar="NAME", help="the SillyTavern user to remove it for (default: default-user)")
    who.add_argument("--all-users", action="store_true", help="remove the copy installed for every user")
    common(q)

    q = sub.add_parser("status", help="show one SillyTavern install and the state of the bridge in it")
    q.add_argument("--st-dir", required=True, metavar="PATH", help="the SillyTavern folder (the one with server.js)")
    q.add_argument("--json", action="store_true", help="print machine-readable JSON")
    common(q)


# -- helpers -------------------------------------------------------------------------------------

#: The status every error of `dle-desktop st` exits with.
ERROR_STATUS = 1


def _err(message: str) -> int:
    return fail(message, ERROR_STATUS)


def _bundled() -> str | None:
    from dle_desktop.st_bridge.install import StInstallError, bundled_version

    try:
        return bundled_version()
    except StInstallError:
        return None


def _load_settings(data_dir: str | None):
    """Saved settings without creating any folder (for the read-only commands)."""
    from dle_desktop.state.paths import resolve_paths
    from dle_desktop.state.settings import SettingsStore

    return SettingsStore(resolve_paths(data_dir).settings_file).load()


def _canonical(origin: str) -> str | None:
    from dle_desktop.core.hosts import parse_origin

    try:
        return parse_origin(origin)
    except ValueError:
        return None


def _bridge_json(b, bundled: str | None) -> dict[str, Any]:
    return {
        "scope": b.scope,
        "user": b.user,
        "path": str(b.path),
        "version": b.version,
        "up_to_date": b.version is not None and b.version == bundled,
        "server_url": b.server_url,
        "has_token": b.has_token,
    }


def _install_json(st, bundled: str | None) -> dict[str, Any]:
    from dle_desktop.st_bridge.install import installed

    return {
        "root": str(st.root),
        "version": st.version,
        "data_root": str(st.data_root),
        "users": list(st.users),
        "port": st.port,
        "origins": list(st.origins()),
        "bridges": [_bridge_json(b, bundled) for b in installed(st)],
    }


def _where(b) -> str:
    return "all users" if b.scope == "all-users" else f"user {b.user}"


def _print_install(st, bundled: str | None) -> None:
    from dle_desktop.st_bridge.install import installed

    print(f"SillyTavern {st.version or '(unknown version)'} at {st.root}")
    print(f"  port {st.port}, data folder {st.data_root}")
    print(f"  users: {', '.join(st.users) if st.users else 'none yet (start SillyTavern once)'}")
    copies = installed(st)
    if not copies:
        print(f"  bridge: not installed (bundled version {bundled or 'missing'})")
    for b in copies:
        if b.version is not None and b.version == bundled:
            state = "up to date"
        else:
            state = f"bundled version is {bundled or 'missing'}: run `dle-desktop st install` to update"
        print(f"  bridge for {_where(b)}: version {b.version or 'unknown'} ({state})")
        print(f"    {b.path}")
        print(f"    server {b.server_url or 'not set'}, token {'set' if b.has_token else 'missing'}")


def _target_args(args) -> tuple[str | None, bool]:
    return (None if args.all_users else (args.user or "default-user")), bool(args.all_users)


# -- commands ------------------------------------------------------------------------------------


def _find(args) -> int:
    from pathlib import Path

    from dle_desktop.st_bridge.install import StInstallError, find_installs, inspect

    settings = _load_settings(args.data_dir)
    extra = list(args.st_dir) + list(getattr(settings, "st_folders", ()) or ())
    bad = []
    for d in args.st_dir:
        try:
            inspect(Path(d))
        except StInstallError as exc:
            try:
                inspect(Path(d).expanduser() / "SillyTavern")
            except StInstallError:
                bad.append(str(exc))
    installs = find_installs(extra)
    bundled = _bundled()
    if args.json:
        json.dump(
            {"bundled_version": bundled, "installs": [_install_json(st, bundled) for st in installs]},
            sys.stdout,
            indent=1,
        )
        sys.stdout.write("\n")
    elif not installs:
        print("No SillyTavern install found. Give its folder with --st-dir PATH (the folder that holds server.js).")
    else:
        for i, st in enumerate(installs):
            if i:
                print()
            _print_install(st, bundled)
    for message in bad:
        print(f"error: {message}", file=sys.stderr)
    return 1 if bad else 0


def _status(args) -> int:
    from pathlib import Path

    from dle_desktop.st_bridge.install import inspect

    st = inspect(Path(args.st_dir))
    bundled = _bundled()
    settings = _load_settings(args.data_dir)
    allowed = {_canonical(o) for o in settings.server_allowed_origins}
    missing = [o for o in st.origins() if _canonical(o) not in allowed]
    if args.json:
        out = _install_json(st, bundled)
        out.update(bundled_version=bundled, origins_allowed=not missing, origins_missing=missing)
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    _print_install(st, bundled)
    if missing:
        print(
            f"  DLE Desktop does not yet accept SillyTavern's page: {', '.join(missing)} "
            "missing from server_allowed_origins (`dle-desktop st install` adds them)"
        )
    else:
        print("  DLE Desktop accepts requests from SillyTavern's page (its origins are allowed)")
    return 0


def _install(args) -> int:
    from pathlib import Path

    from dle_desktop.app.context import make_context
    from dle_desktop.server.security import server_token
    from dle_desktop.st_bridge.install import inspect, install
    from dle_desktop.st_bridge.origins import page_origin

    extra_origins = [page_origin(o) for o in args.origin]  # all checked before anything is written
    st = inspect(Path(args.st_dir))
    ctx = make_context(args.data_dir, log_to_stderr=False)
    if args.server_url:
        url = args.server_url
    else:
        port = ctx.settings.server_port
        if not port:
            return _err(
                "the server port is 0 in settings (any free port), so the address SillyTavern should use "
                "is not known: give it with --server-url http://127.0.0.1:PORT"
            )
        url = f"http://127.0.0.1:{port}"
    user, all_users = _target_args(args)
    token = server_token(ctx.secrets)
    try:
        bridge = install(st, server_url=url, token=token, user=user, all_users=all_users)
    except DleError as exc:
        return _err(str(exc).replace(token, "***"))
    print(
        f"Installed the DLE Desktop bridge {bridge.version or ''} for {_where(bridge)} of SillyTavern "
        f"{st.version or ''} at {st.root}".replace("  ", " ")
    )
    print(f"  folder: {bridge.path}")
    print(f"  it talks to DLE Desktop at {bridge.server_url}")
    if not ctx.secrets.persistent:
        print(
            f"warning: {ctx.secrets.problem}; the token written into the extension lasts for this session only",
            file=sys.stderr,
        )
    status = _allow_origins(ctx, list(dict.fromkeys([*st.origins(), *extra_origins])))
    print("Reload SillyTavern's page (F5) to load it.")
    return status


def _allow_origins(ctx, origins: list[str]) -> int:
    settings = ctx.store.load()
    allowed = list(settings.server_allowed_origins)
    known = {_canonical(o) for o in allowed}
    added: list[str] = []
    for origin in origins:
        if _canonical(origin) not in known:
            known.add(_canonical(origin))
            added.append(origin)
    if not added:
        print(f"  DLE Desktop already accepts requests from {', '.join(origins)}")
        return 0
    try:
        ctx.store.save(settings.replace(server_allowed_origins=tuple(allowed + added)))
    except (DleError, OSError) as exc:
        print(
            f"error: the extension is installed, but DLE Desktop's settings could not be saved ({exc}); add "
            f"{', '.join(added)} to the allowed web pages in Settings",
            file=sys.stderr,
        )
        return 1
    print(f"  added to DLE Desktop's allowed web pages (server_allowed_origins): {', '.join(added)}")
    print("  (a running DLE Desktop accepts them at once; no restart needed)")
    return 0


def _remove(args) -> int:
    from pathlib import Path

    from dle_desktop.st_bridge.install import inspect, remove

    st = inspect(Path(args.st_dir))
    user, all_users = _target_args(args)
    where = "all users" if all_users else f"user {user}"
    if remove(st, user=user, all_users=all_users):
        print(f"Removed the DLE Desktop bridge for {where} of SillyTavern at {st.root}.")
        print("Reload SillyTavern's page (F5) to unload it.")
    else:
        print(f"The DLE Desktop bridge is not installed for {where} of SillyTavern at {st.root}; nothing to remove.")
    return 0


def run_st(args: Any) -> int:
    commands = {"find": _find, "status": _status, "install": _install, "remove": _remove}
    return run_command(
        lambda: commands[args.st_command](args), status=ERROR_STATUS, os_error_status=ERROR_STATUS, unexpected=True
    )  # a command line never shows a traceback
