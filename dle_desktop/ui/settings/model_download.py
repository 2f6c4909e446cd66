"""The default embedding model's download as the window sees it: started from Settings →
Embeddings, shown there and in the vault view's semantic strip, cancellable, resumable.

One instance belongs to the app, not to the Settings dialog, so a 640 MB download keeps going
after the dialog is closed. The download runs on the engine thread, like syncs do: its network
reads, SHA-256 hashing and (on resume) re-hashing of the kept bytes then never stall the window.
Reports cross back to the GUI thread through queued signals."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from dle_desktop.vectors.model_manager import (
    DEFAULT_MODEL,
    DownloadProgress,
    ModelDownloadCancelled,
    ModelError,
    ModelManager,
    ModelSpec,
)

log = logging.getLogger(__name__)


def megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1_000_000 else f"{n / 1e3:.0f} kB"


def describe_progress(p: DownloadProgress) -> str:
    """ "123.4 MB of 639.2 MB (19%) · 12.3 MB/s" (or just the bytes when the size is unknown)."""
    text = megabytes(p.downloaded) if not p.total else f"{megabytes(p.downloaded)} of {megabytes(p.total)}"
    if p.fraction is not None:
        text += f" ({p.fraction:.0%})"
    if p.bytes_per_s > 0:
        text += f" · {p.bytes_per_s / 1e6:.1f} MB/s"
    return text


class ModelDownload(QObject):
    started = Signal(object)  # (bytes kept, total | None) when resuming, else None
    progressed = Signal(object)  # DownloadProgress
    finished = Signal(str)  # the model file
    failed = Signal(str)  # what went wrong, for people
    cancelled = Signal(str)  # what was kept
    # Emitted on the engine thread; queued to this object's (GUI) thread.
    _progress_raw = Signal(object)
    _ended_raw = Signal(object)

    def __init__(
        self,
        engine_thread,
        models_dir: str | Path,
        spec: ModelSpec = DEFAULT_MODEL,
        manager: ModelManager | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.engine_thread = engine_thread
        self.manager = manager or ModelManager(models_dir)
        self.spec = spec
        self.last_progress: DownloadProgress | None = None
        self.resuming_from: tuple[int, int | None] | None = None
        self._future: concurrent.futures.Future | None = None
        self._task: asyncio.Task | None = None
        self._cancel: threading.Event | None = None
        self._progress_raw.connect(self._on_progress)
        self._ended_raw.connect(self._on_ended)

    # -- what is on disk ----------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._future is not None

    def is_available(self) -> bool:
        return self.manager.is_available(self.spec)

    def model_path(self) -> Path:
        return self.manager.path_for(self.spec)

    def partial(self) -> tuple[int, int | None] | None:
        return self.manager.partial_download(self.spec)

    # -- commands -----------------------------------------------------------------------------
    def start(self) -> bool:
        """Download (or resume) the model; False when one is already under way."""
        if self.running:
            return False
        self._cancel = threading.Event()
        self.last_progress = None
        self.resuming_from = self.partial()
        self._future = future = self.engine_thread.submit(self._download(self._cancel))
        self.started.emit(self.resuming_from)
        # Added after "started", so a download that ends at once still reports in that order.
        future.add_done_callback(self._ended_raw.emit)
        return True

    def cancel(self) -> None:
        """Stop the download; the bytes so far stay for the next start to resume from."""
        if self._cancel is not None:
            self._cancel.set()
        task = self._task
        if task is not None:
            # The event is only looked at between chunks; a server that went silent sends none.
            self.engine_thread.loop.call_soon_threadsafe(task.cancel)

    async def _download(self, cancel: threading.Event) -> Path:
        self._task = asyncio.current_task()
        try:
            return await self.manager.download(self.spec, progress=self._progress_raw.emit, cancel=cancel)
        finally:
            self._task = None

    # -- reports (GUI thread) -----------------------------------------------------------------
    def _on_progress(self, p: DownloadProgress) -> None:
        if self.running:
            self.last_progress = p
            self.progressed.emit(p)

    def _on_ended(self, future: concurrent.futures.Future) -> None:
        self._future = None
        self._cancel = None
        if future.cancelled():
            self.cancelled.emit(self._kept())
            return
        exc = future.exception()
        if exc is None:
            self.finished.emit(str(future.result()))
        elif isinstance(exc, (ModelDownloadCancelled, asyncio.CancelledError)):
            self.cancelled.emit(self._kept())
        elif isinstance(exc, ModelError):
            self.failed.emit(str(exc))
        elif isinstance(exc, OSError):
            self.failed.emit(f"the model could not be saved in {self.manager.models_dir}: {exc.strerror or exc}")
        else:
            log.error("the model download failed", exc_info=exc)
            self.failed.emit(f"the download failed unexpectedly ({type(exc).__name__}: {exc})")

    def _kept(self) -> str:
        part = self.partial()
        if part is None:
            return "nothing was kept"
        return f"{megabytes(part[0])} kept"
