"""An Obsidian REST address as the user writes it (`http[s]://[KEY@]HOST[:PORT][/]`), and vault
paths as they go into the plugin's routes."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from dle_desktop.errors import ConfigError, VaultPathError
from dle_desktop.vault.host_allowlist import check_host_allowed

DEFAULT_HTTP_PORT = 27123
DEFAULT_HTTPS_PORT = 27124
REDACTED = "***"


@dataclass(frozen=True)
class RestAddress:
    """Where a vault is served. `api_key` is kept out of repr()."""

    host: str
    port: int
    https: bool
    api_key: str | None = field(default=None, repr=False)


def _redact_spec(spec: str) -> str:
    """The spec with any key replaced, fit for an error message."""
    scheme, sep, rest = spec.partition("://")
    if not sep:
        return REDACTED if "@" in spec else spec
    at = rest.rfind("@")
    return f"{scheme}://{REDACTED}@{rest[at + 1 :]}" if at >= 0 else spec


def _split_host_port(hostport: str, shown: str) -> tuple[str, str | None]:
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise ConfigError(f"bad Obsidian REST address {shown!r}: unclosed '[' in IPv6 host")
        host, tail = hostport[1:end], hostport[end + 1 :]
        if tail and not tail.startswith(":"):
            raise ConfigError(f"bad Obsidian REST address {shown!r}: junk after ']'")
        return host, (tail[1:] if tail else None)
    if hostport.count(":") > 1:
        raise ConfigError(f"bad Obsidian REST address {shown!r}: put IPv6 hosts in brackets, e.g. [::1]")
    host, sep, port = hostport.partition(":")
    return host, (port if sep else None)


def _parse_port(text: str | None, default: int, shown: str) -> int:
    if text is None:
        return default
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ConfigError(f"bad Obsidian REST address {shown!r}: port must be a number from 1 to 65535")
    return int(text)


def parse_rest_address(spec: str) -> RestAddress:
    """Read `http[s]://[KEY@]HOST[:PORT][/]`. The key may be percent-encoded; the host must be
    one DLE would talk to (`check_host_allowed`)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("empty Obsidian REST address")
    raw = spec.strip()
    shown = _redact_spec(raw)
    scheme, sep, rest = raw.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        raise ConfigError(f"bad Obsidian REST address {shown!r}: it must start with http:// or https://")
    if rest.endswith("/"):
        rest = rest[:-1]
    at = rest.rfind("@")
    userinfo, hostport = (rest[:at], rest[at + 1 :]) if at >= 0 else (None, rest)
    if any(c in hostport for c in "/?#"):
        raise ConfigError(f"bad Obsidian REST address {shown!r}: no path, query or fragment is allowed")
    host, port_text = _split_host_port(hostport, shown)
    if not host:
        raise ConfigError(f"bad Obsidian REST address {shown!r}: the host is missing")
    https = scheme == "https"
    port = _parse_port(port_text, DEFAULT_HTTPS_PORT if https else DEFAULT_HTTP_PORT, shown)
    host = check_host_allowed(host)
    api_key = unquote(userinfo) if userinfo else None
    return RestAddress(host, port, https, api_key)


def encode_vault_path(path: str, *, folder: bool = False) -> str:
    """Percent-encode each segment like JS encodeURIComponent; folders get a trailing '/'."""
    if not path:
        return ""
    try:
        encoded = "/".join(quote(seg, safe="!*'()~") for seg in path.split("/"))
    except UnicodeEncodeError as exc:
        raise VaultPathError("vault path is not valid Unicode text") from exc
    return encoded + "/" if folder else encoded


def url_host(host: str) -> str:
    """`host` as it goes into a URL: IPv6 addresses in brackets."""
    return f"[{host}]" if ":" in host else host
