"""The writer on an Obsidian REST vault, over real loopback HTTP: the app's own Obsidian REST
emulation (a real OLRA-compatible server on a folder), and the fake OLRA server that records
every request. Same checks as on a folder: GET, compare the content hash, then PUT."""

from __future__ import annotations

import asyncio

import pytest

from dle_desktop.errors import NoteExists, WriteConflict, WriteRefused
from dle_desktop.olra import OlraRunner
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.vault.obsidian_rest import ObsidianRestSource, parse_vault_spec
from dle_desktop.vault.sources import FolderSource
from dle_desktop.vault.write_history import WriteHistory
from dle_desktop.vault.writer import NoteWriter
from tests.fakes.obsidian_server import FakeObsidian

NOTE = "\ufeff---\r\ntags: [lorebook]   # c\r\nkeys:\r\n  - Quay\r\npriority: 50\r\n---\r\n# Quay\r\nno final newline"


class _Indexer:
    def __init__(self, sources) -> None:
        self.sources = sources


class _VaultsOnly:
    """What the emulation reads of an engine: the folder vaults it serves."""

    def __init__(self, sources) -> None:
        self.indexer = _Indexer(sources)
        self.using_sample_vault = False


@pytest.fixture
def emulated(tmp_path):
    """(folder behind the server, writer whose vault "rest" is that server)."""
    folder = tmp_path / "served"
    (folder / "Places").mkdir(parents=True)
    (folder / "Places" / "Quay.md").write_bytes(NOTE.encode())
    secrets = SecretStore(use_keyring=False)
    data = tmp_path / "data"
    runner = OlraRunner(_VaultsOnly([FolderSource("served", folder)]), secrets, AppPaths(data, data).ensure(), port=0)
    assert runner.start(), runner.error
    port = int(runner.url.rsplit(":", 1)[1])
    source = ObsidianRestSource("rest", "127.0.0.1", port, runner.key())
    history = WriteHistory(tmp_path / "h.sqlite")
    written = []
    writer = NoteWriter([source], history=history, on_written=lambda vault, paths: written.append((vault, paths)))
    yield folder, writer, written
    history.close()
    runner.stop()


def run(writer: NoteWriter, body) -> None:
    """Run `body()` and close the REST client on the same event loop (its connections belong to it)."""

    async def main() -> None:
        try:
            await body()
        finally:
            for source in writer._sources:
                await source.close()

    asyncio.run(main())


def test_set_fields_through_rest_changes_only_that_field_on_disk(emulated):
    folder, writer, written = emulated

    async def body() -> None:
        version = await writer.read("rest", "Places/Quay.md")
        assert version.text == NOTE  # BOM and CRLF arrive intact
        await writer.set_fields("rest", "Places/Quay.md", {"priority": 20}, base=version, feature="manual")

    run(writer, body)
    assert (folder / "Places" / "Quay.md").read_bytes() == NOTE.replace("priority: 50", "priority: 20").encode()
    assert written == [("rest", {"Places/Quay.md"})]


def test_create_through_rest_and_refuse_an_existing_note(emulated):
    folder, writer, _ = emulated

    async def body() -> None:
        await writer.create("rest", "New/Note.md", "# New\r\n", feature="librarian")
        assert (folder / "New" / "Note.md").read_bytes() == b"# New\r\n"
        with pytest.raises(NoteExists):
            await writer.create("rest", "Places/Quay.md", "clobber", feature="librarian")

    run(writer, body)
    assert (folder / "Places" / "Quay.md").read_bytes() == NOTE.encode()


def test_conflict_through_rest_when_obsidian_changed_the_note(emulated):
    folder, writer, written = emulated
    theirs = NOTE.replace("no final newline", "typed in Obsidian")

    async def body() -> None:
        version = await writer.read("rest", "Places/Quay.md")
        (folder / "Places" / "Quay.md").write_bytes(theirs.encode())
        await writer.replace_body("rest", "Places/Quay.md", "# Mine\n", base=version, feature="manual")

    with pytest.raises(WriteConflict) as err:
        run(writer, body)
    assert (err.value.expected_text, err.value.current_text) == (NOTE, theirs)
    assert err.value.proposed_text.endswith("# Mine\r\n")
    assert (folder / "Places" / "Quay.md").read_bytes() == theirs.encode()
    assert written == []


def test_undo_through_rest_and_no_delete_for_a_create(emulated):
    folder, writer, _ = emulated

    async def body() -> None:
        version = await writer.read("rest", "Places/Quay.md")
        edit = await writer.set_fields(
            "rest", "Places/Quay.md", {"keys": ["Quay", "harbour"]}, base=version, feature="optimize-keys"
        )
        assert (folder / "Places" / "Quay.md").read_bytes() != NOTE.encode()
        await writer.undo(edit.record.id)
        assert (folder / "Places" / "Quay.md").read_bytes() == NOTE.encode()
        created = await writer.create("rest", "Temp.md", "x", feature="librarian")
        with pytest.raises(WriteRefused, match="delete it in Obsidian"):
            await writer.undo(created.record.id)

    run(writer, body)
    assert (folder / "Temp.md").read_text() == "x"


def test_the_writer_gets_then_puts_the_whole_file(tmp_path):
    folder = tmp_path / "vault"
    folder.mkdir()
    (folder / "Quay.md").write_bytes(NOTE.encode())
    with FakeObsidian(folder, api_key="k") as server:
        source = parse_vault_spec(server.spec, name="fake")
        writer = NoteWriter([source])

        async def edit() -> None:
            version = await writer.read("fake", "Quay.md")
            server.reset_stats()
            await writer.set_fields("fake", "Quay.md", {"priority": 1}, base=version, feature="manual")

        run(writer, edit)
        methods = [(r.method, r.path) for r in server.requests]
        assert methods == [("GET", "/vault/Quay.md"), ("PUT", "/vault/Quay.md")]
        put = server.requests[-1]
        assert {k.lower(): v for k, v in put.headers.items()}["content-type"] == "text/markdown"
        assert put.body == NOTE.replace("priority: 50", "priority: 1").encode()
