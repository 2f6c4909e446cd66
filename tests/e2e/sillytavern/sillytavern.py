"""A real SillyTavern server for the end-to-end suite: the npm package `sillytavern` that
`scripts/st-e2e` unpacks into a cache folder outside the repository (with its own node_modules
inside, as a git checkout has them: SillyTavern refuses to read files outside its folder, its
WebAssembly image codecs included), started as `node server.js`
on 127.0.0.1 with a data root of its own (and a config file of its own where the version can take
one), so that a test session never touches the cached install's user data.

What the test session needs SillyTavern to know (the chat-completion source, the extension's
settings) goes into the user's `settings.json` before the start: SillyTavern only copies its
default content where a file is missing, so a seeded file wins on every version we support."""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

DEFAULT_VERSION = "1.19.0"
USER = "default-user"  # the only user while user accounts are off (SillyTavern's default)


class SillyTavernError(RuntimeError):
    """SillyTavern is missing, would not start or stopped answering; the message says what to do."""


def st_version() -> str:
    return os.environ.get("DLE_ST_VERSION", "").strip() or DEFAULT_VERSION


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "dle-desktop"


def install_dir(version: str) -> Path:
    """Where `scripts/st-e2e` put SillyTavern `version` (DLE_ST_DIR overrides, for a git checkout)."""
    override = os.environ.get("DLE_ST_DIR", "").strip()
    if override:
        return Path(override)
    return cache_root() / f"st-{version}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chat_completion_settings(
    base: dict[str, Any], llm_url: str, *, model: str = "fake-model", stream: bool = True
) -> dict[str, Any]:
    """`base` (SillyTavern's default settings.json) aimed at an OpenAI-compatible server at
    `llm_url` through the Custom chat-completion source, with the first-run persona prompt off
    and the API connected on load."""
    settings = copy.deepcopy(base)
    settings["firstRun"] = False
    settings["main_api"] = "openai"
    settings.setdefault("power_user", {})["auto_connect"] = True
    oai = settings.setdefault("oai_settings", {})
    oai.update(
        {"chat_completion_source": "custom", "custom_url": llm_url, "custom_model": model, "stream_openai": stream}
    )
    return settings


class SillyTavern:
    """One SillyTavern process. `start()` returns when it answers over HTTP; `stop()` ends it with
    SIGTERM (SillyTavern's own clean exit), then SIGKILL if it lingers."""

    def __init__(self, st_dir: Path, root: Path, *, port: int | None = None, node: str = "node") -> None:
        self.st_dir = st_dir
        self.root = root
        self.data_root = root / "data"
        self.user_dir = self.data_root / USER
        self.config_path = root / "config.yaml"
        self.log_path = root / "sillytavern.log"
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.node = node
        self.proc: subprocess.Popen[bytes] | None = None
        if not (st_dir / "server.js").is_file():
            raise SillyTavernError(
                f"no SillyTavern at {st_dir}: run scripts/st-e2e (it installs the npm package "
                f"`sillytavern` there), or set DLE_ST_DIR to a SillyTavern folder"
            )

    # ---- what SillyTavern is

    @property
    def version(self) -> str:
        return str(json.loads((self.st_dir / "package.json").read_text(encoding="utf-8")).get("version", "?"))

    def takes_config_path(self) -> bool:
        """1.12 reads `config.yaml` beside server.js only; later versions take `--configPath`."""
        source = self.st_dir / "src" / "command-line.js"
        return source.is_file() and "configPath" in source.read_text(encoding="utf-8")

    def default_settings(self) -> dict[str, Any]:
        return json.loads((self.st_dir / "default" / "content" / "settings.json").read_text(encoding="utf-8"))

    # ---- before the start

    def seed_settings(self, settings: dict[str, Any]) -> Path:
        target = self.user_dir / "settings.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(settings, indent=4), encoding="utf-8")
        return target

    def install_extension(self, source: Path, name: str, *, for_all_users: bool = False) -> Path:
        """Copy a UI extension into the user's own extensions folder (`data/<user>/extensions/<name>`)
        or, `for_all_users`, into `public/scripts/extensions/third-party/<name>` of the install itself
        (remove it with `uninstall_extension`: that folder outlives this data root). Both are served
        as `/scripts/extensions/third-party/<name>` on 1.12 and later; the user's copy wins."""
        target = (
            self.st_dir / "public" / "scripts" / "extensions" / "third-party" / name
            if for_all_users
            else self.user_dir / "extensions" / name
        )
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target)
        return target

    def uninstall_extension(self, name: str, *, for_all_users: bool = False) -> None:
        target = (
            self.st_dir / "public" / "scripts" / "extensions" / "third-party" / name
            if for_all_users
            else self.user_dir / "extensions" / name
        )
        shutil.rmtree(target, ignore_errors=True)

    # ---- lifecycle

    def command(self) -> list[str]:
        cmd = [
            self.node,
            "server.js",
            "--port",
            str(self.port),
            "--listen",
            "false",
            "--whitelist",
            "false",
            "--autorun",
            "false",
            "--dataRoot",
            str(self.data_root),
        ]
        if self.takes_config_path():
            cmd += ["--configPath", str(self.config_path)]
        return cmd

    @property
    def webpack_keep(self) -> Path:
        return self.st_dir / ".dle-e2e-webpack"

    def start(self, timeout: float = 180.0) -> SillyTavern:
        self.data_root.mkdir(parents=True, exist_ok=True)
        # Since 1.13 SillyTavern bundles its browser libraries into <data root>/_webpack (into its own
        # dist/ inside containers): about a minute of CPU that a fresh data root would pay every run.
        if self.webpack_keep.is_dir() and not (self.data_root / "_webpack").exists():
            shutil.copytree(self.webpack_keep, self.data_root / "_webpack")
        env = {**os.environ, "NODE_ENV": "production", "FORCE_COLOR": "0", "NO_COLOR": "1"}
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                self.command(),
                cwd=self.st_dir,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        self._wait_until(self._answers, timeout, "SillyTavern did not answer on " + self.url)
        return self

    def stop(self, timeout: float = 15.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: node and nothing else of ours
            proc.wait(timeout)
        built = self.data_root / "_webpack"
        if built.is_dir() and not self.webpack_keep.exists():
            shutil.copytree(built, self.webpack_keep.with_name(self.webpack_keep.name + ".part"), dirs_exist_ok=True)
            self.webpack_keep.with_name(self.webpack_keep.name + ".part").rename(self.webpack_keep)

    def __enter__(self) -> SillyTavern:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- observing

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def _answers(self) -> bool:
        try:
            return httpx.get(self.url + "/", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def _wait_until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.proc is not None and self.proc.poll() is not None:
                raise SillyTavernError(
                    f"SillyTavern exited with code {self.proc.returncode} before it answered; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise SillyTavernError(f"{what} within {timeout:.0f} s; log {self.log_path}:\n{self.log_tail()}")
            time.sleep(0.25)
