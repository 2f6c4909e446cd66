"""Repeated log records are rate-limited (issue 9, item 3): a flood of the same error cannot push
everything else out of the rotating log. The clock is a counter the test moves, never real time."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

from dle_desktop.logging_setup import RepeatFilter, ScrubFilter

REPO = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Sink(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def logger_with(*filters: logging.Filter) -> tuple[logging.Logger, Sink]:
    log = logging.getLogger(f"test.repeat.{id(filters)}")
    log.propagate = False
    log.setLevel(logging.DEBUG)
    sink = Sink()
    for f in filters:
        sink.addFilter(f)
    log.addHandler(sink)
    return log, sink


def test_a_flood_from_one_place_is_cut_to_a_burst_and_counted():
    clock = Clock()
    log, sink = logger_with(RepeatFilter(burst=3, window=60, clock=clock))

    def fail(detail: str) -> None:
        log.error("accept failed: %s", detail)  # one place (this line), though the text differs

    for i in range(1000):
        fail(f"errno {i}")
    assert sink.lines == ["accept failed: errno 0", "accept failed: errno 1", "accept failed: errno 2"]
    clock.now = 61
    fail("errno again")
    assert sink.lines[-1] == "accept failed: errno again [997 more like this were not logged in the last 60 s]"


def test_a_pre_formatted_message_from_one_line_is_one_place():
    """asyncio logs each failed accept with the socket's details already in the text."""
    clock = Clock()
    log, sink = logger_with(RepeatFilter(burst=2, window=60, clock=clock))
    for fd in range(100):
        log.error(f"socket.accept() out of system resource\nsocket: <fd={fd}>")
    assert len(sink.lines) == 2


def test_other_places_are_not_silenced_by_a_flood():
    clock = Clock()
    log, sink = logger_with(RepeatFilter(burst=2, window=60, clock=clock))
    for _ in range(50):
        log.error("flood")
    log.warning("something else entirely")
    for _ in range(1):
        log.error("flood")  # another source line is another place
    assert sink.lines == ["flood", "flood", "something else entirely", "flood"]


def test_the_place_is_kept_when_a_scrubber_rewrote_the_message_for_another_handler():
    """ScrubFilter replaces msg with the rendered text; the next handler must still see one place."""
    clock = Clock()
    log, first = logger_with(RepeatFilter(burst=2, window=60, clock=clock), ScrubFilter())
    second = Sink()
    second.addFilter(RepeatFilter(burst=2, window=60, clock=clock))
    log.addHandler(second)
    for i in range(20):
        try:
            raise OSError(f"failure {i}")
        except OSError:
            log.exception("accept failed %d", i)
    assert len(first.lines) == 2 and len(second.lines) == 2


def test_the_configured_handlers_rate_limit_a_flood(tmp_path):
    """The app's own configuration, in a fresh interpreter: 5,000 identical errors leave a short
    log that still holds the line written before the flood."""
    script = textwrap.dedent("""
        import logging, sys
        from pathlib import Path
        from dle_desktop.logging_setup import configure_logging
        configure_logging(Path(sys.argv[1]), to_stderr=True)
        log = logging.getLogger("asyncio")
        logging.getLogger("dle_desktop").warning("the line before the flood")
        for i in range(5000):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                log.error("socket.accept() out of system resource", exc_info=True)
    """)
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "dle-desktop.log").read_text(encoding="utf-8")
    assert "the line before the flood" in text
    assert 1 <= text.count("socket.accept() out of system resource") <= 20
    assert done.stderr.count("socket.accept() out of system resource") <= 20
