"""Strict parsing of `Host` headers, host names and browser `Origin`s, shared by the server's
access checks and the settings that list allowed hosts and origins.

Every form is canonical after parsing (lower case, IPv6 compressed in brackets, default ports
dropped from origins), so an allow-list check is one set lookup. Anything a lenient parser would
read two ways (`[::1]evil.example`, `127.0.0.1:1@evil.example`, zone ids, empty ports) is refused."""

from __future__ import annotations

import ipaddress
import re

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_DOTTED = re.compile(r"[0-9.]+")
_ORIGIN = re.compile(r"(https?)://([^/?#]*)")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_host(value: str) -> tuple[str, int | None]:
    """`host[:port]` as (canonical host, port or None); ValueError says what is wrong."""
    text = value.strip().lower()
    if not text:
        raise ValueError("it is empty")
    if text.startswith("["):
        end = text.find("]")
        literal, rest = (text[1:end], text[end + 1 :]) if end != -1 else ("", "")
        if end == -1 or "%" in literal:
            raise ValueError(f"{value!r} is not a bracketed IPv6 address")
        try:
            host = f"[{ipaddress.IPv6Address(literal).compressed}]"
        except ValueError:
            raise ValueError(f"{value!r} is not a bracketed IPv6 address") from None
    else:
        host, colon, port_text = text.partition(":")
        rest = colon + port_text
        if _DOTTED.fullmatch(host):
            try:
                host = str(ipaddress.IPv4Address(host))
            except ValueError:
                raise ValueError(f"{host!r} is not an IPv4 address") from None
        elif len(host) > 253 or not _NAME.fullmatch(host):
            raise ValueError(f"{value!r} is not a host name (letters, digits, '-', '_' and dots only)")
    if not rest:
        return host, None
    port_text = rest[1:]
    if rest[0] != ":" or not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
        raise ValueError(f"{value!r} has something other than ':PORT' after the host")
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise ValueError(f"port {port} in {value!r} is outside 1-65535")
    return host, port


def host_name(value: str) -> str:
    """A host name or address as the user may list it (no port): its canonical form."""
    host, port = parse_host(value)
    if port is not None:
        raise ValueError(f"{value!r}: give the host name or address without a port")
    return host


def parse_origin(value: str) -> str:
    """An `http(s)://host[:port]` origin in canonical form; ValueError for anything else
    (including `null`, paths, user names and other schemes)."""
    m = _ORIGIN.fullmatch(value.strip().lower())
    if m is None:
        raise ValueError(f"{value!r} is not an origin like http://127.0.0.1:8000")
    scheme = m[1]
    host, port = parse_host(m[2])
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def is_loopback_address(address: str | None) -> bool:
    """Whether a socket peer address (no brackets) is this machine's loopback."""
    if not address:
        return False
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


def is_loopback_bind(host: str) -> bool:
    """Whether a server bound to `host` listens on this machine's loopback only."""
    return host.lower() in ("localhost", "127.0.0.1", "::1", "[::1]") or is_loopback_address(host)
