"""What the OLRA emulation serves: one folder vault, or the merged view of every enabled folder
vault, read straight from disk. Plain blocking functions: the app runs them in worker threads.

Merged view: a listing is the union of the folder in every vault; a file present in several
vaults is read from the first (the order of the Vaults settings page, primary first); a write goes
to the vault that has the file, else to the primary one."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from dle_desktop.olra.paths import PathRefused, VaultPath, confine, real_root
from dle_desktop.vault.note_files import replace_note
from dle_desktop.vault.sources import FolderSource, VaultSource


class VaultUnavailable(Exception):
    """Nothing can be served right now (503): no such vault, or its folder is gone."""


@dataclass(frozen=True)
class ServedVault:
    name: str
    root: Path
    real: str  # the folder's real path, symlinks resolved


@dataclass(frozen=True)
class ServedVaults:
    """The vaults behind the API, primary first. `problem` says why there are none;
    `read_only` (with its reason) refuses writes (the bundled sample vault)."""

    vaults: tuple[ServedVault, ...]
    problem: str | None = None
    read_only: str | None = None

    @property
    def label(self) -> str:
        """The name `GET /` reports for what is served."""
        if len(self.vaults) == 1:
            return self.vaults[0].name
        return f"DLE Desktop ({len(self.vaults)} vaults)" if self.vaults else "DLE Desktop (no vault)"

    def check(self) -> None:
        if self.problem:
            raise VaultUnavailable(self.problem)


class OlraIndexer(Protocol):
    @property
    def sources(self) -> Sequence[VaultSource]: ...


class OlraEngine(Protocol):
    """What the emulation reads of an engine: its open vaults. An engine may also say
    `using_sample_vault` (then it is served read-only) and offer `note_written(vault, paths)` (then
    a PUT is in the index before it is answered); `engine.Engine` does both."""

    @property
    def indexer(self) -> OlraIndexer: ...


def served_vaults(engine: OlraEngine | None, vault_name: str = "") -> ServedVaults:
    """The folder vaults `engine` has open and enabled (`vault_name` = one of them; "" = all)."""
    if engine is None:
        return ServedVaults((), "DLE Desktop is starting; try again in a moment")
    sources = [s for s in engine.indexer.sources if isinstance(s, FolderSource) and s.enabled]
    if vault_name:
        chosen = [s for s in sources if s.name == vault_name]
        if not chosen:
            names = ", ".join(repr(s.name) for s in sources) or "none"
            return ServedVaults(
                (),
                f"no enabled folder vault is named {vault_name!r} (setting olra_vault); "
                f"folder vaults open now: {names}",
            )
        sources = chosen
    if not sources:
        return ServedVaults((), "no folder vault is open: the Obsidian REST emulation serves folder vaults only")
    read_only = None
    if getattr(engine, "using_sample_vault", False):
        read_only = (
            "the bundled sample vault is read-only; add your own vault folder in DLE Desktop's Settings to write notes"
        )
    return ServedVaults(tuple(ServedVault(s.name, s.root, real_root(s.root)) for s in sources), None, read_only)


def _js_sort_key(name: str) -> bytes:
    # JavaScript's Array.prototype.sort compares UTF-16 code units, as OLRA's listing does.
    return name.encode("utf-16-be", "surrogatepass")


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def list_folder(served: ServedVaults, path: VaultPath) -> list[str] | None:
    """The names directly in the folder (sub-folders with a trailing '/'), sorted like OLRA;
    hidden names and symbolic links that lead outside the vault are left out. None when the
    folder exists in no served vault (a 404). The root of an empty vault is `[]`."""
    served.check()
    if path.hidden:
        return None
    names: set[str] = set()
    found = False
    refused: PathRefused | None = None
    for vault in served.vaults:
        try:
            folder = confine(vault.real, path.parts)
        except PathRefused as exc:
            refused = refused or exc
            continue
        try:
            with os.scandir(folder) as it:
                items = list(it)
        except FileNotFoundError:
            if not path.parts:
                raise VaultUnavailable(f"the folder of vault {vault.name!r} does not exist: {vault.root}") from None
            continue
        except NotADirectoryError:
            continue
        except PermissionError:
            continue
        found = True
        for item in items:
            if item.name.startswith("."):
                continue
            try:
                if item.is_symlink() and not _inside(os.path.realpath(item.path), vault.real):
                    continue
                if item.is_dir():
                    names.add(item.name + "/")
                elif item.is_file():
                    names.add(item.name)
            except OSError:
                continue
    if not found:
        if refused is not None:
            raise refused
        return None
    return sorted(names, key=_js_sort_key)


def find_file(served: ServedVaults, path: VaultPath) -> tuple[ServedVault, str] | None:
    """(vault, real path) of the first served vault holding the file, else None (hidden paths
    included: they are not part of the vault, as in Obsidian). PathRefused(403) when the path
    leads out of the vault through a symlink."""
    served.check()
    if path.hidden or not path.parts:
        return None
    refused: PathRefused | None = None
    for vault in served.vaults:
        try:
            real = confine(vault.real, path.parts)
        except PathRefused as exc:
            refused = refused or exc
            continue
        if os.path.isfile(real):
            return vault, real
    if refused is not None:
        raise refused
    return None


def read_file(real: str) -> bytes | None:
    """The file's bytes, or None when it vanished (or turned into a folder) since it was found."""
    try:
        with open(real, "rb") as fh:
            return fh.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def find_and_read(served: ServedVaults, path: VaultPath) -> bytes | None:
    """`find_file` then `read_file` in one worker-thread hop: the file's bytes, or None (404)."""
    found = find_file(served, path)
    return None if found is None else read_file(found[1])


class PutRefused(Exception):
    def __init__(self, status: int, message: str, error_code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_code = error_code or status * 100


def write_file(served: ServedVaults, path: VaultPath, data: bytes) -> tuple[ServedVault, set[str]]:
    """Write `data` as the whole file, atomically (through the writer's `note_files.replace_note`,
    the one way notes are written); missing parent folders are made. Returns
    the vault written to and the vault-relative paths that changed (the requested one, and the
    real one when a symlink inside the vault pointed elsewhere in it)."""
    served.check()
    if served.read_only:
        raise PutRefused(403, served.read_only)
    if path.is_dir or not path.parts:
        raise PutRefused(405, "Request method is valid only for files: PUT a file's path, not a folder's", 40510)
    if path.hidden:
        raise PutRefused(
            403,
            "DLE Desktop does not write hidden files or folders (names starting with '.', such as .obsidian or .git)",
        )
    target_vault = served.vaults[0]
    for vault in served.vaults:
        try:
            if os.path.lexists(os.path.join(vault.real, *path.parts)):
                target_vault = vault
                break
        except OSError:
            continue
    try:
        real = confine(target_vault.real, path.parts)
    except PathRefused as exc:
        raise PutRefused(exc.status, exc.message) from None
    if os.path.isdir(real):
        raise PutRefused(405, f"{path.rel} is a folder; PUT writes files only", 40510)
    parent = os.path.dirname(real)
    try:
        os.makedirs(parent, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise PutRefused(400, f"a part of {path.rel} is a file, not a folder") from None
    except OSError as exc:
        raise PutRefused(500, f"cannot make the folder for {path.rel}: {exc.strerror or exc}") from None
    # The parent may itself be a symlink made between the check and now: check again.
    if not _inside(os.path.realpath(parent), target_vault.real):
        raise PutRefused(403, "the path leads outside the vault folder (through a symbolic link); nothing written")
    try:
        replace_note(real, data)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT if hasattr(errno, "EDQUOT") else errno.ENOSPC):
            raise PutRefused(507, f"the disk is full; {path.rel} was not written") from None
        raise PutRefused(500, f"{path.rel} could not be written: {exc.strerror or exc}") from None
    changed = {path.rel}
    real_rel = os.path.relpath(real, target_vault.real).replace(os.sep, "/")
    changed.add(real_rel)
    return target_vault, changed
