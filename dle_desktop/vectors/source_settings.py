"""Which embedding source a SillyTavern `/api/vector/*` request names, and that source's settings.

ST 1.13+ sends the settings in the JSON body (`apiUrl`, `model`, `keep`, `extrasUrl`, `extrasKey`,
`embeddings`, ...); ST 1.12 sends them in `X-*` request headers and nothing in the body. We read
the body first and fall back to the headers field by field (st-wire-contracts.md §1.1).

`source`: `""` means `transformers` (ST's `String(source) || 'transformers'`); a missing or null
`source` also means `transformers` here (upstream turns it into the folder name "undefined" and then
fails to embed; ST's frontend always sends one); an unknown name is a 400.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

#: Sources ST 1.12.6 accepts in purge / purge-all.
SOURCES_1_12 = (
    "transformers",
    "mistral",
    "openai",
    "extras",
    "palm",
    "togetherai",
    "nomicai",
    "cohere",
    "ollama",
    "llamacpp",
    "vllm",
)
#: Added by 1.13+ (`vectors.js` @05baf870).
SOURCES_1_13 = ("webllm", "koboldcpp", "vertexai", "electronhub")
#: Listed by the 1.18 UI and TauriTavern's parser.
SOURCES_1_18 = ("openrouter", "chutes", "nanogpt", "siliconflow", "workers_ai")
KNOWN_SOURCES: tuple[str, ...] = SOURCES_1_12 + SOURCES_1_13 + SOURCES_1_18

#: The browser computes the vectors and sends them in `embeddings` (text → vector); stored as given.
PRECOMPUTED_SOURCES = frozenset({"koboldcpp", "webllm"})
#: Sources that call a URL the user typed (ST's `apiUrl` / `extrasUrl`).
URL_SOURCES = frozenset({"llamacpp", "vllm", "ollama", "extras"})

#: ST 1.12.6's headers: (source, body field) → header name.
HEADER_FALLBACKS: dict[tuple[str, str], str] = {
    ("llamacpp", "apiUrl"): "X-LlamaCpp-URL",
    ("vllm", "apiUrl"): "X-Vllm-URL",
    ("vllm", "model"): "X-Vllm-Model",
    ("ollama", "apiUrl"): "X-Ollama-URL",
    ("ollama", "model"): "X-Ollama-Model",
    ("ollama", "keep"): "X-Ollama-Keep",
    ("extras", "extrasUrl"): "X-Extras-Url",
    ("extras", "extrasKey"): "X-Extras-Key",
    ("openai", "model"): "X-OpenAI-Model",
    ("togetherai", "model"): "X-Togetherai-Model",
    ("cohere", "model"): "X-Cohere-Model",
}

#: Extra body fields some cloud sources carry (kept for a remote embedder; never required here).
_EXTRA_FIELDS = (
    "api",
    "vertexai_auth_mode",
    "vertexai_region",
    "vertexai_express_project_id",
    "siliconflow_endpoint",
    "workers_ai_account_id",
)

MAX_SETTING_CHARS = 2048


class SourceSettingsError(ValueError):
    """The request's source or its settings are unusable (HTTP 400)."""


@dataclass(frozen=True)
class SourceSettings:
    source: str
    api_url: str = ""
    model: str = ""
    keep: bool = False
    extras_url: str = ""
    extras_key: str = field(default="", repr=False)
    #: Precomputed vectors (koboldcpp / webllm): text → vector, exactly as the request sent them.
    embeddings: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    extra: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def precomputed(self) -> bool:
        return self.source in PRECOMPUTED_SOURCES

    @property
    def endpoint(self) -> str:
        """The URL that makes two scopes of the same model different vector spaces (TT's rule)."""
        if self.source in ("llamacpp", "vllm", "ollama"):
            return normalise_url(self.api_url)
        if self.source == "extras":
            return normalise_url(self.extras_url)
        if self.source == "siliconflow":
            return self.extra.get("siliconflow_endpoint", "")
        if self.source == "workers_ai":
            return self.extra.get("workers_ai_account_id", "")
        if self.source == "vertexai":
            return f"{self.extra.get('vertexai_region', '')}|{self.extra.get('vertexai_express_project_id', '')}"
        return ""


def normalise_url(url: str) -> str:
    return url.strip().rstrip("/")


#: What a vector scope names DLE Desktop's own server by, whatever port it listens on.
OWN_SERVER = "dle-desktop"
#: Sources whose requests go to the server's origin, and those that drop one trailing /v1
#: (ST's trimV1): other paths there reach the same embeddings.
_ORIGIN_ONLY = frozenset({"ollama", "extras"})
_TRIM_V1 = frozenset({"llamacpp", "vllm"})
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _loopback(host: str) -> bool:
    if host.rstrip(".") in _LOCAL_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified  # 0.0.0.0 and :: reach this machine too


def scope_endpoint(source: str, url: str, own_port: int | None = None) -> str:
    """The server part of a vector scope: one name for every spelling of the same server, so a
    collection is found again whether ST says localhost, 127.0.0.1, [::1] or 0.0.0.0, with or
    without a default port, a trailing slash or (where the source ignores it) a path. Our own
    server is `OWN_SERVER` whatever its port, so changing the port keeps its collections. Other
    host names (a LAN address of this machine, its host name) stay as they are."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return normalise_url(text)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if not host or scheme not in _DEFAULT_PORTS:
        return normalise_url(text)
    port = port if port is not None else _DEFAULT_PORTS[scheme]
    loopback = _loopback(host)
    if loopback and own_port is not None and port == own_port:
        return OWN_SERVER
    if loopback:
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    origin = f"{scheme}://{shown}" + ("" if port == _DEFAULT_PORTS[scheme] else f":{port}")
    path = parts.path.rstrip("/")
    if source in _ORIGIN_ONLY:
        path = ""
    elif source in _TRIM_V1 and path.endswith("/v1"):
        path = path[:-3]
    return origin + path


def canonical_profile_key(source: str, key: str, own_port: int | None = None) -> str:
    """A stored profile key (EmbeddingProfile.key()) with its endpoint line made canonical, to
    find scopes written before endpoints were (or under another port of our own server)."""
    lines = key.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("endpoint=") and line != "endpoint=":
            lines[i] = "endpoint=" + scope_endpoint(source, line[len("endpoint=") :], own_port)
    return "\n".join(lines)


def check_url(url: str, what: str) -> str:
    """An http(s) URL with a host, or SourceSettingsError (ST answers `Invalid URL` with a 500)."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        raise SourceSettingsError(f"{what} {url!r} is not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or not port_ok:
        raise SourceSettingsError(f"{what} {url!r} is not a valid http(s) URL")
    return url


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if headers is None:
        return None
    value = headers.get(name)
    if value is None:
        value = headers.get(name.lower())
    return value


def _text(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise SourceSettingsError(f"{name} must be a string")
    if len(value) > MAX_SETTING_CHARS:
        raise SourceSettingsError(f"{name} is longer than {MAX_SETTING_CHARS} characters")
    return value


def parse_source(value: Any) -> str:
    """ST's `String(source) || 'transformers'`, with unknown names refused."""
    if value is None or value == "":
        return "transformers"
    if not isinstance(value, str):
        raise SourceSettingsError("source must be a string naming an embedding source")
    source = value.strip()
    if source == "":
        return "transformers"
    if source not in KNOWN_SOURCES:
        raise SourceSettingsError(f"unknown vector source {value!r}; known sources: {', '.join(KNOWN_SOURCES)}")
    return source


def parse_source_settings(body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> SourceSettings:
    """The source and its settings: body fields (1.13+) first, `X-*` headers (1.12) as the fallback.

    Only shapes are checked here (strings are strings, URLs parse, the embeddings map is a map);
    whether a source can run with these settings is decided when it is resolved (service.py)."""
    source = parse_source(body.get("source"))

    def pick(name: str) -> str:
        value = _text(body, name)
        if value is None or value == "":
            header = HEADER_FALLBACKS.get((source, name))
            if header is not None:
                value = _header(headers, header)
                if value is not None and len(value) > MAX_SETTING_CHARS:
                    raise SourceSettingsError(f"header {header} is longer than {MAX_SETTING_CHARS} characters")
        return value or ""

    api_url = pick("apiUrl")
    model = pick("model").strip()
    extras_url = pick("extrasUrl")
    extras_key = pick("extrasKey")

    keep_raw = body.get("keep")
    if keep_raw is None:
        header = HEADER_FALLBACKS.get((source, "keep"))
        keep = bool(_header(headers, header)) if header else False  # ST 1.12: Boolean(header)
    elif isinstance(keep_raw, bool):
        keep = keep_raw
    else:
        raise SourceSettingsError("keep must be true or false")

    if api_url and source in ("llamacpp", "vllm", "ollama"):
        api_url = check_url(api_url, "apiUrl")
    if extras_url and source == "extras":
        extras_url = check_url(extras_url, "extrasUrl")

    embeddings = body.get("embeddings")
    if embeddings is not None and not isinstance(embeddings, dict):
        raise SourceSettingsError("embeddings must be an object mapping each text to its vector")

    extra: dict[str, str] = {}
    for name in _EXTRA_FIELDS:
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise SourceSettingsError(f"{name} must be a string")
        extra[name] = str(value)[:MAX_SETTING_CHARS]

    return SourceSettings(
        source=source,
        api_url=api_url,
        model=model,
        keep=keep,
        extras_url=extras_url,
        extras_key=extras_key,
        embeddings=embeddings,
        extra=extra,
    )


def js_number(value: Any) -> float:
    """JavaScript's `Number(value)` for what JSON can carry: numbers as they are, booleans 0/1,
    null 0, strings parsed (blank → 0, junk → NaN), arrays and objects NaN (close enough: ST
    never sends them)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if value is None:
        return 0.0
    if isinstance(value, str):
        text = value.strip()
        if text == "":
            return 0.0
        try:
            if text.lower().startswith(("0x", "0o", "0b")):
                return float(int(text, 0))
            if text in ("Infinity", "+Infinity"):
                return math.inf
            if text == "-Infinity":
                return -math.inf
            if any(c.isalpha() and c not in "eE" for c in text):  # Python would accept "nan", "inf"
                return math.nan
            return float(text)
        except ValueError:
            return math.nan
    return math.nan
