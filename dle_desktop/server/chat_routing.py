"""Routing for `/chats/{chat_id}` where a chat id may contain `/` (SillyTavern's group chats).

The server decodes `%2F` to `/` before routing, so by default `/chats/x%2Frecords` and
`/chats/x/records` would be the same request. A ChatRoute matches on the raw path instead, where an
encoded slash is still distinguishable: a literal `/` before a sub-resource name (`records`, `pins`,
...) starts that sub-resource, every other slash (literal or `%2F`) belongs to the id. So
`/chats/group/abc` and `/chats/group%2Fabc` both reach chat "group/abc", `/chats/x/records` is
chat "x"'s records, and chat "x/records" itself is `/chats/x%2Frecords`: a client that
percent-encodes the whole id (encodeURIComponent) always reaches the chat it means."""

from __future__ import annotations

import re
from urllib.parse import unquote

from starlette.routing import Match, Route
from starlette.types import Scope

#: Stands for an encoded slash while matching; it never survives into a path parameter, and a
#: path that already holds it (`%00`) is matched as is, so the chat-id rule refuses it.
_ENCODED_SLASH = "\x00"


def _path_keeping_encoded_slashes(scope: Scope) -> str | None:
    raw = scope.get("raw_path")
    if not isinstance(raw, bytes) or scope.get("root_path"):
        return None
    # The same decoding as the server's `path` (uvicorn: ASCII, then percent-decoding as UTF-8),
    # one segment at a time so that a decoded slash cannot split a segment.
    segments = [unquote(seg.decode("latin-1")) for seg in raw.split(b"/")]
    if any(_ENCODED_SLASH in seg for seg in segments):
        return None
    return "/".join(seg.replace("/", _ENCODED_SLASH) for seg in segments)


class ChatRoute(Route):
    """A Route whose `{chat_id:path}` keeps `%2F` in the id (see the module's docstring).

    `sub_resources`: for the bare `/chats/{chat_id}` route, the names that, after a literal `/`,
    make the request one for a sub-resource route instead (so a wrong method there is a 405, not
    a request for a chat whose id ends in `/pins`)."""

    def __init__(self, path: str, endpoint, *, methods: list[str], sub_resources: tuple[str, ...] = ()) -> None:
        super().__init__(path, endpoint, methods=methods)
        # `.` must match a newline too, so that an id with one reaches the route (and its 400).
        self.path_regex = re.compile(self.path_regex.pattern, re.DOTALL)
        self._suffixes = tuple(f"/{name}" for name in sub_resources)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return super().matches(scope)
        path = _path_keeping_encoded_slashes(scope)
        match, child = super().matches(scope if path is None else {**scope, "path": path})
        if match is Match.NONE:
            return match, child
        chat_id = child["path_params"].get("chat_id", "")
        if self._suffixes and chat_id.endswith(self._suffixes):
            return Match.NONE, {}
        if path is not None:
            child["path_params"] = {**child["path_params"], "chat_id": chat_id.replace(_ENCODED_SLASH, "/")}
        return match, child
