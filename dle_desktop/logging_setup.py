"""Logging, configured in one place: a rotating file in the data folder, stderr for the CLI,
a filter that scrubs every known secret and anything that looks like a bearer token, and one
that rate-limits records repeating from the same place (so a flood cannot rotate the history away)."""

from __future__ import annotations

import logging
import logging.handlers
import re
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path

from dle_desktop.fileio import private_opener

_secrets: set[str] = set()
_secrets_lock = threading.Lock()
_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[^\s'\"]+"),
    re.compile(r"(?i)((?:api[_-]?key|token|authorization)\s*[=:]\s*)[^\s'\",;&]+"),
    re.compile(r"(https?://)[^/\s:@]+@"),  # http://KEY@host vault specs
)


def register_secret(value: str | None) -> None:
    """Remember a secret so that no log line can ever contain it."""
    if value and len(value) >= 4:
        with _secrets_lock:
            _secrets.add(value)


def known_secrets() -> set[str]:
    """Every secret registered so far (diagnostics scans what it writes for them)."""
    with _secrets_lock:
        return set(_secrets)


def scrub(text: str) -> str:
    with _secrets_lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for s in secrets:
        if s in text:
            text = text.replace(s, "***")
    text = _PATTERNS[0].sub(r"\1***", text)
    text = _PATTERNS[1].sub(r"\1***", text)
    text = _PATTERNS[2].sub(r"\1***@", text)
    return text


class ScrubFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = scrub(message)
        if clean != message or record.exc_info:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            # Render the traceback now, scrubbed, so the formatter doesn't re-render it raw.
            formatter = logging.Formatter()
            record.exc_text = scrub(formatter.formatException(record.exc_info))
            record.exc_info = None
        return True


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Log files are 0600: they name vault notes and chats."""

    def _open(self):
        return open(self.baseFilename, self.mode, encoding=self.encoding, errors=self.errors, opener=private_opener)


class RepeatFilter(logging.Filter):
    """Let at most `burst` records from one place (logger, level, source line, exception type)
    through per `window` seconds; the next one after a quiet spell says how many were dropped.
    The message text is not part of the place: asyncio's handler, for one, logs every failed
    accept from one line with a pre-formatted message.

    A failing `accept()` or a scanning client can log the same error thousands of times a second;
    without this the rotating log would keep only that error and lose everything before it."""

    def __init__(self, burst: int = 10, window: float = 60.0, clock=time.monotonic, max_places: int = 1000) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.clock = clock
        self.max_places = max_places
        self._lock = threading.Lock()
        self._places: OrderedDict[tuple, list] = OrderedDict()  # place -> [window start, passed, dropped]

    def filter(self, record: logging.LogRecord) -> bool:
        # Computed once per record: a later filter (ScrubFilter) may rewrite msg for other handlers.
        error = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else None
        place = record.__dict__.setdefault(
            "_repeat_place", (record.name, record.levelno, record.pathname, record.lineno, error)
        )
        now = self.clock()
        with self._lock:
            state = self._places.get(place)
            if state is None or now - state[0] >= self.window:
                dropped = state[2] if state else 0
                self._places[place] = [now, 1, 0]
                self._places.move_to_end(place)
                while len(self._places) > self.max_places:
                    self._places.popitem(last=False)
                if dropped:
                    record.msg = (
                        f"{record.msg} [{dropped} more like this were not logged in the last {self.window:g} s]"
                    )
                return True
            if state[1] < self.burst:
                state[1] += 1
                return True
            state[2] += 1
            return False


_configured = False
LOG_FILE_NAME = "dle-desktop.log"
#: 1 MB × 5 old files: a week of ordinary use, small enough to attach to a bug report whole.
LOG_MAX_BYTES = 1_000_000
LOG_BACKUPS = 5


def log_files(logs_dir: Path) -> list[Path]:
    """The log file and its rotated copies, newest first."""
    files = [logs_dir / LOG_FILE_NAME, *(logs_dir / f"{LOG_FILE_NAME}.{n}" for n in range(1, LOG_BACKUPS + 1))]
    return [f for f in files if f.is_file()]


def configure_logging(logs_dir: Path | None, level: int = logging.INFO, to_stderr: bool = True) -> None:
    global _configured
    root = logging.getLogger()
    if _configured:
        return
    _configured = True
    root.setLevel(level)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = []
    if logs_dir is not None:
        logs_dir.mkdir(parents=True, exist_ok=True)
        fh = PrivateRotatingFileHandler(
            logs_dir / LOG_FILE_NAME, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
        )
        handlers.append(fh)
    if to_stderr:
        sh = logging.StreamHandler(sys.stderr)
        sh.setLevel(logging.WARNING)
        handlers.append(sh)
    for h in handlers:
        h.setFormatter(fmt)
        h.addFilter(RepeatFilter())
        h.addFilter(ScrubFilter())
        root.addHandler(h)
    for noisy in ("watchdog", "httpx", "httpcore", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
