"""The OLRA emulation's server: its own thread, its own asyncio loop, uvicorn on sockets we bind
ourselves (a busy port is a clear message, not uvicorn's sys.exit). Listing and reading run in
that loop's worker threads, so a heavy DLE index build never stalls the GUI or the lore API,
which live on other threads."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import socket
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from dle_desktop.http_limits import ServerLimits, protocol_class, server_config
from dle_desktop.olra.app import OlraApp
from dle_desktop.olra.cert import ensure_certificate
from dle_desktop.olra.keys import KeyHolder
from dle_desktop.olra.vaults import OlraEngine, ServedVaults, served_vaults
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_PORT = 27123
DEFAULT_HTTPS_PORT = 27124


@dataclass(frozen=True)
class OlraLimits:
    backlog: int = 512
    keep_alive_timeout: int = 30
    #: Sockets held at once (the longest-idle one makes room past it) and the time a client has
    #: to send its headers: a page or program that opens sockets and never finishes a request
    #: cannot run the process out of file descriptors (as for the lore server, http_limits.py).
    #: DLE sends 50 GETs at once per batch (a browser over ~6 connections, a script over 50).
    max_connections: int = 384
    header_timeout: float = 15.0
    #: Worker threads for file reads and listings (this server's own pool).
    io_threads: int = 32


class OlraRunner:
    """Start with `start()` (blocking, from any thread; returns whether it runs), stop with
    `stop()`. `url` / `https_url` say where it listens, `running` whether it does, `error` why
    not (a busy port, in words), or what is wrong with the vault it should serve."""

    def __init__(
        self,
        engine: OlraEngine,
        secrets: SecretStore,
        paths: AppPaths,
        *,
        port: int = DEFAULT_PORT,
        https: bool = False,
        https_port: int = DEFAULT_HTTPS_PORT,
        vault: str = "",
        host: str = "127.0.0.1",
        limits: OlraLimits = OlraLimits(),
    ) -> None:
        self.engine = engine
        self.secrets = secrets
        self.paths = paths
        self.host = host
        self.port = port
        self.https = https
        self.https_port = https_port
        self.vault = vault
        self.limits = limits
        self.key = KeyHolder(secrets)
        self._start_error: str | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._servers: list[uvicorn.Server] = []
        self._tasks: list[asyncio.Task] = []
        self._served: tuple[object, ServedVaults] | None = None
        self._cert_pem: bytes | None = None
        self.cert_file: Path | None = None
        self.app: OlraApp | None = None

    @classmethod
    def from_settings(cls, engine: OlraEngine, secrets: SecretStore, paths: AppPaths, settings: Settings) -> OlraRunner:
        return cls(
            engine,
            secrets,
            paths,
            port=settings.olra_port,
            https=settings.olra_https,
            https_port=settings.olra_https_port,
            vault=settings.olra_vault,
        )

    # -- what the app page shows ------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def https_url(self) -> str | None:
        return f"https://{self.host}:{self.https_port}" if self.https else None

    @property
    def running(self) -> bool:
        return bool(self._servers) and all(s.started and not s.should_exit for s in self._servers)

    @property
    def error(self) -> str | None:
        """Why the server could not start, or, while it runs, why it serves nothing (e.g. the
        vault named in olra_vault is not open); None when all is well."""
        if self._start_error:
            return self._start_error
        if self.running:
            return self.served().problem
        return None

    def connection_values(self) -> dict:
        """What to type into DLE's vault settings (without the key: `olra_key(secrets)`)."""
        return {
            "host": "127.0.0.1",
            "port": self.https_port if self.https else self.port,
            "https": self.https,
            "http_port": self.port,
            "https_port": self.https_port if self.https else None,
        }

    # -- serving ----------------------------------------------------------------------------
    def served(self) -> ServedVaults:
        """What is served now; recomputed when the engine is replaced."""
        engine = self.engine
        cached = self._served
        if cached is None or cached[0] is not engine:
            cached = (engine, served_vaults(engine, self.vault))
            self._served = cached
        return cached[1]

    def set_engine(self, engine: OlraEngine) -> None:
        """Serve another engine's vaults from now on (after the vault configuration changed)."""
        self.engine = engine

    async def _on_written(self, vault: str, paths: set[str]) -> None:
        engine = self.engine
        submit = getattr(engine, "note_written", None)
        future = submit(vault, paths) if submit is not None else None
        if future is not None:
            await asyncio.wrap_future(future)

    def _bind(self, port: int, what: str) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, port))
        except OSError as exc:
            sock.close()
            raise OSError(
                f"the Obsidian REST emulation cannot listen on {self.host}:{port} ({what}): "
                f"{exc.strerror or exc}; another program (Obsidian with its Local REST API plugin?) "
                "may be using it: close it or choose another port"
            ) from exc
        sock.listen(self.limits.backlog)
        sock.setblocking(False)
        return sock

    def start(self, timeout: float = 30.0) -> bool:
        """Bind, start serving on a new thread, and return whether it runs (else see `error`)."""
        if self._thread is not None:
            return self.running
        self._start_error = None
        socks: list[tuple[socket.socket, ssl.SSLContext | None]] = []
        try:
            if self.https and self.https_port == self.port and self.port != 0:
                raise OSError(
                    f"the HTTP and HTTPS ports of the Obsidian REST emulation are both {self.port}; "
                    "choose two different ports"
                )
            self.key()  # created (and stored) the first time the server starts
            socks.append((self._bind(self.port, "HTTP"), None))
            self.port = socks[0][0].getsockname()[1]
            if self.https:
                cert_file, key_file = ensure_certificate(self.paths)
                self.cert_file = cert_file
                self._cert_pem = cert_file.read_bytes()
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.minimum_version = ssl.TLSVersion.TLSv1_2
                context.load_cert_chain(str(cert_file), str(key_file))
                sock = self._bind(self.https_port, "HTTPS")
                socks.append((sock, context))
                self.https_port = sock.getsockname()[1]
        except (OSError, ValueError, ssl.SSLError) as exc:
            for sock, _ in socks:
                sock.close()
            self._start_error = str(exc)
            log.error("%s", exc)
            return False
        self.app = OlraApp(
            self.served,
            self.key,
            hosts=frozenset(self._host_names()),
            certificate=lambda: self._cert_pem,
            on_written=self._on_written,
        )
        ready: concurrent.futures.Future[bool] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(socks, ready), name="dle-olra", daemon=True)
        self._thread.start()
        try:
            ready.result(timeout)
        except Exception as exc:  # noqa: BLE001 - reported in words
            self._start_error = f"the Obsidian REST emulation did not start: {exc}"
            log.error("%s", self._start_error)
            self.stop()
            return False
        log.info("Obsidian REST emulation listening on %s%s", self.url, f" and {self.https_url}" if self.https else "")
        return True

    def _host_names(self) -> set[str]:
        host = self.host.strip("[]").lower()
        return {f"[{host}]" if ":" in host else host} if host not in ("0.0.0.0", "::", "") else set()

    def _run(self, socks, ready: concurrent.futures.Future) -> None:
        loop = asyncio.SelectorEventLoop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(self.limits.io_threads, thread_name_prefix="dle-olra-io")
        )
        try:
            loop.run_until_complete(self._serve(socks, ready))
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            log.exception("the Obsidian REST emulation stopped")
        finally:
            for sock, _ in socks:
                sock.close()
            try:
                loop.run_until_complete(loop.shutdown_default_executor())
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    async def _serve(self, socks, ready: concurrent.futures.Future) -> None:
        assert self.app is not None  # start() makes it before the thread
        limits = self.limits
        # One guard for the HTTP and the HTTPS socket: the cap is on the process's sockets.
        connections = ServerLimits(
            max_connections=limits.max_connections,
            header_timeout=limits.header_timeout,
            keep_alive_timeout=limits.keep_alive_timeout,
        )
        protocol = protocol_class(connections)
        for sock, context in socks:
            # The lore server's connection policy (http_limits.server_config).
            config = server_config(self.app, connections, protocol, backlog=limits.backlog)
            if context is not None:
                config.load()
                config.ssl = context  # our own context (the certificate made above)
            server = uvicorn.Server(config)
            server.install_signal_handlers = lambda: None  # type: ignore[attr-defined]  # not the main thread (older uvicorn)
            self._servers.append(server)
            self._tasks.append(asyncio.get_running_loop().create_task(server.serve(sockets=[sock])))
        while not all(s.started for s in self._servers):
            for task in self._tasks:
                if task.done():
                    task.result()
                    raise RuntimeError("the server stopped while starting")
            await asyncio.sleep(0.01)
        ready.set_result(True)
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving (open connections are closed) and end the thread."""
        thread, loop = self._thread, self._loop
        if thread is None:
            return
        if loop is not None and not loop.is_closed():

            def exit_all() -> None:
                for server in self._servers:
                    server.should_exit = True

            try:
                loop.call_soon_threadsafe(exit_all)
            except RuntimeError:
                pass  # the loop closed meanwhile
        thread.join(timeout)
        if thread.is_alive():
            assert loop is not None  # the thread sets it first thing

            def force() -> None:
                for server in self._servers:
                    server.force_exit = True

            try:
                loop.call_soon_threadsafe(force)
            except RuntimeError:
                pass
            thread.join(timeout)
        self._thread = None
        self._loop = None
        self._servers = []
        self._tasks = []
