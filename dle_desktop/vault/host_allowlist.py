"""The hosts DeepLore Enhanced will send an Obsidian REST API key to: loopback, private-LAN,
link-local and ULA addresses and `localhost`, never a DNS name that may resolve to a public
address, never a cloud metadata service."""

from __future__ import annotations

import ipaddress
import re

from dle_desktop.errors import ConfigError

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})
_V4_ALLOWED = tuple(
    ipaddress.IPv4Network(n) for n in ("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16")
)
_V6_ALLOWED = tuple(ipaddress.IPv6Network(n) for n in ("::1/128", "fd00::/8", "fe80::/10"))
# Cloud metadata services sit inside link-local / ULA space; a Bearer key has no business there.
_METADATA_HOSTS = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")})
# Strict dotted quad, no leading zeros: "0177.0.0.1" (octal) and "127.1" (shorthand) are refused
# because resolvers disagree on what they mean.
_DOTTED_QUAD = re.compile(r"(?:0|[1-9]\d{0,2})(?:\.(?:0|[1-9]\d{0,2})){3}")
_NUMERIC_HOST = re.compile(r"(?:0x[0-9a-f]*|\d+)(?:\.(?:0x[0-9a-f]*|\d+))*\.?")


def _refuse_host(host: str, why: str) -> ConfigError:
    return ConfigError(
        f"Obsidian REST host {host!r} is not allowed ({why}). Only loopback, private-LAN "
        "(10/8, 172.16/12, 192.168/16), link-local and ULA addresses or 'localhost' are accepted, "
        "so the vault's API key never leaves the local network."
    )


def _host_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The literal IP `host` spells, None for a name; refuses ambiguous numeric forms."""
    if ":" in host:
        if "%" in host:
            # Browsers (and so DLE) cannot put a zone id in a URL either.
            raise _refuse_host(host, "IPv6 zone ids such as %eth0 are not supported")
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise _refuse_host(host, "not a valid IPv6 address") from None
    if _DOTTED_QUAD.fullmatch(host):
        try:
            return ipaddress.IPv4Address(host)
        except ValueError:
            raise _refuse_host(host, "not a valid IPv4 address") from None
    if _NUMERIC_HOST.fullmatch(host):
        raise _refuse_host(host, "numeric, octal or hex shorthand addresses are ambiguous")
    return None


def _ip_allowed(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if ip in _METADATA_HOSTS:
        return False
    if isinstance(ip, ipaddress.IPv4Address):
        return any(ip in net for net in _V4_ALLOWED)
    mapped = ip.ipv4_mapped
    if mapped is not None:
        # DLE only accepts the IPv4-mapped loopback (::ffff:127.*).
        return mapped in _V4_ALLOWED[0]
    return any(ip in net for net in _V6_ALLOWED)


def check_host_allowed(host: str) -> str:
    """Return `host` normalised (lowercase, no brackets) if DLE would talk to it, else ConfigError."""
    if not isinstance(host, str) or not host.strip():
        raise ConfigError("Obsidian REST host is empty")
    h = host.strip().lower()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    if h in _LOCAL_NAMES:
        return h
    ip = _host_ip(h)
    if ip is None:
        raise _refuse_host(host, "DNS names other than localhost may resolve to public addresses")
    if not _ip_allowed(ip):
        raise _refuse_host(host, "not a loopback, private or link-local address")
    return h
