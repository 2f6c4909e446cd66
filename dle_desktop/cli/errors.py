"""How a command line ends on an error: `error: ...` on stderr and an exit status, never a
traceback for what the user can fix. Each command keeps the status it documents (most use 2,
`dle-desktop st` uses 1), so the status is a parameter."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from dle_desktop.errors import DleError

#: The shell's status for a command stopped with Ctrl+C (128 + SIGINT).
INTERRUPTED = 130


def fail(message: str, status: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


def os_error_message(exc: OSError) -> str:
    return f"{exc.strerror or exc}" + (f": {exc.filename}" if getattr(exc, "filename", None) else "")


def silence_stdout() -> None:
    """The reader of our output went away (`dle-desktop ... | head`): whatever is still printed,
    and Python's flush at exit, go nowhere instead of raising again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def run_command(
    command: Callable[[], int],
    *,
    status: int = 2,
    errors: tuple[type[Exception], ...] = (DleError,),
    os_error_status: int | None = None,
    unexpected: bool = False,
) -> int:
    """`command()`'s exit status; `errors` are reported with `status`. OSError is reported with
    `os_error_status` (None: not caught here), a broken stdout pipe ends quietly with 0, Ctrl+C
    with 130. `unexpected`: any other exception is reported too (with `status`)."""
    try:
        return command()
    except errors as exc:
        return fail(str(exc), status)
    except BrokenPipeError:
        silence_stdout()
        return 0
    except OSError as exc:
        if os_error_status is None:
            raise
        return fail(os_error_message(exc), os_error_status)
    except KeyboardInterrupt:
        return INTERRUPTED
    except Exception as exc:
        if not unexpected:
            raise
        return fail(f"unexpected {type(exc).__name__}: {exc}", status)
