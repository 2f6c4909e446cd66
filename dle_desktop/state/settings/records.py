"""The settings that are records of their own: configured vaults and AI connection profiles,
each read from JSON with a message that names what is wrong. Neither ever holds a secret."""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from typing import Any

from dle_desktop.errors import ConfigError


@dataclass(frozen=True)
class VaultConfig:
    """One configured vault. A folder vault has `path`; a REST vault has host/port/https.
    The REST API key is not here: it lives in the keyring under `secret_id`."""

    name: str
    kind: str = "folder"  # folder | obsidian-rest
    path: str = ""
    host: str = "127.0.0.1"
    port: int = 27123
    https: bool = False
    enabled: bool = True

    @property
    def secret_id(self) -> str:
        return f"vault:{self.name}"

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, raw: Any) -> VaultConfig:
        if not isinstance(raw, dict):
            raise ConfigError(f"a vault must be an object with at least a name, found {raw!r}")
        allowed = {f.name for f in dataclasses.fields(cls)}
        extra = set(raw) - allowed - {"apiKey", "api_key"}
        if extra:
            raise ConfigError(f"unknown vault setting(s): {', '.join(sorted(extra))}")
        if not isinstance(raw.get("name"), str) or not raw["name"].strip():
            raise ConfigError("every vault needs a non-empty name")
        kind = raw.get("kind") or ("folder" if raw.get("path") else "obsidian-rest")
        if kind not in ("folder", "obsidian-rest"):
            raise ConfigError(f"vault '{raw['name']}': kind must be folder or obsidian-rest, not {kind!r}")
        try:
            port = int(raw.get("port", 27123))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"vault '{raw['name']}': port must be a number") from exc
        if not 1 <= port <= 65535:
            raise ConfigError(f"vault '{raw['name']}': port {port} is outside 1-65535")
        return cls(
            name=raw["name"].strip(),
            kind=kind,
            path=str(raw.get("path", "")),
            host=str(raw.get("host", "127.0.0.1")),
            port=port,
            https=bool(raw.get("https", False)),
            enabled=bool(raw.get("enabled", True)),
        )


PROVIDERS = ("openai", "anthropic", "gemini", "ollama")
#: OpenAI-compatible servers we know by name (base URL defaults and structured-output rules).
OPENAI_FLAVORS = (
    "openai",
    "openrouter",
    "groq",
    "xai",
    "fireworks",
    "deepseek",
    "mistral",
    "azure",
    "llamacpp",
    "koboldcpp",
    "ollama",
    "vllm",
    "lmstudio",
    "custom",
)


@dataclass(frozen=True)
class ProfileConfig:
    """A named AI connection the user reuses across channels. The API key is not here: it lives
    in the keyring under `secret_id` (profiles are addressed by `id`, which never changes)."""

    id: str
    name: str
    provider: str = "openai"
    flavor: str = "custom"
    base_url: str = ""
    model: str = ""
    extra_headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = 20.0
    thinking: bool = False
    api_version: str = ""

    @property
    def secret_id(self) -> str:
        return f"ai-profile:{self.id}"

    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        out["extra_headers"] = dict(self.extra_headers)
        return out

    @classmethod
    def from_json(cls, raw: Any) -> ProfileConfig:
        if not isinstance(raw, dict):
            raise ConfigError(f"a connection profile must be an object, found {raw!r}")
        allowed = {f.name for f in dataclasses.fields(cls)}
        extra = set(raw) - allowed
        if "api_key" in extra or "apiKey" in extra:
            raise ConfigError(
                "connection profiles never hold API keys in the settings file; set the key in the app "
                "(it is stored in the system keyring)"
            )
        if extra:
            raise ConfigError(f"unknown connection profile setting(s): {', '.join(sorted(extra))}")
        pid, name = raw.get("id"), raw.get("name")
        if not isinstance(pid, str) or not pid.strip():
            raise ConfigError("every connection profile needs a non-empty id")
        label = f"connection profile '{pid}'"
        if not isinstance(name, str) or not name.strip():
            name = pid
        provider = raw.get("provider", "openai")
        if provider not in PROVIDERS:
            raise ConfigError(f"{label}: provider must be one of {', '.join(PROVIDERS)}, not {provider!r}")
        flavor = raw.get("flavor") or ("custom" if provider == "openai" else provider)
        if provider == "openai" and flavor not in OPENAI_FLAVORS:
            raise ConfigError(f"{label}: flavor must be one of {', '.join(OPENAI_FLAVORS)}, not {flavor!r}")
        if provider != "openai":
            flavor = provider
        base_url = raw.get("base_url", "")
        if not isinstance(base_url, str) or (base_url and not base_url.startswith(("http://", "https://"))):
            raise ConfigError(f"{label}: base_url must start with http:// or https://")
        headers = raw.get("extra_headers") or {}
        if isinstance(headers, (list, tuple)):
            headers = dict(headers)
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise ConfigError(f"{label}: extra_headers must map header names to text")
        try:
            timeout = float(raw.get("timeout_s", 20.0))
        except (TypeError, ValueError):
            raise ConfigError(f"{label}: timeout_s must be a number of seconds") from None
        if not 1 <= timeout <= 1000:
            raise ConfigError(f"{label}: timeout_s must be between 1 and 1000 seconds")
        for key in ("model", "api_version"):
            if not isinstance(raw.get(key, ""), str):
                raise ConfigError(f"{label}: {key} must be text")
        return cls(
            id=pid.strip(),
            name=name.strip(),
            provider=provider,
            flavor=flavor,
            base_url=base_url.rstrip("/"),
            model=raw.get("model", ""),
            extra_headers=tuple(sorted(headers.items())),
            timeout_s=timeout,
            thinking=bool(raw.get("thinking", False)),
            api_version=raw.get("api_version", ""),
        )


#: A SillyTavern user folder name: what ST itself allows for a handle.
_ST_USER = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
#: Characters no World Info book name may hold: it becomes `<name>.json` in ST's worlds folder.
_BOOK_FORBIDDEN = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


@dataclass(frozen=True)
class WiSyncConfig:
    """One vault folder mirrored into a SillyTavern World Info book
    (`<st_root>/data/<st_user>/worlds/<book>.json`). Off until the user turns it on."""

    book: str
    vault: str
    folder: str = ""
    st_root: str = ""
    st_user: str = "default-user"
    enabled: bool = False

    @property
    def book_path(self) -> str:
        return os.path.join(self.st_root, "data", self.st_user, "worlds", f"{self.book}.json")

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, raw: Any) -> WiSyncConfig:
        if not isinstance(raw, dict):
            raise ConfigError(f"a World Info sync must be an object with a book and a vault, found {raw!r}")
        allowed = {f.name for f in dataclasses.fields(cls)}
        extra = set(raw) - allowed
        if extra:
            raise ConfigError(f"unknown World Info sync setting(s): {', '.join(sorted(extra))}")
        book = raw.get("book")
        if not isinstance(book, str) or not book.strip():
            raise ConfigError("every World Info sync needs a book name")
        book = book.strip()
        label = f"World Info sync '{book}'"
        if _BOOK_FORBIDDEN.search(book) or book in (".", "..") or len(book) > 200:
            raise ConfigError(f'{label}: a book name cannot hold / \\ : * ? " < > | or control characters')
        for key in ("vault", "folder", "st_root", "st_user"):
            if not isinstance(raw.get(key, ""), str):
                raise ConfigError(f"{label}: {key} must be text")
        vault = raw.get("vault", "")
        if not vault.strip():
            raise ConfigError(f"{label}: the vault to mirror is missing")
        folder = raw.get("folder", "").strip().strip("/")
        if folder.startswith("/") or ".." in folder.split("/"):
            raise ConfigError(f"{label}: the folder must be inside the vault, not {folder!r}")
        user = raw.get("st_user", "default-user") or "default-user"
        if not _ST_USER.match(user):
            raise ConfigError(f"{label}: {user!r} is not a SillyTavern user folder name")
        st_root = raw.get("st_root", "")
        if st_root and not os.path.isabs(st_root):
            raise ConfigError(f"{label}: the SillyTavern folder must be an absolute path")
        return cls(
            book=book,
            vault=vault.strip(),
            folder=folder,
            st_root=st_root,
            st_user=user,
            enabled=bool(raw.get("enabled", False)),
        )
