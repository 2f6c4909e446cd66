"""Finding SillyTavern installs and putting the DLE Desktop bridge extension into them.

No Qt, no server: the CLI (`dle-desktop st ...`) and the settings page both use this module.

Where SillyTavern (1.12 and later) loads a UI extension from, both served as
`/scripts/extensions/third-party/<name>/` (the user's copy wins):

- one user: `<dataRoot>/<user>/extensions/<name>/` (`dataRoot` from config.yaml, default `./data`
  beside server.js; the default user is `default-user`);
- every user: `<install>/public/scripts/extensions/third-party/<name>/`.

An install or update is atomic: the bundled folder is copied into a temporary sibling folder,
`dle-config.json` (server address and token, 0600) is written into it, and the copy is swapped in;
nothing of an older copy survives. The token is a secret: it appears in no message, log line or
`repr`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from dle_desktop import __version__
from dle_desktop.errors import DleError
from dle_desktop.fileio import write_private_atomic
from dle_desktop.state.paths import resources_dir

log = logging.getLogger(__name__)

EXTENSION_NAME = "dle-desktop-bridge"
CONFIG_FILE = "dle-config.json"
MANIFEST_FILE = "manifest.json"
DEFAULT_USER = "default-user"
DEFAULT_PORT = 8000
#: Identifies our manifest (also when the bundled folder is missing).
DISPLAY_NAME = "DLE Desktop bridge"
INTERCEPTOR = "dleDesktopBridgeInterceptor"

SCOPE_USER = "user"
SCOPE_ALL_USERS = "all-users"

#: What marks a folder of the data root as a SillyTavern user (besides not starting with `_` or `.`).
_USER_MARKERS = ("settings.json", "extensions", "chats", "characters", "worlds", "secrets.json", "backups")
#: Never copied from the bundled folder.
_COPY_IGNORE = shutil.ignore_patterns(CONFIG_FILE, ".git", ".DS_Store", "__pycache__", "node_modules", "*.tmp")


class StInstallError(DleError):
    """A SillyTavern folder we cannot use, or an install/remove we refuse. The message says what to do."""

    http_status = 400


# -- the bundled extension ------------------------------------------------------------------------


def bundled_extension_dir() -> Path:
    return resources_dir() / "st_extension" / EXTENSION_NAME


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def bundled_version() -> str:
    manifest = _read_json(bundled_extension_dir() / MANIFEST_FILE)
    version = manifest.get("version") if manifest else None
    if not isinstance(version, str) or not version.strip():
        raise StInstallError(
            f"the bundled SillyTavern extension is missing or has no version "
            f"({bundled_extension_dir() / MANIFEST_FILE}); reinstall DLE Desktop"
        )
    return version.strip()


def _manifest_version(folder: Path) -> str | None:
    manifest = _read_json(folder / MANIFEST_FILE)
    version = manifest.get("version") if manifest else None
    return version if isinstance(version, str) else None


def _is_ours(folder: Path) -> bool:
    """Whether `folder` holds our extension (judged by its manifest, never by its name)."""
    manifest = _read_json(folder / MANIFEST_FILE)
    if not manifest:
        return False
    names = {DISPLAY_NAME}
    bundled = _read_json(bundled_extension_dir() / MANIFEST_FILE)
    if bundled and isinstance(bundled.get("display_name"), str):
        names.add(bundled["display_name"])
    return manifest.get("display_name") in names or manifest.get("generate_interceptor") == INTERCEPTOR


# -- SillyTavern installs -------------------------------------------------------------------------


@dataclass(frozen=True)
class StInstall:
    root: Path
    version: str | None
    data_root: Path
    users: tuple[str, ...]
    port: int = DEFAULT_PORT
    #: config.yaml turns on SillyTavern's own TLS (`ssl: enabled: true`): its pages are https.
    https: bool = False

    def origins(self) -> tuple[str, ...]:
        """The browser origins of SillyTavern's page on this machine (for `server_allowed_origins`)."""
        scheme = "https" if self.https else "http"
        return (f"{scheme}://127.0.0.1:{self.port}", f"{scheme}://localhost:{self.port}")

    @property
    def all_users_dir(self) -> Path:
        return self.root / "public" / "scripts" / "extensions" / "third-party"

    def user_extensions_dir(self, user: str) -> Path:
        return self.data_root / user / "extensions"


def _config(root: Path) -> dict:
    """config.yaml beside server.js; before the first run only default/config.yaml exists."""
    for path in (root / "config.yaml", root / "default" / "config.yaml"):
        if path.is_file():
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                log.warning("cannot read %s (%s); SillyTavern's defaults are assumed", path, exc)
                return {}
            return data if isinstance(data, dict) else {}
    return {}


def _port(value) -> int:
    if isinstance(value, bool):
        return DEFAULT_PORT
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and 0 < value < 65536 else DEFAULT_PORT


def _users(data_root: Path) -> tuple[str, ...]:
    try:
        children = sorted(data_root.iterdir(), key=lambda p: p.name)
    except OSError:
        return ()
    users = []
    for child in children:
        if child.name.startswith(("_", ".")) or not child.is_dir():
            continue
        if any((child / marker).exists() for marker in _USER_MARKERS):
            users.append(child.name)
    if DEFAULT_USER in users:  # the usual one first
        users.remove(DEFAULT_USER)
        users.insert(0, DEFAULT_USER)
    return tuple(users)


def inspect(root: Path) -> StInstall:
    """Read a SillyTavern folder (the one holding server.js); nothing is written."""
    root = Path(root).expanduser()
    not_st = f"{root} is not a SillyTavern folder"
    if not root.is_dir():
        raise StInstallError(f"{not_st} (no such folder); choose the folder that holds SillyTavern's server.js")
    package = _read_json(root / "package.json")
    if not (root / "server.js").is_file() or not package or package.get("name") != "sillytavern":
        raise StInstallError(
            f'{not_st} (no server.js / package.json name "sillytavern"); '
            "choose the folder that holds SillyTavern's server.js"
        )
    root = root.resolve()
    version = package.get("version") if isinstance(package.get("version"), str) else None
    config = _config(root)
    data_root_value = config.get("dataRoot")
    data_root = Path(data_root_value) if isinstance(data_root_value, str) and data_root_value.strip() else Path("data")
    if not data_root.is_absolute():  # SillyTavern chdirs to its own folder before reading it
        data_root = root / data_root
    data_root = Path(os.path.normpath(data_root))
    ssl = config.get("ssl")
    https = isinstance(ssl, dict) and ssl.get("enabled") is True
    return StInstall(
        root=root,
        version=version,
        data_root=data_root,
        users=_users(data_root),
        port=_port(config.get("port")),
        https=https,
    )


def _candidates(extra_dirs: Iterable[Path | str], home: Path | None) -> list[Path]:
    out: list[Path] = []
    for d in extra_dirs:
        if d is None or str(d).strip() == "":
            continue
        p = Path(d).expanduser()
        out += [p, p / "SillyTavern"]  # a launcher folder holding SillyTavern/ works too
    base = Path(home) if home is not None else Path.home()
    out += [
        base / "SillyTavern",
        base / "sillytavern",
        base / "SillyTavern-Launcher" / "SillyTavern",
        base / "Documents" / "SillyTavern",
        base / ".local" / "share" / "SillyTavern",
    ]
    if home is None:
        out.append(Path("/opt/SillyTavern"))
    try:
        out += sorted((base / ".cache" / "dle-desktop").glob("st-*"))
    except OSError:
        pass
    return out


def find_installs(extra_dirs: Iterable[Path | str] = (), home: Path | None = None) -> list[StInstall]:
    """SillyTavern installs in `extra_dirs` (first, in order) and the usual places under `home`
    (default: the user's home; /opt/SillyTavern only then). Each install once, by resolved path;
    folders that are missing or not SillyTavern are skipped."""
    seen: set[Path] = set()
    found: list[StInstall] = []
    for cand in _candidates(extra_dirs, home):
        try:
            if not cand.is_dir():
                continue
            key = cand.resolve()
            if key in seen:
                continue
            st = inspect(cand)
        except (StInstallError, OSError, RuntimeError):
            continue
        seen.add(key)
        found.append(st)
    return found


# -- installed copies -----------------------------------------------------------------------------


@dataclass(frozen=True)
class InstalledBridge:
    install: StInstall
    scope: str  # "user" | "all-users"
    user: str | None
    path: Path
    version: str | None
    server_url: str | None
    has_token: bool

    @property
    def up_to_date(self) -> bool:
        try:
            return self.version == bundled_version()
        except StInstallError:
            return False


def _describe(st: StInstall, scope: str, user: str | None, path: Path) -> InstalledBridge | None:
    if path.is_symlink() or not path.is_dir() or not _is_ours(path):
        return None
    config = _read_json(path / CONFIG_FILE) or {}
    url = config.get("server_url")
    token = config.get("token")
    return InstalledBridge(
        install=st,
        scope=scope,
        user=user,
        path=path,
        version=_manifest_version(path),
        server_url=url if isinstance(url, str) else None,
        has_token=isinstance(token, str) and bool(token),
    )


def installed(st: StInstall) -> list[InstalledBridge]:
    """Every copy of our extension in this install: each user's, then the all-users one."""
    out = []
    users = list(st.users) + [u for u in _users(st.data_root) if u not in st.users]  # users made since
    for user in users:
        found = _describe(st, SCOPE_USER, user, st.user_extensions_dir(user) / EXTENSION_NAME)
        if found:
            out.append(found)
    found = _describe(st, SCOPE_ALL_USERS, None, st.all_users_dir / EXTENSION_NAME)
    if found:
        out.append(found)
    return out


# -- validation -----------------------------------------------------------------------------------


def _check_user(user: str | None) -> str:
    if not isinstance(user, str) or not user:
        raise StInstallError("name a SillyTavern user (e.g. default-user) or choose all users")
    bad = (
        "/" in user
        or "\\" in user
        or "\0" in user
        or ".." in user
        or user.startswith(("_", "."))
        or user != user.strip()
        or any(ord(c) < 32 for c in user)
        or len(user) > 255
    )
    if bad:
        raise StInstallError(
            f"{user!r} is not a SillyTavern user name: use the plain folder name of the user "
            "(e.g. default-user), without /, \\, .. and not starting with _ or ."
        )
    return user


def _shown(url: str) -> str:
    """An address fit for a message: a user name or password in it is hidden, long ones cut."""
    return repr(re.sub(r"//[^/?#]*@", "//***@", url)[:200])


def _check_url(server_url: str) -> str:
    if not isinstance(server_url, str) or not server_url.strip():
        raise StInstallError("the DLE Desktop server address is empty; give one like http://127.0.0.1:8765")
    url = server_url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError:
        raise StInstallError(f"{_shown(url)} is not a server address like http://127.0.0.1:8765") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or re.search(r"\s", url):
        raise StInstallError(f"{_shown(url)} is not a server address like http://127.0.0.1:8765 (http or https)")
    if parts.username is not None or parts.password is not None:
        raise StInstallError(
            "the server address must not contain a user name or password; give one like http://127.0.0.1:8765"
        )
    if parts.query or parts.fragment:
        raise StInstallError(
            "the server address must not have a query or fragment: give one like http://127.0.0.1:8765"
        )
    return url.rstrip("/")


def _check_token(token: str) -> str:
    if not isinstance(token, str) or not token.strip():
        raise StInstallError("the server token is empty; run `dle-desktop server-token` to create one")
    if any(ord(c) < 33 or ord(c) == 127 for c in token):  # the message never shows the token
        raise StInstallError("the server token contains spaces or control characters; create a new one")
    return token


def _inside(path: Path, base: Path) -> bool:
    try:
        path.relative_to(base)
        return True
    except ValueError:
        return False


def _check_links(base: Path, target: Path, what: str) -> None:
    """Refuse when a folder between `base` and `target` (or `target` itself) is a symbolic link
    that leads out of `base`, or when `target` is a link at all (we never replace through one)."""
    real_base = base.resolve()
    current = base
    for part in target.relative_to(base).parts:
        current = current / part
        if not current.is_symlink():
            continue
        dest = current.resolve()
        if current == target:
            raise StInstallError(
                f"{current} is a symbolic link (to {dest}); DLE Desktop does not replace links: "
                "remove the link, then install again"
            )
        if not _inside(dest, real_base):
            raise StInstallError(
                f"{current} is a symbolic link to {dest}, outside {what} {base}; "
                "DLE Desktop does not write through it: remove the link or install elsewhere"
            )


def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)


def _target(st: StInstall, user: str | None, all_users: bool) -> tuple[str, str | None, Path, Path, str]:
    """(scope, user, target folder, base folder it must stay in, what the base is)."""
    if all_users:
        return SCOPE_ALL_USERS, None, st.all_users_dir / EXTENSION_NAME, st.root, "the SillyTavern folder"
    user = _check_user(user)
    return SCOPE_USER, user, st.user_extensions_dir(user) / EXTENSION_NAME, st.data_root, "the data folder"


def _still_st(st: StInstall) -> None:
    inspect(st.root)  # raises when the folder is gone or no longer SillyTavern


# -- writing --------------------------------------------------------------------------------------


def write_config(target_dir: Path, *, server_url: str, token: str) -> None:
    """Write `dle-config.json` (the server address and token the extension uses) into `target_dir`,
    atomically and readable by the user only."""
    url = _check_url(server_url)
    token = _check_token(token)
    target_dir = Path(target_dir)
    if target_dir.is_symlink() or not target_dir.is_dir():
        raise StInstallError(f"{target_dir} is not a folder of the DLE Desktop bridge")
    data = json.dumps(
        {
            "server_url": url,
            "token": token,
            "written_by": f"DLE Desktop {__version__}",
            "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        indent=2,
    )
    try:
        write_private_atomic(target_dir / CONFIG_FILE, data + "\n")
    except OSError as exc:
        raise StInstallError(
            f"cannot write {target_dir / CONFIG_FILE}: {exc.strerror or type(exc).__name__}; "
            "check that you may write to that folder"
        ) from None


def _rmtree_quiet(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _ignore_with_manifest(folder: str, names: list[str]) -> set[str]:
    skip = set(_COPY_IGNORE(folder, names))
    if Path(folder) == bundled_extension_dir():
        skip.add(MANIFEST_FILE)
    return skip


def _discard(folder: Path) -> None:
    """Delete a copy set aside: its manifest first, so a leftover is not loaded as an extension."""
    try:
        (folder / MANIFEST_FILE).unlink()
    except OSError:
        pass
    _rmtree_quiet(folder)


_LEFTOVER = re.compile(rf"\.{re.escape(EXTENSION_NAME)}\.(new|old)-[0-9a-f]{{8}}")


def _sweep(parent: Path) -> None:
    """Remove what an interrupted install or remove left beside the copy (only our own names)."""
    try:
        leftovers = [p for p in parent.iterdir() if _LEFTOVER.fullmatch(p.name) and not p.is_symlink() and p.is_dir()]
    except OSError:
        return
    for p in leftovers:
        _discard(p)


def _undo(tmp: Path, created: list[Path]) -> None:
    """A failed install leaves nothing: its temporary copy and the folders it made for it."""
    _rmtree_quiet(tmp)
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:
            pass


def install(
    st: StInstall, *, server_url: str, token: str, user: str | None = DEFAULT_USER, all_users: bool = False
) -> InstalledBridge:
    """Install or update the bridge for one user (default) or, `all_users`, for every user of the
    install. Everything is checked before anything is written; a refusal writes nothing."""
    url = _check_url(server_url)
    token = _check_token(token)
    scope, user, target, base, what = _target(st, user, all_users)
    _still_st(st)
    source = bundled_extension_dir()
    version = bundled_version()
    if not (source / MANIFEST_FILE).is_file():
        raise StInstallError(f"the bundled extension is missing ({source}); reinstall DLE Desktop")

    if scope == SCOPE_USER and not st.data_root.is_dir():
        raise StInstallError(
            f"SillyTavern's data folder {st.data_root} does not exist yet: start SillyTavern once, then install again"
        )
    if scope == SCOPE_ALL_USERS and not target.parent.parent.is_dir():
        raise StInstallError(f"{target.parent.parent} does not exist: this SillyTavern install is incomplete")
    _check_links(base, target, what)
    if target.is_dir():
        if not _is_ours(target):
            raise StInstallError(f"{target} exists and is not the DLE Desktop bridge; move it away, then install again")
    elif target.exists():
        raise StInstallError(f"{target} exists and is not a folder; move it away, then install again")

    # the folder that will hold the copy: the nearest existing one must be writable
    parent = target.parent
    existing = parent
    while not existing.exists():
        existing = existing.parent
    if not _writable(existing) or (target.is_dir() and not _writable(target)):
        raise StInstallError(
            f"cannot write to {existing}: you may not change that folder; install with a user "
            "who may, or choose another scope"
        )

    created: list[Path] = []  # folders we made, removed again on failure
    tmp = parent / f".{EXTENSION_NAME}.new-{uuid.uuid4().hex[:8]}"
    old = parent / f".{EXTENSION_NAME}.old-{uuid.uuid4().hex[:8]}"
    try:
        for folder in reversed([p for p in (parent, parent.parent) if not p.exists()]):
            folder.mkdir()
            created.append(folder)
        _sweep(parent)
        # SillyTavern lists every folder with a manifest.json (dot names too): the manifest goes in
        # last, and an old copy loses it first, so a page loaded meanwhile never sees two bridges
        shutil.copytree(source, tmp, symlinks=False, ignore=_ignore_with_manifest)
        write_config(tmp, server_url=url, token=token)
        shutil.copyfile(source / MANIFEST_FILE, tmp / MANIFEST_FILE)
        if target.is_dir():
            os.rename(target, old)
            try:
                os.rename(tmp, target)
            except OSError:
                os.rename(old, target)
                raise
            _discard(old)
        else:
            os.rename(tmp, target)
    except (OSError, shutil.Error) as exc:
        _undo(tmp, created)
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise StInstallError(f"cannot install into {target}: {reason}; nothing was changed") from None
    except StInstallError:
        _undo(tmp, created)
        raise
    log.info("installed the DLE Desktop bridge %s into %s", version, target)
    return InstalledBridge(
        install=st,
        scope=scope,
        user=user,
        path=target,
        version=_manifest_version(target),
        server_url=url,
        has_token=True,
    )


def remove(st: StInstall, *, user: str | None = DEFAULT_USER, all_users: bool = False) -> bool:
    """Delete our copy for the user (or the all-users one). False when there was none; refuses
    a folder of that name that is not ours, or a link."""
    _scope, user, target, base, what = _target(st, user, all_users)
    _check_links(base, target, what)  # a link as the target is refused here too
    if not target.exists():
        return False
    if not target.is_dir() or not _is_ours(target):
        raise StInstallError(
            f"{target} is not the DLE Desktop bridge (its manifest.json is not ours); it was left untouched"
        )
    if not _writable(target.parent):
        raise StInstallError(f"cannot remove {target}: you may not change {target.parent}")
    old = target.parent / f".{EXTENSION_NAME}.old-{uuid.uuid4().hex[:8]}"
    try:
        os.rename(target, old)  # SillyTavern never sees half a folder
    except OSError as exc:
        raise StInstallError(f"cannot remove {target}: {exc.strerror or type(exc).__name__}") from None
    _discard(old)
    _sweep(target.parent)
    log.info("removed the DLE Desktop bridge from %s", target)
    return True


def rewrite_token(installs: Iterable[StInstall], token: str) -> int:
    """Write a new token into every installed copy (keeping its server address); returns how many
    were rewritten. Copies whose config has no valid address are skipped; a copy that cannot be
    written is reported after all the others were done."""
    token = _check_token(token)
    done = 0
    failed: list[str] = []
    seen: set[Path] = set()
    for st in installs:
        for copy in installed(st):
            if copy.path in seen:
                continue
            seen.add(copy.path)
            kept_url = copy.server_url or ""
            try:
                _check_url(kept_url)
            except StInstallError:
                continue  # no address to keep: installing again writes one
            try:
                write_config(copy.path, server_url=kept_url, token=token)
            except StInstallError:
                failed.append(str(copy.path))
                continue
            done += 1
    if failed:
        raise StInstallError(
            f"the new token was written to {done} copies of the bridge but not to "
            f"{', '.join(failed)}; install the bridge there again"
        )
    return done
