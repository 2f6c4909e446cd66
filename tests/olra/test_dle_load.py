"""DeepLore Enhanced's request pattern replayed exactly against generated vaults (250 and 10,000
notes), 50 parallel readers over the 10,000-note vault five times with 0 failures, and the
project's own Obsidian REST client building, through the emulation, the same index the folder
source builds from the same folder (our stand-in for "DLE builds the same index")."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from benchmarks.bench_index import generate_vault
from benchmarks.bench_olra import READ_BATCH, LeanClient, disk_checker, dle_client, replay_dle
from dle_desktop.core.index import same_view
from dle_desktop.vault.indexer import VaultIndexer
from dle_desktop.vault.obsidian_rest import ObsidianRestSource, encode_vault_path
from dle_desktop.vault.sources import FolderSource


@pytest.fixture(scope="module")
def big_vault(tmp_path_factory):
    """The benchmark's 10,000-note vault, generated once for this module."""
    return generate_vault(tmp_path_factory.mktemp("olra-big") / "vault", 10_000).root


def _md_files(root) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def _serve(olra, root):
    from tests.olra.conftest import VaultsOnly

    return olra(engine=VaultsOnly([FolderSource("v", root)]))


def _replay(served, root, lean: bool = False):
    """DLE's fetch with httpx, or with the lean client (a tenth of httpx's CPU per request, so a
    10,000-note replay takes seconds, not most of a minute, with the server in this process)."""

    async def go():
        async with LeanClient(served.runner.url) if lean else dle_client(served.runner.url) as client:
            return await replay_dle(client, served.key, disk_checker(root))

    return asyncio.run(go())


def test_dle_pattern_on_250_notes(olra, tmp_path):
    root = generate_vault(tmp_path / "small", 250).root
    served = _serve(olra, root)
    fetch = _replay(served, root)
    assert fetch.failures == []
    assert set(fetch.texts) == _md_files(root)
    assert fetch.reads == len(_md_files(root))


@pytest.mark.slow
def test_dle_pattern_on_10000_notes(olra, big_vault):
    served = _serve(olra, big_vault)
    fetch = _replay(served, big_vault, lean=True)
    assert fetch.failures == []
    assert len(fetch.texts) == len(_md_files(big_vault)) >= 10_000
    assert served.runner.app.stats["refused"] == 0


async def _raw_get(reader, writer, target: bytes, key: bytes) -> tuple[int, bytes]:
    """One keep-alive GET on an open connection, answer read in full (a lean client: the server,
    not the client, should be what this test measures)."""
    writer.write(
        b"GET "
        + target
        + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + key
        + b"\r\nAccept: text/markdown\r\n\r\n"
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    body = await reader.readexactly(length)
    return status, body


@pytest.mark.slow
def test_50_parallel_readers_over_10000_notes_5_times(olra, big_vault):
    served = _serve(olra, big_vault)
    paths = sorted(_md_files(big_vault))
    expected = {p: big_vault.joinpath(*p.split("/")).read_bytes() for p in paths}
    targets = {p: ("/vault/" + encode_vault_path(p)).encode() for p in paths}
    key = served.key.encode()
    port = served.runner.port

    async def round_(seed: int) -> list[str]:
        order = list(paths)
        random.Random(seed).shuffle(order)
        queue: asyncio.Queue[str] = asyncio.Queue()
        for p in order:
            queue.put_nowait(p)
        failures: list[str] = []

        async def reader_task() -> None:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                while True:
                    try:
                        path = queue.get_nowait()
                    except asyncio.QueueEmpty:
                        return
                    try:
                        status, body = await _raw_get(reader, writer, targets[path], key)
                    except (OSError, asyncio.IncompleteReadError) as exc:
                        failures.append(f"{path}: {type(exc).__name__} {exc}")
                        reader, writer = await asyncio.open_connection("127.0.0.1", port)
                        continue
                    if status != 200 or body != expected[path]:
                        failures.append(f"{path}: HTTP {status}, {len(body)} bytes")
            finally:
                writer.close()

        await asyncio.gather(*(reader_task() for _ in range(READ_BATCH)))
        return failures

    for repetition in range(5):
        started = time.perf_counter()
        failures = asyncio.run(round_(repetition))
        assert failures == [], (repetition, failures[:5])
        print(f"round {repetition + 1}: {len(paths)} notes in {time.perf_counter() - started:.1f} s")
    assert served.runner.app.stats["refused"] == 0


def test_our_rest_client_builds_the_same_index_through_the_emulation(olra, tmp_path):
    root = generate_vault(tmp_path / "same", 400).root  # malformed notes and field definitions included
    served = _serve(olra, root)

    async def build(source):
        indexer = VaultIndexer([source])
        try:
            await indexer.sync_all()
        finally:
            await source.close()
        return indexer

    folder = asyncio.run(build(FolderSource("v", root)))
    rest = asyncio.run(build(ObsidianRestSource("v", "127.0.0.1", served.runner.port, served.key)))
    assert len(folder.snapshot.entries) > 300 and folder.snapshot.skipped
    assert [e.path for e in rest.snapshot.entries] == [e.path for e in folder.snapshot.entries]
    assert [e.content for e in rest.snapshot.entries] == [e.content for e in folder.snapshot.entries]
    assert rest.field_definitions.signature() == folder.field_definitions.signature()
    assert same_view(folder.snapshot, rest.snapshot)
