"""What answered on an Obsidian REST port: the plugin's `GET /` status (service name, whether
the key is accepted, version), or a few words on whatever else is listening there."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

#: How much of an error body goes into a message (DLE: first 200 chars).
ERROR_BODY_CHARS = 200
#: What OLRA names itself in `GET /` (`service`); how the connection test knows it is the plugin.
OLRA_SERVICE = "Obsidian Local REST API"
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)


def olra_status(resp: httpx.Response) -> dict[str, Any] | None:
    """OLRA's `GET /` status object (`{"service": "Obsidian Local REST API", "authenticated": ...}`),
    or None when whatever answered is not the plugin."""
    if resp.status_code != 200:
        return None
    try:
        data = json.loads(resp.content)
    except ValueError:
        return None
    service = data.get("service") if isinstance(data, dict) else None
    return data if isinstance(service, str) and OLRA_SERVICE.lower() in service.lower() else None


def describe_answer(resp: httpx.Response) -> str:
    """A few words on what answered instead of OLRA: the status, then a page title, a JSON
    service name or the start of the body, then the Server header."""
    found = [f"HTTP {resp.status_code}"]
    kind = resp.headers.get("content-type", "").split(";")[0].strip().lower()
    text = resp.content[:8192].decode("utf-8", "replace")
    title = _HTML_TITLE.search(text)
    if kind == "text/html" or title:
        name = " ".join(title.group(1).split())[:ERROR_BODY_CHARS] if title else ""
        found.append(f'an HTML page titled "{name}"' if name else "an HTML page")
    else:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        named = next(
            (data[k] for k in ("service", "name") if isinstance(data, dict) and isinstance(data.get(k), str)), None
        )
        snippet = " ".join(text.split())[:ERROR_BODY_CHARS]
        if named:
            found.append(f'service "{named[:ERROR_BODY_CHARS]}"')
        elif snippet:
            found.append(f"answer: {snippet}")
        else:
            found.append("an empty answer")
    server = resp.headers.get("server", "").strip()
    if server:
        found.append(f"server: {server[:80]}")
    return ", ".join(found)


def olra_version(resp: httpx.Response) -> str | None:
    """The plugin version from OLRA's `GET /` status JSON, as DLE's scanner reads it."""
    try:
        versions = json.loads(resp.content).get("versions") or {}
        version = versions.get("self") or versions.get("api")
    except (ValueError, AttributeError):
        return None
    return str(version) if version else None
