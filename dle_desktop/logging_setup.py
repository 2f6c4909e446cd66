"""Logging, configured in one place: a rotating file in the data folder, stderr for the CLI,
and a filter that scrubs every known secret and anything that looks like a bearer token."""

from __future__ import annotations

import logging
import logging.handlers
import re
import sys
import threading
from pathlib import Path

from dle_desktop.private_files import private_opener

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


_configured = False


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
        fh = PrivateRotatingFileHandler(logs_dir / "dle-desktop.log", maxBytes=2_000_000, backupCount=3, encoding="utf-8")
        handlers.append(fh)
    if to_stderr:
        sh = logging.StreamHandler(sys.stderr)
        sh.setLevel(logging.WARNING)
        handlers.append(sh)
    for h in handlers:
        h.setFormatter(fmt)
        h.addFilter(ScrubFilter())
        root.addHandler(h)
    for noisy in ("watchdog", "httpx", "httpcore", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
