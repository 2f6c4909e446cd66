"""What the SillyTavern view's panels share: the Qt-free install API, the clipboard, and how ages
and counts read."""

from __future__ import annotations

import asyncio
import functools

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMessageBox, QWidget

from dle_desktop.st_bridge import install as st_install  # noqa: F401 - the panels reach it here


async def in_thread(fn, *args, **kwargs):
    """Run blocking file work in a worker thread (the window keeps running meanwhile)."""
    return await asyncio.get_event_loop().run_in_executor(None, functools.partial(fn, *args, **kwargs))


def copy_text(text: str) -> None:
    QGuiApplication.clipboard().setText(text)


def confirm(parent: QWidget, title: str, text: str, yes: str) -> bool:
    """A plain question with a named Yes button (Cancel is the default)."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
    ok = box.addButton(yes, QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is ok


def age_text(seconds: float | None) -> str:
    """3 s, 5 min, 2 h, 3 days."""
    if seconds is None:
        return "?"
    s = max(0, int(seconds))
    if s < 1:
        return "0 s"
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h"
    days = s // 86400
    return f"{days} day{'s' if days != 1 else ''}"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def cut(text: str, room: int) -> str:
    return text if len(text) <= room else text[: room - 1] + "…"
