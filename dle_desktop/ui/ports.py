"""What the window needs from the composition root (`dle_desktop.app`), as protocols: the UI is
handed objects that satisfy them and never imports the app, the server or the engine's internals
(the engine itself it reaches through `ui.bridge`)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from dle_desktop.state.paths import AppPaths
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import Settings, SettingsStore


class AppContextPort(Protocol):
    """The data folder, the saved settings and the secrets of this run."""

    settings: Settings  # the window saves new settings here once they are stored
    session: Any  # the session's vaults (`ui.bridge.SessionVaults`)

    @property
    def paths(self) -> AppPaths: ...
    @property
    def store(self) -> SettingsStore: ...
    @property
    def secrets(self) -> SecretStore: ...


class EngineThreadPort(Protocol):
    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]: ...


class RuntimePort(Protocol):
    """The running engine thread, engine and servers (`app.runtime.Runtime`)."""

    @property
    def ctx(self) -> AppContextPort: ...
    @property
    def engine(self) -> Any: ...  # the running engine: only `ui.bridge` touches it
    @property
    def thread(self) -> EngineThreadPort: ...
    @property
    def server(self) -> Any: ...  # the lore API's runner (`url`), None while it does not run
    @property
    def server_error(self) -> str | None: ...
    @property
    def olra(self) -> Any: ...  # the emulation's runner (`running`, `error`, `url`...), or None
    @property
    def bridge_monitor(self) -> Any: ...  # what the SillyTavern bridge last told the server

    def start(self) -> object: ...
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


Ctx = TypeVar("Ctx", bound=AppContextPort)


class Composition(Protocol[Ctx]):
    """How the app is put together, handed to `ui.launch.run_gui` by `app.gui`: the context it
    makes is the one it later opens the runtime on."""

    def make_context(self, data_dir: str | None) -> Ctx: ...
    def check_vault_spec(self, spec: str) -> None: ...
    def open_runtime(self, ctx: Ctx, vault_specs: Sequence[str] | None, port: int | None) -> RuntimePort: ...
