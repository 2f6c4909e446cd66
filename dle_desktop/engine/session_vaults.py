"""Vaults opened for this run only: given with `--vault`, or handed over by a second launch.

They outlive every engine restart of the session (Settings → OK must never swap them for the
saved vaults or the sample vault) and are never written to settings.json. `rows()` tells the
Settings window which vaults are in use and where each came from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings, VaultConfig
from dle_desktop.vault.sources import VaultSource

COMMAND_LINE = "command line"
SECOND_LAUNCH = "second launch"
ADDED = "added this session"
SAVED = "saved"
SAMPLE = "sample"


@dataclass(frozen=True)
class SessionVault:
    spec: str  # a folder path (absolute) or an http(s)://HOST:PORT address
    origin: str  # COMMAND_LINE | SECOND_LAUNCH | ADDED


@dataclass(frozen=True)
class VaultRow:
    """One line of the Vaults page: a saved vault, or one this session opened (not editable)."""

    name: str
    kind: str  # folder | obsidian-rest
    location: str
    origin: str  # SAVED | COMMAND_LINE | SECOND_LAUNCH | ADDED | SAMPLE
    in_use: bool


def spec_location(spec: str) -> str:
    """Where a `--vault` argument points, without any key: the folder, or the REST base URL."""
    if spec.startswith(("http://", "https://")):
        scheme, _, rest = spec.partition("://")
        return f"{scheme.lower()}://{rest.rsplit('@', 1)[-1].rstrip('/')}"
    return str(Path(spec).expanduser().resolve())


def config_location(cfg: VaultConfig) -> str:
    if cfg.kind == "folder":
        return str(Path(cfg.path).expanduser().resolve())
    host = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
    return f"{'https' if cfg.https else 'http'}://{host}:{cfg.port}"


@dataclass
class SessionVaults:
    vaults: list[SessionVault] = field(default_factory=list)
    #: True when the session vaults stand in for the saved ones (`--vault`, as in every command);
    #: False when they were opened next to them (a second launch while the saved vaults were open).
    replaces_saved: bool = True

    @classmethod
    def from_command_line(cls, specs: list[str] | None) -> SessionVaults:
        return cls(
            [
                SessionVault(s if s.startswith(("http://", "https://")) else spec_location(s), COMMAND_LINE)
                for s in specs or ()
            ]
        )

    def __bool__(self) -> bool:
        return bool(self.vaults)

    def locations(self) -> set[str]:
        return {spec_location(v.spec) for v in self.vaults}

    def add(self, spec: str, origin: str) -> bool:
        """Open one more vault for this session; False when it is already open."""
        if spec_location(spec) in self.locations():
            return False
        if not self.vaults:
            self.replaces_saved = False  # nothing stood in for the saved vaults: open it next to them
        self.vaults.append(SessionVault(spec, origin))
        return True

    def sources(self, settings: Settings, secrets: SecretStore) -> list[VaultSource] | None:
        """The engine's vaults, or None when the session opened nothing (saved vaults, or the sample)."""
        from dle_desktop.engine.engine import source_from_config, source_from_spec

        if not self.vaults:
            return None
        sources = [] if self.replaces_saved else [source_from_config(v, secrets) for v in settings.vaults]
        taken = {s.name.lower() for s in sources}
        shown = {config_location(v) for v in settings.vaults} if not self.replaces_saved else set()
        for v in self.vaults:
            if spec_location(v.spec) in shown:
                continue  # saved too (added with Ctrl+O): open it once
            source = source_from_spec(v.spec, secrets, settings.vaults)
            source.name = _unique(source.name, taken)
            taken.add(source.name.lower())
            sources.append(source)
        return sources

    def rows(self, saved: Sequence[VaultConfig], sample_folder: str | None = None) -> list[VaultRow]:
        """Saved vaults first (in their order, so row i is saved vault i), then what this session
        opened besides them; the bundled sample (at `sample_folder`) when nothing else would open."""
        session = {spec_location(v.spec): v for v in self.vaults}
        rows = []
        for cfg in saved:
            where = config_location(cfg)
            in_use = where in session or not (self.vaults and self.replaces_saved)
            rows.append(VaultRow(cfg.name, cfg.kind, where, SAVED, in_use))
        known = {r.location for r in rows}
        for where, v in session.items():
            if where not in known:
                kind = "obsidian-rest" if v.spec.startswith(("http://", "https://")) else "folder"
                name = Path(where).name if kind == "folder" else where.partition("://")[2]
                rows.append(VaultRow(name, kind, where, v.origin, True))
        if not rows and sample_folder:
            from dle_desktop.engine.engine import SAMPLE_VAULT_NAME

            rows.append(VaultRow(SAMPLE_VAULT_NAME, "folder", sample_folder, SAMPLE, True))
        return rows


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate.lower() in taken:
        candidate = f"{name} {n}"
        n += 1
    return candidate
