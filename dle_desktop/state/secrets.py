"""API keys live in the OS keyring, or a 0600 file in the private data folder when there is none;
never in settings files or logs.

Three layers, read in this order:
1. keys given for this run: environment variables (`DLE_AI_KEY_<PROFILE ID>`,
   `DLE_VAULT_KEY_<VAULT NAME>`, `DLE_OBSIDIAN_KEY` for `--vault` addresses, `DLE_SECRET_<NAME>`) or a keys file (same names, `NAME=KEY` lines,
   readable only by its owner), for headless `serve` where nobody can type a key;
2. the OS keyring;
3. without a keyring: `secrets.json` (0600) in the data folder, or memory for this session only when
   the store was made without a file. `location` says which, so the UI can tell the user plainly."""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import threading
from collections.abc import Mapping
from pathlib import Path

import keyring
import keyring.errors

from dle_desktop.errors import ConfigError
from dle_desktop.fileio import write_private_atomic
from dle_desktop.logging_setup import register_secret

log = logging.getLogger(__name__)

SERVICE = "dle-desktop"
ENV_PREFIXES = {"ai-profile:": "DLE_AI_KEY_", "vault:": "DLE_VAULT_KEY_"}
OTHER_ENV_PREFIX = "DLE_SECRET_"
#: The key of `--vault http(s)://HOST:PORT` addresses given without one.
CLI_VAULT_SECRET = "cli-obsidian-rest"
CLI_VAULT_ENV = "DLE_OBSIDIAN_KEY"


def env_name(secret_id: str) -> str:
    """The environment variable (and keys-file name) that supplies `secret_id` for one run:
    `ai-profile:openrouter-main` → `DLE_AI_KEY_OPENROUTER_MAIN`."""
    if secret_id == CLI_VAULT_SECRET:
        return CLI_VAULT_ENV
    for prefix, env_prefix in ENV_PREFIXES.items():
        if secret_id.startswith(prefix):
            return env_prefix + _env_part(secret_id[len(prefix) :])
    return OTHER_ENV_PREFIX + _env_part(secret_id)


def _env_part(text: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", text.upper()).strip("_")


def _is_key_name(name: str) -> bool:
    return name == CLI_VAULT_ENV or name.startswith((*ENV_PREFIXES.values(), OTHER_ENV_PREFIX))


def read_keys_file(path: str | os.PathLike) -> dict[str, str]:
    """`NAME=KEY` lines (names as in `env_name`; `#` comments and blank lines allowed). The file
    must not be readable by others: a key that other accounts could read is refused, not used."""
    p = Path(path).expanduser()
    try:
        st = p.stat()
        if os.name == "posix" and stat.S_IMODE(st.st_mode) & 0o077:
            raise ConfigError(
                f"the keys file {p} can be read by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
                f"run: chmod 600 {p}"
            )
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the keys file {p}: {exc.strerror or exc}") from exc
    keys: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not _is_key_name(name) or not value:
            raise ConfigError(
                f"keys file {p}, line {number}: expected NAME=KEY with NAME {CLI_VAULT_ENV} or "
                f"starting with {', '.join((*ENV_PREFIXES.values(), OTHER_ENV_PREFIX))}"
            )
        keys[name] = value
    return keys


def _backend_usable() -> bool:
    backend = keyring.get_keyring()
    name = type(backend).__module__ + "." + type(backend).__name__
    if "fail" in name or "null" in name.lower():
        return False
    try:
        return getattr(backend, "priority", 1) > 0
    except Exception:  # noqa: BLE001 - some backends raise from priority when unusable
        return False


class _SecretFile:
    """The keyring's stand-in: one JSON object, written atomically, 0600."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def _read(self) -> dict[str, str]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning(
                "the keys file %s cannot be read (%s); stored keys are unavailable", self.path, type(exc).__name__
            )
            return {}
        keys = raw.get("keys") if isinstance(raw, dict) else None
        return (
            {k: v for k, v in keys.items() if isinstance(k, str) and isinstance(v, str)}
            if isinstance(keys, dict)
            else {}
        )

    def _write(self, keys: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_private_atomic(self.path, json.dumps({"version": 1, "keys": keys}))

    def get(self, name: str) -> str | None:
        with self._lock:
            return self._read().get(name)

    def set(self, name: str, value: str | None) -> None:
        with self._lock:
            keys = self._read()
            if value is None:
                if keys.pop(name, None) is None:
                    return
            else:
                keys[name] = value
            self._write(keys)


class SecretStore:
    def __init__(
        self, use_keyring: bool | None = None, file_path: Path | None = None, run_keys: Mapping[str, str] | None = None
    ) -> None:
        """`file_path`: where keys go when there is no keyring. `run_keys`: the environment (or a
        keys file's names) to take this run's keys from; only `DLE_*KEY*`/`DLE_SECRET_*` names count."""
        self.use_keyring = _backend_usable() if use_keyring is None else use_keyring
        self._file = None if self.use_keyring or file_path is None else _SecretFile(Path(file_path))
        self.persistent = self.use_keyring or self._file is not None
        self._memory: dict[str, str] = {}
        self._run_keys: dict[str, str] = {}
        self.add_run_keys(run_keys or {})
        if self.use_keyring:
            self.location = "the system keyring"
            self.problem: str | None = None
        elif self._file is not None:
            self.location = f"{self._file.path}, a file only you can read (no system keyring)"
            self.problem = (
                f"No system keyring is available: API keys are stored in {self._file.path}, "
                "a file only your user account can read."
            )
        else:
            self.location = "memory for this session only (no system keyring)"
            self.problem = (
                "No system keyring is available: API keys are kept in memory for this session only "
                "and must be entered again after a restart."
            )

    def add_run_keys(self, keys: Mapping[str, str]) -> None:
        """Keys for this run only (environment, keys file): they win over stored ones."""
        for name, value in keys.items():
            if _is_key_name(name) and value:
                register_secret(value)
                self._run_keys[name] = value

    def get(self, name: str) -> str | None:
        run_key = self._run_keys.get(env_name(name))
        if run_key:
            return run_key
        if name in self._memory:
            return self._memory[name]
        if self._file is not None:
            value = self._file.get(name)
        elif not self.use_keyring:
            return None
        else:
            try:
                value = keyring.get_password(SERVICE, name)
            except keyring.errors.KeyringError as exc:
                log.warning("keyring read failed for %s: %s", name, type(exc).__name__)
                return None
        if value:
            register_secret(value)
        return value

    def held_values(self) -> set[str]:
        """Every key this store can name without a keyring lookup: this run's keys, the ones kept
        in memory, and all of the keys file (diagnostics redacts them wherever they appear)."""
        values = set(self._run_keys.values()) | set(self._memory.values())
        if self._file is not None:
            with self._file._lock:
                values |= set(self._file._read().values())
        return {v for v in values if v}

    def set(self, name: str, value: str) -> None:
        register_secret(value)
        self._run_keys.pop(env_name(name), None)  # a key typed in the app replaces the one given for the run
        try:
            if self.use_keyring:
                keyring.set_password(SERVICE, name, value)
                self._memory.pop(name, None)
                return
            if self._file is not None:
                self._file.set(name, value)
                self._memory.pop(name, None)
                return
        except (keyring.errors.KeyringError, OSError) as exc:
            log.warning("storing the key %s failed (%s); keeping it in memory", name, type(exc).__name__)
        self._memory[name] = value

    def delete(self, name: str) -> None:
        self._memory.pop(name, None)
        self._run_keys.pop(env_name(name), None)
        try:
            if self.use_keyring:
                keyring.delete_password(SERVICE, name)
            elif self._file is not None:
                self._file.set(name, None)
        except (keyring.errors.KeyringError, OSError):
            pass
