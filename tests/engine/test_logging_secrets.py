"""The log file never holds a secret. configure_logging sets up the process's root logger once,
so each check runs in a fresh interpreter that logs the way the app does."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dle_desktop.logging_setup import ScrubFilter, register_secret, scrub

REPO = Path(__file__).resolve().parents[2]

SECRET = "sk-registered-Secret-9876"
BEARER = "eyJhbGciOiJIUzI1NiJ9.payload.sig"
SPEC_KEY = "VaultKey0123456789abcdef"

SCRIPT = textwrap.dedent(f"""
    import logging, sys
    from pathlib import Path
    from dle_desktop.logging_setup import configure_logging, register_secret
    from dle_desktop.state.secrets import SecretStore

    configure_logging(Path(sys.argv[1]), to_stderr=True)
    register_secret({SECRET!r})
    SecretStore(use_keyring=False).set("vault:x", "memory-only-secret-55")
    log = logging.getLogger("dle_desktop.test")

    log.warning("plain %s and again %s", {SECRET!r}, "memory-only-secret-55")
    log.warning("header Authorization: Bearer {BEARER}")
    log.warning("api_key={BEARER} token: {BEARER}")
    log.warning("vault spec http://{SPEC_KEY}@127.0.0.1:27123 and https://{SPEC_KEY}@example.org/")
    log.info("an info line with %r inside", {{"key": {SECRET!r}}})

    def connect(url, key):
        raise ConnectionError(f"could not reach {{url}} with key {{key}}")

    try:
        connect("http://{SPEC_KEY}@127.0.0.1:1", {SECRET!r})
    except ConnectionError:
        log.exception("sync failed for Bearer {BEARER}")

    try:
        try:
            raise ValueError({SECRET!r})
        except ValueError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError:
        log.error("chained failure", exc_info=True)

    logging.getLogger("uvicorn.error").warning("third-party logger with %s", {SECRET!r})
    print("done")
""")


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> tuple[str, str]:
    logs = tmp_path_factory.mktemp("logs")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(logs)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    return (logs / "dle-desktop.log").read_text(encoding="utf-8"), proc.stderr


def test_the_lines_were_logged(logged):
    text, _ = logged
    for marker in (
        "plain",
        "header Authorization",
        "vault spec",
        "sync failed",
        "chained failure",
        "ConnectionError",
        "RuntimeError: wrapped",
        "ValueError",
        "third-party logger",
    ):
        assert marker in text, marker
    assert "Traceback" in text  # tracebacks are kept, just scrubbed


@pytest.mark.parametrize("secret", [SECRET, BEARER, SPEC_KEY, "memory-only-secret-55"])
def test_no_secret_in_the_log_file(logged, secret):
    text, _ = logged
    assert secret not in text


@pytest.mark.parametrize("secret", [SECRET, BEARER, SPEC_KEY, "memory-only-secret-55"])
def test_no_secret_on_stderr(logged, secret):
    _, err = logged
    assert "plain" in err  # warnings go to stderr too
    assert secret not in err


def test_scrub_function_directly():
    register_secret("direct-secret-value")
    register_secret("abc")  # too short to register: would scrub ordinary words
    out = scrub("direct-secret-value Bearer xyz http://k@h:1 abc token=t0k")
    assert "direct-secret-value" not in out and "xyz" not in out and "k@" not in out and "t0k" not in out
    assert "abc" in out


def test_scrub_filter_on_a_handler(tmp_path):
    """The filter works on any handler, including records with args and exc_info."""
    register_secret("handler-secret-42")
    path = tmp_path / "h.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.addFilter(ScrubFilter())
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger("dle_desktop.test.handler")
    log.propagate = False
    log.addHandler(handler)
    try:
        log.warning("arg %s", "handler-secret-42")
        try:
            raise KeyError("handler-secret-42")
        except KeyError:
            log.exception("boom")
    finally:
        log.removeHandler(handler)
        handler.close()
    text = path.read_text(encoding="utf-8")
    assert "handler-secret-42" not in text
    assert "boom" in text and "KeyError" in text
