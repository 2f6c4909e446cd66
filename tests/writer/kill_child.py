"""Run by test_kill_atomicity.py: rewrite one large note through the NoteWriter, alternating two
texts, until killed. Prints "ready" once the first write is done."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from dle_desktop.vault.sources import FolderSource
from dle_desktop.vault.write_history import WriteHistory
from dle_desktop.vault.writer import NoteWriter


async def main(vault: str, data: str, path: str, text_a: str, text_b: str) -> None:
    writer = NoteWriter(
        [FolderSource("v", Path(vault))], history=WriteHistory(Path(data) / "h.sqlite", keep_per_note=2)
    )
    announced = False
    while True:
        version = await writer.read("v", path)
        text = text_b if version.text == text_a else text_a
        await writer.write("v", path, text, base=version, feature="kill-test")
        if not announced:
            print("ready", flush=True)
            announced = True


if __name__ == "__main__":
    vault_dir, data_dir, note_path, a_file, b_file = sys.argv[1:6]
    a = Path(a_file).read_bytes().decode("utf-8")
    b = Path(b_file).read_bytes().decode("utf-8")
    asyncio.run(main(vault_dir, data_dir, note_path, a, b))
