"""The address of a SillyTavern page as the user gives it (`dle-desktop st install --origin URL`),
checked and made canonical for `server_allowed_origins`: for a SillyTavern whose address its
config.yaml cannot tell (started with `--port`, behind a launcher or a reverse proxy)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from dle_desktop.core.hosts import parse_origin
from dle_desktop.st_bridge.install import StInstallError

EXAMPLE = "http://127.0.0.1:8000 or https://tavern.example"


def page_origin(value: str) -> str:
    """`value` (`http(s)://host[:port]`, a bare trailing `/` allowed, as a browser's address bar
    shows it) as a canonical origin; StInstallError says what is wrong with it and what to give."""
    text = value.strip()
    shown = re.sub(r"//([^/?#@:]*):[^/?#@]*@", r"//\1:***@", text)[:200]

    def refused(reason: str) -> StInstallError:
        return StInstallError(f"--origin {shown!r}: {reason}; give the page's address like {EXAMPLE}")

    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise refused(f"it is not an address ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not text.lower().startswith(f"{parts.scheme.lower()}://"):
        raise refused("it is not an http or https address (it starts with http:// or https://)")
    if "@" in parts.netloc:
        raise refused("it has a user name (a page's origin never does)")
    if not parts.netloc:
        raise refused("it has no host")
    if parts.path not in ("", "/"):
        raise refused(f"it has a path ({parts.path[:100]}); an origin is the scheme, host and port only")
    if parts.query or text.endswith("?"):
        raise refused("it has a query; an origin is the scheme, host and port only")
    if parts.fragment or text.endswith("#"):
        raise refused("it has a fragment; an origin is the scheme, host and port only")
    try:
        return parse_origin(f"{parts.scheme}://{parts.netloc}")
    except ValueError as exc:
        raise refused(f"the host is not valid: {exc}") from None
