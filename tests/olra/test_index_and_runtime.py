"""A PUT through the emulation reaches the engine's index at once, parsed once (the file watcher's
batch that follows re-parses nothing); the Runtime starts, restarts and stops the emulation on its
own, follows a replaced engine, and rotates the key; settings changes restart only it."""

from __future__ import annotations

import ssl
import threading
import time

import httpx
import pytest

from dle_desktop.engine.engine import Engine
from dle_desktop.engine.settings_apply import OLRA_FIELDS, plan
from dle_desktop.engine.thread import EngineThread
from dle_desktop.olra import OlraRunner, cert_path, olra_key
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.settings import Settings
from dle_desktop.vault import read_batch
from dle_desktop.vault.sources import FolderSource
from tests.conftest import lore_text, wait_until, write_files
from tests.olra.conftest import free_port


class Live:
    """A real Engine (watching its folder) on an EngineThread, and the emulation serving it."""

    def __init__(self, tmp_path, secrets, files: dict, settings: Settings | None = None) -> None:
        self.root = write_files(tmp_path / "vault", files)
        data = tmp_path / "data"
        self.paths = AppPaths(data, data).ensure()
        self.thread = EngineThread().start()
        self.engine = Engine(self.paths, settings or Settings(), secrets, vault_override=[FolderSource("v", self.root)])
        self.thread.call(self.engine.start(), timeout=30)
        self.thread.call(self.engine.wait_ready(), timeout=30)
        self.parsed: list[str] = []
        self.path_syncs = 0  # path syncs and full syncs alike
        self._count_work()
        self.runner = OlraRunner(self.engine, secrets, self.paths, port=0)
        assert self.runner.start(), self.runner.error
        self.key = self.runner.key()
        self.client = httpx.Client(
            base_url=self.runner.url, timeout=30, headers={"Authorization": f"Bearer {self.key}"}
        )

    def _count_work(self) -> None:
        indexer = self.engine.indexer
        parse, sync_paths, sync_all = read_batch.parse_note, indexer.sync_paths, indexer.sync_all
        lock = threading.Lock()

        def counting_parse(vault, path, *args, **kw):
            with lock:
                self.parsed.append(path)
            return parse(vault, path, *args, **kw)

        async def counting_sync_paths(vault, paths):
            self.path_syncs += 1
            return await sync_paths(vault, paths)

        async def counting_sync_all(*args, **kw):
            self.path_syncs += 1
            return await sync_all(*args, **kw)

        read_batch.parse_note = counting_parse  # type: ignore[assignment]  # undone in close()
        self._parse = parse
        indexer.sync_paths = counting_sync_paths
        indexer.sync_all = counting_sync_all

    def titles(self) -> set[str]:
        return {e.title for e in self.engine.snapshot.entries}

    def entry(self, title: str):
        return next(e for e in self.engine.snapshot.entries if e.title == title)

    def close(self) -> None:
        read_batch.parse_note = self._parse  # type: ignore[assignment]  # set in _count_work
        self.client.close()
        self.runner.stop()
        try:
            self.thread.call(self.engine.stop(), timeout=15)
        finally:
            self.thread.stop()


@pytest.fixture
def live(tmp_path, secrets):
    made: list[Live] = []

    def make(files: dict, settings: Settings | None = None) -> Live:
        made.append(Live(tmp_path, secrets, files, settings))
        return made[-1]

    yield make
    for item in made:
        item.close()


def test_a_put_note_is_in_the_index_at_once_and_parsed_once(live):
    lv = live({"Alpha.md": lore_text("Alpha", ("alpha",))})
    assert lv.titles() == {"Alpha"}
    r = lv.client.put(
        "/vault/Sessions/Scribe%20Note.md",
        content=lore_text("Scribe Note", ("scribe",)),
        headers={"Content-Type": "text/markdown"},
    )
    assert r.status_code == 204
    # No waiting: the answer came after the engine had the note.
    assert lv.titles() == {"Alpha", "Scribe Note"}
    assert lv.parsed == ["Sessions/Scribe Note.md"]
    # The watcher sees the rename (and the new folder: a full re-sync) and re-syncs; the stamp and
    # the content hash are the same, so nothing is parsed again.
    wait_until(lambda: lv.path_syncs >= 2, timeout=5)
    time.sleep(0.5)
    assert lv.parsed == ["Sessions/Scribe Note.md"]
    assert lv.titles() == {"Alpha", "Scribe Note"}


def test_an_edited_note_is_updated_at_once(live):
    lv = live({"Alpha.md": lore_text("Alpha", ("alpha",))})
    r = lv.client.put(
        "/vault/Alpha.md",
        content=lore_text("Alpha", ("alpha", "first letter")),
        headers={"Content-Type": "text/markdown"},
    )
    assert r.status_code == 204
    assert "first letter" in lv.entry("Alpha").keys
    wait_until(lambda: lv.path_syncs >= 2, timeout=5)
    time.sleep(0.3)
    assert lv.parsed == ["Alpha.md"]


def test_a_yaml_put_reaches_the_field_definitions(live):
    lv = live({"Alpha.md": lore_text("Alpha", ("alpha",))})
    yaml = "fields:\n  - name: era\n    label: Era\n    type: string\n"
    assert (
        lv.client.put(
            "/vault/DeepLore/field-definitions.yaml", content=yaml, headers={"Content-Type": "text/plain"}
        ).status_code
        == 204
    )
    assert lv.engine.indexer.field_definitions.source == "DeepLore/field-definitions.yaml"


def test_while_sync_is_paused_a_put_waits_with_the_other_changes(live):
    lv = live({"Alpha.md": lore_text("Alpha", ("alpha",))})

    async def pause(flag):
        lv.engine.set_sync_paused(flag)

    lv.thread.call(pause(True), timeout=5)
    assert (
        lv.client.put(
            "/vault/Beta.md", content=lore_text("Beta"), headers={"Content-Type": "text/markdown"}
        ).status_code
        == 204
    )
    assert (lv.root / "Beta.md").is_file()
    time.sleep(0.5)
    assert lv.titles() == {"Alpha"}
    lv.thread.call(pause(False), timeout=5)
    wait_until(lambda: "Beta" in lv.titles(), timeout=5)


def test_serving_follows_a_replaced_engine(live, tmp_path, secrets):
    lv = live({"Alpha.md": lore_text("Alpha")})
    other = write_files(tmp_path / "other", {"Other.md": lore_text("Other")})
    engine = Engine(lv.paths, Settings(), secrets, vault_override=[FolderSource("o", other)])
    lv.runner.set_engine(engine)
    assert lv.client.get("/vault/").json() == {"files": ["Other.md"]}


def _runtime(tmp_path, settings: Settings):
    from dle_desktop.app.context import AppContext
    from dle_desktop.app.runtime import Runtime
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import SettingsStore

    paths = AppPaths(tmp_path / "data", tmp_path / "data").ensure()
    ctx = AppContext(paths, SettingsStore(paths.settings_file), settings, SecretStore(use_keyring=False))
    root = write_files(tmp_path / "v", {"Alpha.md": lore_text("Alpha")})
    engine = Engine(paths, settings, ctx.secrets, vault_override=[FolderSource("lore", root)])
    return Runtime(ctx, engine, port=0).start(), root


def test_runtime_runs_the_emulation_only_when_enabled(tmp_path):
    runtime, _ = _runtime(tmp_path, Settings().replace(server_port=0))
    try:
        assert runtime.olra is None
        assert runtime.server is not None
    finally:
        runtime.stop()


def test_runtime_starts_restarts_rotates_and_stops_it(tmp_path):
    from dle_desktop.app.context import session_engine

    port, https_port = free_port(), free_port()
    settings = Settings().replace(server_port=0, olra_enabled=True, olra_port=port, olra_https_port=https_port)
    runtime, _root = _runtime(tmp_path, settings)
    try:
        olra = runtime.olra
        assert olra is not None and olra.running and olra.error is None
        assert olra.url == f"http://127.0.0.1:{port}" and olra.https_url is None
        assert cert_path(runtime.ctx.paths) is None
        key = olra_key(runtime.ctx.secrets)
        auth = {"Authorization": f"Bearer {key}"}
        assert httpx.get(f"{olra.url}/vault/", headers=auth).json() == {"files": ["Alpha.md"]}
        new = runtime.rotate_olra_key()
        assert httpx.get(f"{olra.url}/vault/", headers=auth).status_code == 401
        auth = {"Authorization": f"Bearer {new}"}
        assert httpx.get(f"{olra.url}/vault/", headers=auth).status_code == 200

        # Turning HTTPS on restarts only the emulation: the lore server and the engine stay.
        server, engine = runtime.server, runtime.engine
        new_settings = settings.replace(olra_https=True)
        todo = plan(settings, new_settings)
        assert todo.restart_olra and not todo.restart_server and not todo.new_engine and not todo.in_place
        assert "Obsidian REST emulation restarted" in todo.describe()
        assert runtime.olra_needs_restart(settings, new_settings)
        runtime.ctx.settings = new_settings
        runtime.restart_olra()
        assert runtime.server is server and runtime.engine is engine
        olra = runtime.olra
        assert olra.running and olra.https_url == f"https://127.0.0.1:{https_port}"
        cert = cert_path(runtime.ctx.paths)
        assert cert is not None
        assert httpx.get(
            f"{olra.https_url}/vault/", headers=auth, verify=ssl.create_default_context(cafile=str(cert))
        ).json() == {"files": ["Alpha.md"]}
        assert not runtime.olra_needs_restart(new_settings, new_settings)

        # A new engine (the vaults changed) is served by the same emulation.
        other = write_files(tmp_path / "v2", {"Beta.md": lore_text("Beta")})
        vaults = ({"name": "second", "kind": "folder", "path": str(other)},)
        with_vault = new_settings.replace(vaults=list(vaults))
        runtime.replace_engine(session_engine(runtime.ctx, with_vault), with_vault)
        assert httpx.get(f"{olra.url}/vault/", headers=auth).json() == {"files": ["Beta.md"]}

        # Turning it off stops it.
        runtime.ctx.settings = with_vault.replace(olra_enabled=False)
        runtime.restart_olra()
        assert runtime.olra is None
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{olra.url}/", timeout=2)
    finally:
        runtime.stop()
    assert runtime.olra is None or not runtime.olra.running


def test_runtime_reports_a_busy_port_and_retries(tmp_path):
    import socket

    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    port = blocker.getsockname()[1]
    settings = Settings().replace(server_port=0, olra_enabled=True, olra_port=port)
    runtime, _ = _runtime(tmp_path, settings)
    try:
        assert runtime.olra is not None and not runtime.olra.running
        assert str(port) in runtime.olra.error
        assert runtime.server is not None  # the lore server is not affected
        assert runtime.olra_needs_restart(settings, settings)  # it should run and does not
        blocker.close()
        runtime.restart_olra()
        assert runtime.olra.running and runtime.olra.error is None
    finally:
        blocker.close()
        runtime.stop()


def test_the_settings_are_declared_with_their_ranges():
    s = Settings()
    assert (s.olra_enabled, s.olra_port, s.olra_https, s.olra_https_port, s.olra_vault) == (
        False,
        27123,
        False,
        27124,
        "",
    )
    from dle_desktop.errors import ConfigError

    for bad in ({"olra_port": 0}, {"olra_port": 65536}, {"olra_https_port": 0}):
        with pytest.raises(ConfigError):
            s.replace(**bad)
    assert OLRA_FIELDS == {"olra_enabled", "olra_port", "olra_https", "olra_https_port", "olra_vault"}  # noqa: SIM300 - the constant is what is under test
    todo = plan(s, s.replace(olra_vault="Lore", olra_port=28000))
    assert todo.restart_olra and not todo.new_engine and not todo.restart_server and not todo.in_place
