"""Redaction for diagnostics: what a user attaches to a public bug report must carry no key.

Three nets, because each misses something the others catch: fields are blanked by name (`api_key`,
`token`, `Authorization`...), URLs lose their user:password and `?key=` parameters, and finally every
byte written is scanned for the secret values themselves (the keyring's, the keys file's, this run's,
and every value the logging filter has learned), so a key that leaked into a free-text field or an
old log line is still caught."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from dle_desktop.logging_setup import known_secrets, scrub

MASK = "***"
#: Name parts that mark a field as secret (names are split at `_`, `-`, spaces and camelCase).
SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "bearer",
        "signature",
        "sig",
    }
)
#: Fields whose names sound secret but hold none (a vector scope's embedding profile name).
NOT_SECRET = frozenset({"profile_key"})
#: Values shorter than this are not scanned for: replacing a 3-letter string everywhere would
#: mangle the report, and no real key is that short (the logging filter uses the same floor).
MIN_SECRET_LEN = 4
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_parts(name: str) -> list[str]:
    return [p for p in re.split(r"[_\-\s.:]+", _CAMEL.sub("_", name).lower()) if p]


def is_secret_name(name: str) -> bool:
    if name in NOT_SECRET:
        return False
    parts = name_parts(name)
    # "apiKey" splits to api/key; "xapikey" stays whole: check both the parts and their join.
    return any(p in SECRET_WORDS for p in parts) or "".join(parts).endswith(("apikey", "token", "secret", "password"))


def redact_url(url: str) -> str:
    """`url` without its user:password and with secret-named query parameters masked."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_name(k) for k, _ in pairs):
            query = urlencode([(k, MASK if is_secret_name(k) else v) for k, v in pairs], safe="*")
    if host is None and netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class Redactor:
    def __init__(self, values: set[str] | None = None) -> None:
        self.values = {v for v in (values or set()) if isinstance(v, str) and len(v) >= MIN_SECRET_LEN}
        home = str(Path.home())
        # The home folder names the user; "~" says the same to whoever reads the report.
        self.home = home if len(home) > 1 else None

    def add(self, *values: str | None) -> None:
        self.values.update(v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LEN)

    def text(self, text: str) -> str:
        """Free text (log lines, error messages): the logging filter's patterns, URLs, known values."""
        text = _URL.sub(lambda m: redact_url(m.group(0)), scrub(text))
        return self.final(text)

    def final(self, text: str) -> str:
        """The last net, run over every member of the report as written."""
        for value in sorted(self.values | known_secrets(), key=len, reverse=True):
            if len(value) >= MIN_SECRET_LEN and value in text:
                text = text.replace(value, MASK)
        if self.home:
            text = text.replace(self.home, "~")
        return text

    def value(self, value, name: str = ""):
        """A JSON-like structure with secret-named fields masked and every string cleaned."""
        if isinstance(value, dict):
            return {k: self._field(str(k), v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v, name) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def _field(self, name: str, value):
        if is_secret_name(name) and isinstance(value, str):
            return MASK if value else ""
        if is_secret_name(name) and isinstance(value, (dict, list, tuple)) and value:
            return MASK
        if name in ("extra_headers", "headers") and isinstance(value, dict):
            return {k: MASK if is_secret_name(k) and v else self.text(str(v)) for k, v in value.items()}
        return self.value(value, name)


def environment_secrets(environ=os.environ) -> set[str]:
    """Values of environment variables named like keys (DLE_AI_KEY_..., OPENAI_API_KEY): the
    report never shows the environment, but such a value may have reached a log line."""
    return {v for k, v in environ.items() if is_secret_name(k) and len(v) >= 8 and not v.startswith(("/", "~"))}
