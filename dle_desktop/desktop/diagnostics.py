"""One file to attach to a bug report: versions, platform, settings, the last log lines, index and
vector-store stats, the last decision records and recent errors; a zip, or plain text.

It is read from the files on disk, so `dle-desktop diagnostics` works while the app runs (or has
crashed); the app adds what only a running engine knows (`status`, `runtime`). Everything written
goes through `desktop.redact.Redactor`: no key, token or password reaches the report."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import platform
import sqlite3
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from dle_desktop import __version__
from dle_desktop.desktop.redact import Redactor, environment_secrets
from dle_desktop.fileio import atomic_file
from dle_desktop.logging_setup import log_files

log = logging.getLogger(__name__)

LOG_LINES = 500
RECORDS = 20
ERRORS = 50
#: Distributions whose versions say most about a bug (the Qt binding, llama.cpp's, the store's).
PACKAGES = (
    "PySide6-Essentials",
    "PySide6",
    "shiboken6",
    "qasync",
    "llama-cpp-python",
    "numpy",
    "hnswlib",
    "keyring",
    "httpx",
    "starlette",
    "uvicorn",
    "watchdog",
    "PyYAML",
    "rapidfuzz",
    "igraph",
    "platformdirs",
)
#: Secrets the app stores under fixed names (besides vault:<name> and ai-profile:<id>).
FIXED_SECRET_NAMES = (
    "server-token",
    "olra-api-key",
    "cli-obsidian-rest",
    "api_key_koboldcpp",
    "api_key_togetherai",
    "api_key_openrouter",
)
_LEVELS = (" WARNING ", " ERROR ", " CRITICAL ")


@dataclass
class Report:
    data: dict
    log_tail: list[str]
    redactor: Redactor = field(default_factory=Redactor)

    def members(self) -> dict[str, str]:
        """The report's files, each through the redactor's last net."""
        final = self.redactor.final
        return {
            "README.txt": final(README),
            "summary.txt": final(summary(self.data)),
            "diagnostics.json": final(json.dumps(self.data, indent=1, ensure_ascii=False, default=str)),
            "log-tail.txt": final("\n".join(self.log_tail) + "\n"),
        }


README = """DLE Desktop diagnostics, to attach to a bug report.

summary.txt       the versions and counts at a glance
diagnostics.json  versions, platform, settings, index and vector-store stats, the last decision
                  records (entry titles, the reasons, the semantic query text) and recent errors
log-tail.txt      the last lines of the log

API keys, tokens and passwords are replaced by *** and the home folder by ~. Look it over before
you post it: vault and note names, chat ids and the chat text in semantic queries are kept.
"""


def known_secret_values(settings, secrets) -> set[str]:
    """Every secret value the store can tell us about, looked up by the names the app uses."""
    values = set(environment_secrets())
    if secrets is None:
        return values
    names = [
        *FIXED_SECRET_NAMES,
        *(v.secret_id for v in settings.vaults),
        *(p.secret_id for p in settings.connection_profiles),
    ]
    for name in names:
        try:
            value = secrets.get(name)
        except Exception:
            log.debug("diagnostics: reading %s failed", name, exc_info=True)
            continue
        if value:
            values.add(value)
    held = getattr(secrets, "held_values", None)
    if callable(held):
        values |= held()
    return values


def collect(
    paths,
    settings,
    secrets=None,
    *,
    status: dict | None = None,
    runtime: dict | None = None,
    settings_problem: str | None = None,
    log_lines: int = LOG_LINES,
    records: int = RECORDS,
) -> Report:
    """The report for the app whose files are under `paths`. `status`: a running engine's
    `Engine.status()`; `runtime`: other live facts (server address and error...)."""
    redactor = Redactor(known_secret_values(settings, secrets))
    lines = _tail(log_files(paths.logs_dir), log_lines)
    data = {
        "generated_at": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "app": {"version": __version__, "frozen": bool(getattr(sys, "frozen", False)), "executable": sys.executable},
        "platform": versions(),
        "paths": {"config": str(paths.config_dir), "data": str(paths.data_dir), "logs": str(paths.logs_dir)},
        "keyring": {"location": getattr(secrets, "location", None), "persistent": getattr(secrets, "persistent", None)},
        "settings": settings.to_json(),
        "settings_problem": settings_problem,
        "index": {"running": status, "cache": _index_cache(paths.index_cache_dir)},
        "vectors": _vectors(paths.vectors_dir, paths.models_dir),
        "decision_records": _records(paths.state_db, records),
        "recent_errors": _errors(log_files(paths.logs_dir)),
        "runtime": runtime,
    }
    data = redactor.value(data)
    return Report(data, [redactor.text(line) for line in lines], redactor)


def versions() -> dict:
    qt = None
    core = sys.modules.get("PySide6.QtCore")  # only when the app already loaded Qt: never import it here
    if core is not None:
        try:
            qt = core.qVersion()
        except Exception:  # noqa: BLE001 - a report must be written whatever Qt says
            qt = None
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return {
        "os": platform.platform(),
        "system": platform.system(),
        "release": platform.release(),
        "machine": platform.machine(),
        "python": sys.version,
        "implementation": platform.python_implementation(),
        "qt": qt,
        "llama_cpp": packages.get("llama-cpp-python"),
        "packages": packages,
    }


def _tail(files: list[Path], count: int) -> list[str]:
    """The last `count` lines across the log and its rotated copies (`files` newest first)."""
    out: list[str] = []
    for f in files:
        try:
            lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as exc:
            out[:0] = [f"(cannot read {f.name}: {exc.strerror or exc})"]
            continue
        out[:0] = lines[-(count - len(out)) :]
        if len(out) >= count:
            break
    return out[-count:]


def _errors(files: list[Path], count: int = ERRORS) -> list[str]:
    """The newest warnings and errors, each with its traceback (the lines up to the next record)."""
    found: list[str] = []
    for f in files:
        try:
            lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        events: list[list[str]] = []
        current: list[str] | None = None
        for line in lines:
            if line[:4].isdigit():  # a new record ("2026-01-01 12:00:00,123 LEVEL name: ...")
                current = [line] if any(level in line[:40] for level in _LEVELS) else None
                if current is not None:
                    events.append(current)
            elif current is not None:
                current.append(line)
        found[:0] = ["\n".join(e[:40]) for e in events]
        if len(found) >= count:
            break
    return found[-count:]


def _index_cache(directory: Path) -> list[dict]:
    """What each vault's index cache holds: the last index the app built, and when."""
    from dle_desktop.core.entry import Entry
    from dle_desktop.vault.cache import IndexCache

    out = []
    for f in sorted(directory.glob("*.idx")) if directory.is_dir() else ():
        info: dict = {
            "file": f.name,
            "bytes": f.stat().st_size,
            "written": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(f.stat().st_mtime)),
        }
        try:
            key, records = IndexCache.read_file(f)
            kind, name, location, _ = key.split("|", 3)
            results = [r.result for r in records.values()]
            info |= {
                "vault": name,
                "kind": kind,
                "location": location,
                "files": len(results),
                "entries": sum(isinstance(r, Entry) for r in results),
            }
        except Exception as exc:  # noqa: BLE001 - a damaged cache is worth reporting, not failing on
            info["problem"] = f"{type(exc).__name__}: {exc}"[:300]
        out.append(info)
    return out


def _vectors(root: Path, models: Path) -> dict:
    from dle_desktop.vectors.store_scope import peek

    scopes = []
    if root.is_dir():
        for sdir in sorted(root.glob("c-*/s-*")):
            info = peek(sdir) if sdir.is_dir() else None
            size = sum(p.stat().st_size for p in sdir.rglob("*") if p.is_file())
            scopes.append((info or {"problem": "unreadable"}) | {"folder": sdir.name, "bytes": size})
    gguf = (
        [{"file": p.name, "bytes": p.stat().st_size} for p in sorted(models.glob("*.gguf"))] if models.is_dir() else []
    )
    return {"scopes": scopes, "items": sum(s.get("count", 0) for s in scopes), "models": gguf}


def _records(db: Path, limit: int) -> list[dict]:
    if not db.is_file():
        return []
    try:
        # Read-only, so a report taken while the app runs never writes (or locks) its state.
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            rows = con.execute(
                "SELECT chat_id, gen, created_at, record FROM generations ORDER BY created_at DESC LIMIT ?", (limit,)
            ).fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        return [{"problem": f"cannot read the decision records: {exc}"}]
    out = []
    for chat, gen, at, raw in rows:
        try:
            record = json.loads(raw)
        except ValueError:
            record = {"problem": "unreadable record"}
        out.append(
            {
                "chat_id": chat,
                "gen": gen,
                "at": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at)),
                **(record if isinstance(record, dict) else {"record": record}),
            }
        )
    return out


def summary(data: dict) -> str:
    p, idx, vec = data["platform"], data["index"], data["vectors"]
    lines = [
        f"DLE Desktop {data['app']['version']}{' (frozen)' if data['app']['frozen'] else ''}, {data['generated_at']}",
        f"OS: {p['os']} ({p['machine']})",
        f"Python: {p['python'].split()[0]} ({p['implementation']})",
        f"Qt: {p['qt'] or 'not loaded'} (PySide6 {p['packages'].get('PySide6-Essentials') or p['packages'].get('PySide6')})",
        f"llama.cpp (llama-cpp-python): {p['llama_cpp'] or 'not installed'}",
        f"Keys kept in: {data['keyring']['location']}",
    ]
    running = idx.get("running")
    if running:
        lines.append(
            f"Index: {running.get('entries')} entries, {running.get('skipped')} skipped, "
            f"built {_when(running.get('index_built_at'))}, last error: {running.get('last_error') or 'none'}"
        )
        lines += [
            f"  vault {v['name']} ({v['kind']}): {v['entries']} entries{', error: ' + v['error'] if v.get('error') else ''}"
            for v in running.get("vaults", [])
        ]
    for c in idx["cache"]:
        lines.append(
            f"Index cache {c.get('vault', c['file'])}: {c.get('entries', '?')} entries in "
            f"{c.get('files', '?')} files, written {c['written']}"
        )
    lines.append(
        f"Vector store: {len(vec['scopes'])} scopes, {vec['items']} items; models: "
        f"{', '.join(m['file'] for m in vec['models']) or 'none'}"
    )
    lines.append(
        f"Decision records: {len(data['decision_records'])}; recent warnings and errors: {len(data['recent_errors'])}"
    )
    if data.get("settings_problem"):
        lines.append(f"Settings problem: {data['settings_problem']}")
    return "\n".join(lines) + "\n"


def _when(ts) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if isinstance(ts, (int, float)) else "never"


def write_zip(report: Report, out: Path) -> Path:
    """The report as a zip at `out`, readable only by the user (it names their notes and chats)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(out, private=True) as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in report.members().items():
            zf.writestr(f"dle-desktop-diagnostics/{name}", text)
    return out


def render_text(report: Report) -> str:
    m = report.members()
    return (
        f"{m['summary.txt']}\n===== diagnostics.json =====\n{m['diagnostics.json']}\n"
        f"===== last {len(report.log_tail)} log lines =====\n{m['log-tail.txt']}"
    )


def default_name(text: bool = False) -> str:
    return f"dle-desktop-diagnostics-{time.strftime('%Y%m%d-%H%M%S')}.{'txt' if text else 'zip'}"
