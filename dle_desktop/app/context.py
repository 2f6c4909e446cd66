"""What every command starts from: the data folder, the settings, the secrets and an engine on
the chosen vaults, and a one-off index. Kept apart from `runtime` (the server, the Obsidian REST
emulation, the engine thread), so that `index`, `health` and `match` import none of those."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from dle_desktop.engine.engine import Engine, source_from_spec
from dle_desktop.engine.session_vaults import SessionVaults
from dle_desktop.errors import ConfigError
from dle_desktop.logging_setup import configure_logging
from dle_desktop.state.paths import AppPaths, resolve_paths
from dle_desktop.state.secrets import SecretStore, read_keys_file
from dle_desktop.state.settings import Settings, SettingsStore


@dataclass
class AppContext:
    paths: AppPaths
    store: SettingsStore
    settings: Settings
    secrets: SecretStore
    #: Vaults this run opened besides (or instead of) the saved ones: `--vault`, a second launch.
    session: SessionVaults = field(default_factory=SessionVaults)
    _settings_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __setattr__(self, name: str, value: object) -> None:
        # The window replaces `settings` on its thread while the engine thread may be taking new
        # origins from settings.json (`update_settings`): one at a time, so neither is lost.
        if name == "settings" and "_settings_lock" in self.__dict__:
            with self._settings_lock:
                object.__setattr__(self, name, value)
        else:
            object.__setattr__(self, name, value)

    def update_settings(self, change: Callable[[Settings], Settings | None]) -> None:
        """Replace `settings` with `change(settings)` (None: keep them), with no other replacement
        in between."""
        with self._settings_lock:
            changed = change(self.settings)
            if changed is not None:
                object.__setattr__(self, "settings", changed)


def make_context(data_dir: str | None, log_to_stderr: bool = True, keys_file: str | None = None) -> AppContext:
    """`keys_file`: API keys for this run (see `state.secrets.read_keys_file`); the environment's
    DLE_AI_KEY_*/DLE_VAULT_KEY_*/DLE_OBSIDIAN_KEY variables are read too."""
    paths = resolve_paths(data_dir)
    try:
        paths.ensure()
    except OSError as exc:  # e.g. --data-dir names a file, or a folder we may not write
        raise ConfigError(f"cannot use the data folder {paths.data_dir}: {exc.strerror or exc}") from exc
    configure_logging(paths.logs_dir, to_stderr=log_to_stderr)
    store = SettingsStore(paths.settings_file)
    settings = store.load()
    secrets = SecretStore(file_path=paths.secrets_file, run_keys=os.environ)
    if keys_file:
        secrets.add_run_keys(read_keys_file(keys_file))
    return AppContext(paths, store, settings, secrets)


def make_engine(ctx: AppContext, vault_specs: list[str] | None, ai_offline: bool = False) -> Engine:
    override = [source_from_spec(s, ctx.secrets, ctx.settings.vaults) for s in vault_specs] if vault_specs else None
    return Engine(ctx.paths, ctx.settings, ctx.secrets, vault_override=override, ai_offline=ai_offline)


def session_engine(ctx: AppContext, settings: Settings | None = None) -> Engine:
    """An engine on `settings` (default: the context's) that keeps this session's vaults open."""
    settings = settings or ctx.settings
    return Engine(ctx.paths, settings, ctx.secrets, vault_override=ctx.session.sources(settings, ctx.secrets))


def index_once(engine: Engine, force: bool = False):
    """Build (or reconcile from cache) the index once, without watcher or server."""

    async def go():
        engine.indexer.load_cache()
        try:
            return await engine.indexer.sync_all(force=force)
        finally:
            for s in engine.sources:
                await s.close()

    return asyncio.run(go())
