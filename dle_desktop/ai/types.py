"""What the provider layer talks about: where to send a chat (ConnectionProfile), what to send
(ChatRequest) and what came back (ChatResponse). All immutable; the API key is never part of any
of them (it stays in the OS keyring and is handed to the client per call)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from dle_desktop.errors import ConfigError
from dle_desktop.state.settings.records import OPENAI_FLAVORS, PROVIDERS  # declared once, with the profiles

#: (provider, flavor) → the URL used when a profile leaves `base_url` empty. Keyed by both because
#: Ollama has two doors: its OpenAI-compatible /v1 and its native /api.
DEFAULT_BASE_URLS: dict[tuple[str, str], str] = {
    ("openai", "openai"): "https://api.openai.com/v1",
    ("openai", "openrouter"): "https://openrouter.ai/api/v1",
    ("openai", "groq"): "https://api.groq.com/openai/v1",
    ("openai", "xai"): "https://api.x.ai/v1",
    ("openai", "fireworks"): "https://api.fireworks.ai/inference/v1",
    ("openai", "deepseek"): "https://api.deepseek.com/v1",
    ("openai", "mistral"): "https://api.mistral.ai/v1",
    ("openai", "llamacpp"): "http://127.0.0.1:8080/v1",
    ("openai", "koboldcpp"): "http://127.0.0.1:5001/v1",
    ("openai", "ollama"): "http://127.0.0.1:11434/v1",
    ("openai", "vllm"): "http://127.0.0.1:8000/v1",
    ("openai", "lmstudio"): "http://127.0.0.1:1234/v1",
    ("anthropic", "anthropic"): "https://api.anthropic.com",
    ("gemini", "gemini"): "https://generativelanguage.googleapis.com",
    ("ollama", "ollama"): "http://127.0.0.1:11434",
}

FLAVOR_LABELS: dict[str, str] = {
    "openai": "OpenAI",
    "openrouter": "OpenRouter",
    "groq": "Groq",
    "xai": "xAI",
    "fireworks": "Fireworks",
    "deepseek": "DeepSeek",
    "mistral": "Mistral",
    "azure": "Azure OpenAI",
    "llamacpp": "llama.cpp server",
    "koboldcpp": "KoboldCpp",
    "ollama": "Ollama",
    "vllm": "vLLM",
    "lmstudio": "LM Studio",
    "custom": "OpenAI-compatible server",
    "anthropic": "Anthropic",
    "gemini": "Gemini",
}

#: Servers that answer with whatever model they have loaded, so a profile may leave the model empty
#: (the request then carries no `model`). Ollama and vLLM pick by name, so they need one.
_MODEL_OPTIONAL = frozenset({"llamacpp", "koboldcpp", "lmstudio", "custom"})
#: How the profile editor describes an empty model where `model_optional` allows one.
LOADED_MODEL_HINT = "empty = whatever model the server has loaded"
#: A GA api-version that supports json_schema response formats; users with older resources set theirs.
AZURE_DEFAULT_API_VERSION = "2024-10-21"
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def model_optional(provider: str, flavor: str) -> bool:
    """Whether a connection may leave the model empty and get the server's loaded model. The one
    rule the profile check, the profile editor and every channel follow."""
    return provider == "openai" and flavor in _MODEL_OPTIONAL


def default_base_url(provider: str, flavor: str) -> str:
    """The built-in URL for this provider/flavor, or "" when the user must give one (azure, custom)."""
    return DEFAULT_BASE_URLS.get((provider, flavor), "")


def _pairs(headers: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> tuple[tuple[str, str], ...]:
    if not headers:
        return ()
    items = headers.items() if isinstance(headers, Mapping) else headers
    return tuple((str(k), str(v)) for k, v in items)


@dataclass(frozen=True)
class ConnectionProfile:
    """One AI connection. `extra_headers` accepts a dict but is stored as a tuple of pairs so that
    profiles stay hashable (usable as cache keys). Constructing a profile validates it."""

    id: str
    name: str
    provider: str
    flavor: str = ""  # "" → the provider's own name ("openai" for the openai provider)
    base_url: str = ""  # "" → default_base_url(provider, flavor)
    model: str = ""
    secret_id: str = ""  # the keyring name of the API key; "" = no key
    extra_headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = 20.0
    thinking: bool = False
    api_version: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra_headers", _pairs(self.extra_headers))
        if not self.flavor:
            object.__setattr__(self, "flavor", self.provider)
        _validate(self)

    @property
    def label(self) -> str:
        """A plain name for the kind of server, for messages ("OpenRouter", "llama.cpp server")."""
        return FLAVOR_LABELS.get(self.flavor, self.flavor)

    @property
    def endpoint(self) -> str:
        """The base URL actually used, without a trailing slash."""
        return (self.base_url.strip() or default_base_url(self.provider, self.flavor)).rstrip("/")

    @property
    def headers(self) -> dict[str, str]:
        return dict(self.extra_headers)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "provider": self.provider,
            "flavor": self.flavor,
            "base_url": self.base_url,
            "model": self.model,
            "secret_id": self.secret_id,
            "extra_headers": dict(self.extra_headers),
            "timeout_s": self.timeout_s,
            "thinking": self.thinking,
            "api_version": self.api_version,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConnectionProfile:
        """Read a stored profile. Unknown keys are ignored so that newer files still load."""
        if not isinstance(data, Mapping):
            raise ConfigError("a connection profile must be a JSON object")
        name = data.get("name") if isinstance(data.get("name"), str) else data.get("id")
        where = f"connection profile {name!r}" if isinstance(name, str) and name else "connection profile"

        def text(key: str, default: str = "") -> str:
            value = data.get(key, default)
            if value is None:
                return default
            if not isinstance(value, str):
                raise ConfigError(f"{where}: {key!r} must be text, not {type(value).__name__}")
            return value.strip()

        headers = data.get("extra_headers") or {}
        if not isinstance(headers, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise ConfigError(f"{where}: 'extra_headers' must be an object of text values")
        timeout = data.get("timeout_s", 20.0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise ConfigError(f"{where}: 'timeout_s' must be a number of seconds")
        thinking = data.get("thinking", False)
        if not isinstance(thinking, bool):
            raise ConfigError(f"{where}: 'thinking' must be true or false")
        return cls(
            id=text("id"),
            name=text("name"),
            provider=text("provider"),
            flavor=text("flavor"),
            base_url=text("base_url"),
            model=text("model"),
            secret_id=text("secret_id"),
            extra_headers=_pairs(headers),
            timeout_s=float(timeout),
            thinking=thinking,
            api_version=text("api_version"),
        )


def _validate(p: ConnectionProfile) -> None:
    where = f"connection profile {p.name or p.id or '(unnamed)'!r}"
    if p.provider not in PROVIDERS:
        raise ConfigError(f"{where}: unknown provider {p.provider!r}; use one of {', '.join(PROVIDERS)}")
    if p.provider == "openai":
        if p.flavor not in OPENAI_FLAVORS:
            raise ConfigError(
                f"{where}: unknown OpenAI-compatible flavor {p.flavor!r}; use one of {', '.join(OPENAI_FLAVORS)}"
            )
    elif p.flavor != p.provider:
        raise ConfigError(f"{where}: the {p.provider} provider has no flavor {p.flavor!r}")
    url = p.endpoint
    if not url:
        raise ConfigError(f"{where}: a {p.label} connection needs a server URL")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise ConfigError(f"{where}: the server URL is not valid ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"{where}: the server URL must start with http:// or https://")
    if not host:
        raise ConfigError(f"{where}: the server URL has no host name")
    if parts.username or parts.password:
        # Keys in URLs end up in logs and error messages; the keyring is the only place for them.
        raise ConfigError(f"{where}: put credentials in the API key field, not in the server URL")
    if parts.query or parts.fragment:
        raise ConfigError(f"{where}: the server URL must not carry a query (?…) or fragment (#…)")
    if not p.model.strip() and not model_optional(p.provider, p.flavor):
        what = "deployment name" if p.flavor == "azure" else "model name"
        raise ConfigError(f"{where}: a {p.label} connection needs a {what}")
    if not math.isfinite(p.timeout_s) or not 0 < p.timeout_s <= 1_000_000:
        raise ConfigError(f"{where}: the timeout must be a positive number of seconds")
    for key, value in p.extra_headers:
        if not _HEADER_NAME.match(key):
            raise ConfigError(f"{where}: {key!r} is not a valid header name")
        if "\r" in value or "\n" in value:
            raise ConfigError(f"{where}: the value of header {key!r} must be on one line")


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: `parameters` is a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. `args` is None when its arguments were not a JSON object
    (the caller answers with a tool error rather than guessing)."""

    id: str
    name: str
    args: dict[str, Any] | None


@dataclass(frozen=True)
class Turn:
    """A conversation turn after the request's first user message, in no wire format: "user"
    (text), "assistant" (text and/or tool calls) or "tool" (the result of call `call_id`)."""

    role: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    call_id: str = ""
    name: str = ""


@dataclass(frozen=True)
class ChatRequest:
    """One chat turn: a system prompt and a user message made of parts. `json_schema` is
    `{"name": ..., "schema": {...}, "description"?: ...}` when a structured answer is wanted;
    `cache_hint` marks user_parts[0] as the big stable part (Anthropic prompt caching)."""

    system: str
    user_parts: tuple[str, ...]
    max_tokens: int
    json_schema: dict[str, Any] | None = None
    cache_hint: bool = False
    force_user_role: bool = False
    temperature: float | None = None
    #: the conversation after the first user message (multi-turn tool use)
    turns: tuple[Turn, ...] = ()
    #: tools offered to the model; a reply may then carry `ChatResponse.tool_calls`
    tools: tuple[ToolSpec, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "turns", tuple(self.turns))
        object.__setattr__(self, "tools", tuple(self.tools))
        if isinstance(self.user_parts, str):
            object.__setattr__(self, "user_parts", (self.user_parts,))
        else:
            object.__setattr__(self, "user_parts", tuple(self.user_parts))
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ConfigError("max_tokens must be a positive whole number")
        schema = self.json_schema
        if schema is not None and not (
            isinstance(schema, Mapping)
            and isinstance(schema.get("name"), str)
            and schema["name"]
            and isinstance(schema.get("schema"), Mapping)
        ):
            raise ConfigError("json_schema must be {'name': str, 'schema': {...}}")

    @property
    def user_text(self) -> str:
        return "\n\n".join(self.user_parts)

    @property
    def merged_user_text(self) -> str:
        """The single user message used when the system role is not wanted."""
        return merge_instructions(self.system, self.user_text)


def merge_instructions(system: str, user: str) -> str:
    """DLE's aiForceUserRole shape, for models that reject a system role."""
    return f"[Instructions]\n{system}\n\n---\n\n{user}" if system else user


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


#: Finish reasons that mean "stopped at the token limit", per provider spelling.
_LENGTH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})


@dataclass(frozen=True)
class ChatResponse:
    text: str
    structured: object | None = None
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def hit_token_limit(self) -> bool:
        """True when the answer was cut at max_tokens (often all spent on hidden reasoning)."""
        return self.finish_reason in _LENGTH_REASONS


__all__ = [
    "AZURE_DEFAULT_API_VERSION",
    "DEFAULT_BASE_URLS",
    "FLAVOR_LABELS",
    "OPENAI_FLAVORS",
    "PROVIDERS",
    "ChatRequest",
    "ChatResponse",
    "ConnectionProfile",
    "ToolCall",
    "ToolSpec",
    "Turn",
    "Usage",
    "default_base_url",
    "merge_instructions",
]
