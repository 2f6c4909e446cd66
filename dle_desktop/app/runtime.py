"""Composition root: paths → logging → settings → engine → (GUI | headless)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import logging
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dle_desktop.app.context import AppContext, session_engine
from dle_desktop.core.user_activity import GiveWay
from dle_desktop.engine.engine import Engine
from dle_desktop.engine.settings_apply import ACCESS_FIELDS, WRITER_SWITCH_FIELDS, followed_change
from dle_desktop.engine.settings_follow import SettingsFileFollower
from dle_desktop.engine.thread import EngineThread
from dle_desktop.errors import ConfigError, DleError, NotAvailableHere
from dle_desktop.st_bridge.monitor import BridgeMonitor
from dle_desktop.state.settings import Settings

if TYPE_CHECKING:
    from dle_desktop.olra import OlraRunner
    from dle_desktop.server.app import ServerRunner

# The HTTP server and the Obsidian REST emulation are imported when they start, not with this
# module: the window shows first (a second or so of imports later), and `index` never needs them.

log = logging.getLogger(__name__)


#: The server's imports, a piece at a time, in the order they load: together they hold the
#: interpreter lock 0.4-0.6 s, each of these 20-150 ms.
SERVER_IMPORT_STEPS = (
    "uvicorn",
    "starlette.applications",
    "pydantic",
    "numpy",
    "httpx",
    "dle_desktop.server.schemas",
    "dle_desktop.server.routes_ai",
    "dle_desktop.server.routes_vector",
    "dle_desktop.server.routes_embeddings",
    "dle_desktop.server.app",
)


def import_server_in_steps(give_way: GiveWay) -> None:
    """Import the HTTP server piece by piece, giving way to a window's user before each piece
    (`core.user_activity`): in one go, its imports met the first clicks after a restart. With no
    window nothing waits."""
    for name in SERVER_IMPORT_STEPS:
        give_way()
        importlib.import_module(name)


class Runtime:
    """The engine and its HTTP server running on the engine thread: shared by GUI and headless."""

    def __init__(
        self, ctx: AppContext, engine: Engine, host: str | None = None, port: int | None = None, serve: bool = True
    ) -> None:
        self.ctx = ctx
        self.engine = engine
        self.thread = EngineThread()
        self.server: ServerRunner | None = None
        self.server_error: str | None = None
        #: What the SillyTavern bridge extension last told the server; outlives engines and servers.
        self.bridge_monitor = BridgeMonitor()
        #: `--port`: wins over the saved port (and runs the server) until a port is chosen in Settings.
        self.port_override = port
        self._serve_allowed = serve
        self._host = host or ctx.settings.server_host
        self._port = ctx.settings.server_port if port is None else port
        self._serve = self.should_serve(ctx.settings)
        #: The Obsidian REST emulation (its own thread and loop), or None while `olra_enabled` is off.
        #: A runner that could not start stays here with `.running` False and `.error` saying why.
        self.olra: OlraRunner | None = None
        #: Allowed hosts and origins that other processes (`dle-desktop st install`) write into
        #: settings.json apply at once; nothing else of the file is taken while running.
        self.settings_follower = SettingsFileFollower(ctx.store, self._take_followed_settings)
        self._following: concurrent.futures.Future[None] | None = None
        #: set by `stop`: a start still under way (its server imports give way to the user) ends there
        self._stopped = threading.Event()

    def start(self) -> Runtime:
        self.thread.start()
        self.thread.call(self.engine.start(), timeout=60)
        self._following = self.thread.submit(self.settings_follower.follow())
        if self._serve:
            import_server_in_steps(self.engine.activity.give_way)
            if self._stopped.is_set():  # quit while the imports gave way to the user: start nothing more
                return self
            self.server = self._server_runner()
            try:
                self.thread.call(self.server.start(), timeout=30)
            except DleError as exc:
                self.server_error = str(exc)
                self.server = None
                log.error("%s", exc)
            except (RuntimeError, concurrent.futures.TimeoutError):
                if not self._stopped.is_set():
                    raise
                return self  # stopped under the server's start: its loop is gone
        if not self._stopped.is_set():
            self.restart_olra()
        return self

    def new_session_engine(self, settings: Settings) -> Engine:
        """An engine on `settings` that keeps this session's vaults open (not started yet)."""
        return session_engine(self.ctx, settings)

    def server_token(self) -> str:
        """The token LAN clients and listed web pages send (created on first use)."""
        from dle_desktop.server.security import server_token

        return server_token(self.ctx.secrets)

    def olra_key(self) -> str:
        """The API key DeepLore Enhanced sends to the Obsidian REST emulation (created on first use)."""
        from dle_desktop.olra import olra_key

        return olra_key(self.ctx.secrets)

    def olra_cert_path(self) -> Path | None:
        """The emulation's HTTPS certificate, once one has been made."""
        from dle_desktop.olra import cert_path

        return cert_path(self.ctx.paths)

    def replace_engine(self, engine: Engine, settings: Settings | None = None) -> None:
        """Stop the current engine and start `engine` in its place; the server keeps its port."""
        old = self.engine

        async def swap() -> None:
            await old.stop()
            if self.server is not None:
                self.server.set_engine(engine)
            if self.olra is not None:
                self.olra.set_engine(engine)
            await engine.start()

        self.engine = engine
        if settings is not None:
            self.ctx.settings = settings
        self.thread.call(swap(), timeout=60)

    def should_serve(self, settings: Settings) -> bool:
        return self._serve_allowed and (settings.server_enabled or self.port_override is not None)

    def server_needs_restart(self, old: Settings, new: Settings) -> bool:
        """Whether applying `new` must (re)start the server: its options changed, or it should be
        running and is not (its port was busy, and may be free now). A port changed in Settings
        replaces `--port` from then on."""
        if old.server_port != new.server_port:
            self.port_override = None
        changed = (old.server_port, old.server_host, old.server_enabled) != (
            new.server_port,
            new.server_host,
            new.server_enabled,
        )
        return changed or (self.server is None and self.should_serve(new))

    def restart_server(self) -> None:
        """Apply changed server settings (or retry a busy port): stop the server and start it again."""
        if self.server is not None:
            self.thread.call(self.server.stop(), timeout=15)
            self.server = None
        self.server_error = None
        settings = self.ctx.settings
        if not self.should_serve(settings):
            return
        self._host = settings.server_host
        self._port = settings.server_port if self.port_override is None else self.port_override
        server = self._server_runner()
        try:
            self.thread.call(server.start(), timeout=30)
            self.server = server
        except DleError as exc:
            self.server_error = str(exc)
            log.error("%s", exc)

    def olra_needs_restart(self, old: Settings, new: Settings) -> bool:
        """Whether applying `new` must (re)start the Obsidian REST emulation: its options changed,
        or it should run and does not (a busy port may be free now)."""
        from dle_desktop.engine.settings_apply import OLRA_FIELDS

        changed = any(getattr(old, name) != getattr(new, name) for name in OLRA_FIELDS)
        return changed or (new.olra_enabled and (self.olra is None or not self.olra.running))

    def restart_olra(self) -> None:
        """Stop the Obsidian REST emulation and start it again with the current settings (or not at
        all when `olra_enabled` is off). Only this server restarts; blocking, from any thread."""
        if self.olra is not None:
            self.olra.stop()
            self.olra = None
        settings = self.ctx.settings
        if not (self._serve_allowed and settings.olra_enabled):
            return
        from dle_desktop.olra import OlraRunner

        runner = OlraRunner.from_settings(self.engine, self.ctx.secrets, self.ctx.paths, settings)
        runner.start()
        self.olra = runner

    def rotate_olra_key(self) -> str:
        """A new Obsidian REST emulation API key, in use at once by the running emulation (the old
        key gets 401 from the next request on); returns it. DLE's vault must be given the new one."""
        from dle_desktop.olra import rotate_olra_key

        return rotate_olra_key(self.ctx.secrets)

    def refresh_server_access(self) -> None:
        """The running server takes the engine's allowed hosts and origins now (no restart)."""
        server = self.server
        if server is None:
            return

        async def refresh() -> None:
            server.refresh_access()

        if self.thread.alive:
            self.thread.call(refresh(), timeout=15)
        else:
            server.refresh_access()

    def _server_runner(self) -> ServerRunner:
        from dle_desktop.server.app import ServerRunner

        return ServerRunner(
            self.engine,
            self._host,
            self._port,
            bridge_monitor=self.bridge_monitor,
            access_recheck=self.settings_follower.check,
            switch_writers=self.switch_writers,
        )

    async def _take_followed_settings(self, on_disk: Settings) -> None:
        """The allowed hosts and origins and the writers' switches settings.json holds now,
        applied the way the window applies them (`settings_apply.FOLLOWED_FIELDS`): the context's
        settings (the window's views show them), the engine's, then the server's rules. On the
        engine thread."""
        follower = self.settings_follower
        # Only if the file is still the one read: a save by the window meanwhile wins.
        self.ctx.update_settings(lambda current: followed_change(current, on_disk) if follower.unchanged() else None)
        before = self.engine.settings
        wanted = followed_change(before, on_disk)
        if wanted is None or not follower.unchanged():
            return
        await self.engine.apply_settings(wanted)
        if any(getattr(before, name) != getattr(wanted, name) for name in ACCESS_FIELDS):
            if self.server is not None:
                self.server.refresh_access()
            log.info(
                "settings.json changed: the server takes its allowed web pages (%s) and host names (%s) now",
                ", ".join(wanted.server_allowed_origins) or "none",
                ", ".join(wanted.server_allowed_hosts) or "none listed",
            )

    async def switch_writers(self, changes: Mapping[str, Any]) -> None:
        """SillyTavern's bridge panel turned a writer on or off (PUT /api/dle/v1/writers): saved
        into settings.json, then taken as any outside change of the file is. A file that cannot
        be read is left as it is (ConfigError says why)."""
        unknown = set(changes) - WRITER_SWITCH_FIELDS
        if unknown:
            raise ValueError(f"not a writer switch: {', '.join(sorted(unknown))}")
        store = self.ctx.store
        try:
            on_disk = await asyncio.to_thread(store.read_current)
        except ConfigError as exc:
            raise NotAvailableHere(
                f"DLE Desktop's settings file {store.path} cannot be read ({exc}); nothing was changed. "
                "Fix the file, or change the setting in DLE Desktop's Settings"
            ) from None
        base = on_disk if on_disk is not None else self.ctx.settings
        await asyncio.to_thread(store.save, base.replace(**changes))
        await self.settings_follower.check()

    def rotate_server_token(self) -> str:
        """A new server token, in use by the running server at once (the old one is refused from
        the next request on); returns it. Runs on the engine thread, between requests."""
        from dle_desktop.server.security import rotate_server_token

        secrets = self.engine.secrets

        async def rotate() -> str:
            return rotate_server_token(secrets)

        if not self.thread.alive:
            return rotate_server_token(secrets)
        return self.thread.call(rotate(), timeout=15)

    def stop(self) -> None:
        self._stopped.set()
        if not self.thread.alive:
            return
        if self._following is not None:
            self._following.cancel()
        try:
            if self.olra is not None:
                self.olra.stop()
            if self.server is not None:
                self.thread.call(self.server.stop(), timeout=15)
            self.thread.call(self.engine.stop(), timeout=15)
        except Exception:
            log.exception("error while stopping")
        finally:
            self.thread.stop()


def run_headless(ctx: AppContext, engine: Engine, host: str | None, port: int | None) -> int:
    # `serve` always serves: settings' server_enabled switch is for the GUI (with port=None,
    # Runtime honours it, and a disabled server here meant "error: None" and exit 2).
    runtime = Runtime(ctx, engine, host, ctx.settings.server_port if port is None else port, serve=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    runtime.start()
    if runtime.server is None:
        print(f"error: {runtime.server_error}", file=sys.stderr, flush=True)
        runtime.stop()
        return 2
    print(f"listening on {runtime.server.url}", flush=True)
    if runtime.olra is not None:
        olra = runtime.olra
        print(
            f"Obsidian REST emulation on {olra.url}" + (f" and {olra.https_url}" if olra.https_url else "")
            if olra.running
            else f"Obsidian REST emulation not started: {olra.error}",
            flush=True,
        )
    try:
        while not stop.wait(0.5):
            pass
    finally:
        runtime.stop()
        print("stopped", flush=True)
    return 0
