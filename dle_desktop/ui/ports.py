"""What the window needs from the composition root (`dle_desktop.app`), as protocols: the UI is
handed objects that satisfy them and never imports the app, the server or the engine's internals
(the engine itself it reaches through `ui.bridge`)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from dle_desktop.state.paths import AppPaths
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import Settings, SettingsStore


class AppContextPort(Protocol):
    """The data folder, the saved settings and the secrets of this run."""

    paths: AppPaths
    store: SettingsStore
    settings: Settings
    secrets: SecretStore
    session: Any  # the session's vaults (`ui.bridge.SessionVaults`)


class EngineThreadPort(Protocol):
    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]: ...


class ServerPort(Protocol):
    @property
    def url(self) -> str: ...


class OlraPort(Protocol):
    running: bool
    error: str | None


class RuntimePort(Protocol):
    """The running engine thread, engine and servers (`app.runtime.Runtime`)."""

    ctx: AppContextPort
    engine: Any  # the running engine: only `ui.bridge` touches it
    thread: EngineThreadPort
    server: Any
    server_error: str | None
    olra: Any
    bridge_monitor: Any

    def new_session_engine(self, settings: Settings) -> Any: ...
    def replace_engine(self, engine: Any, settings: Settings | None = None) -> None: ...
    def server_needs_restart(self, old: Settings, new: Settings) -> bool: ...
    def olra_needs_restart(self, old: Settings, new: Settings) -> bool: ...
    def restart_server(self) -> None: ...
    def restart_olra(self) -> None: ...
    def refresh_server_access(self) -> None: ...
    def rotate_server_token(self) -> str: ...
    def rotate_olra_key(self) -> str: ...
    def server_token(self) -> str: ...
    def stop(self) -> None: ...


class Composition(Protocol):
    """How the app is put together, handed to `ui.launch.run_gui` by `app.gui`."""

    def make_context(self, data_dir: str | None) -> AppContextPort: ...
    def check_vault_spec(self, spec: str) -> None: ...
    def open_runtime(self, ctx: AppContextPort, vault_specs: Sequence[str] | None, port: int | None) -> RuntimePort: ...
