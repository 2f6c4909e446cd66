"""Fixtures of the SillyTavern end-to-end suite (run it with `scripts/st-e2e`, which installs
SillyTavern, Chromium and Playwright first).

One test session = one fake OpenAI-compatible LLM on 127.0.0.1, one SillyTavern (the version in
DLE_ST_VERSION, default 1.19.0) with its own data root and port, set to the Custom chat-completion
source at the fake, with the proof extension from `tests/e2e/sillytavern/proof_extension` installed for its user, and
one headless Chromium page on it. Screenshots go to the folder printed at the end of the run."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:  # `pytest` run without `python -m`
    sys.path.insert(0, str(REPO_ROOT))

from tests.e2e.sillytavern.dle_server import DleServer, write_vault  # noqa: E402 - needs the sys.path setup above
from tests.e2e.sillytavern.sillytavern import (  # noqa: E402 - needs the sys.path setup above
    USER,
    SillyTavern,
    chat_completion_settings,
    free_port,
    install_dir,
    st_version,
)
from tests.fakes.ai_provider import FakeAiProvider, SeenAiRequest  # noqa: E402 - needs the sys.path setup above

PROOF_EXTENSION = Path(__file__).resolve().parent / "proof_extension"
PROOF_NAME = "dle-proof"
# The same proof installed for all users, disabled so that only the user's copy runs its interceptor:
# it shows that SillyTavern finds extensions in the all-users folder too.
PROOF_GLOBAL_NAME = "dle-proof-all-users"
CHARACTER = "Seraphina"  # SillyTavern's bundled default character, on every version we support
CHROMIUM = os.environ.get("DLE_CHROMIUM", "/usr/bin/chromium")
TOKEN = re.compile(r"E2E-[0-9a-f]{8}")

_SHOTS = pytest.StashKey[Path]()


def reply_for(request: SeenAiRequest) -> str:
    """The fake LLM's answer: it names the token of the last user message, so a test knows which
    reply belongs to which message."""
    users = [m for m in (request.body or {}).get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    last = str(users[-1].get("content", "")) if users else ""
    found = TOKEN.findall(last)
    return f"Fake LLM reply to {found[-1]}." if found else "Fake LLM reply."


@pytest.fixture(scope="session")
def shots_dir(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Path:
    folder = Path(os.environ.get("DLE_E2E_SHOTS") or tmp_path_factory.mktemp("st-shots"))
    folder.mkdir(parents=True, exist_ok=True)
    pytestconfig.stash[_SHOTS] = folder
    return folder


@pytest.fixture(scope="session")
def fake_llm(pytestconfig: pytest.Config) -> Iterator[FakeAiProvider]:
    with FakeAiProvider() as fake:
        fake.default(reply_for)
        yield fake
        folder = pytestconfig.stash.get(_SHOTS, None)
        if folder is not None:  # every prompt SillyTavern sent, beside the screenshots, for reading after a run
            with (folder / "prompts.jsonl").open("w", encoding="utf-8") as out:
                for r in fake.requests:
                    out.write(json.dumps({"path": r.path, "body": r.body}) + "\n")


@pytest.fixture(scope="session")
def sillytavern(tmp_path_factory: pytest.TempPathFactory, fake_llm: FakeAiProvider) -> Iterator[SillyTavern]:
    st = SillyTavern(install_dir(st_version()), tmp_path_factory.mktemp("sillytavern"))
    settings = chat_completion_settings(st.default_settings(), fake_llm.url + "/v1")
    extensions = settings.setdefault("extension_settings", {})
    extensions["dle_proof"] = {"marker": "DLE-PROOF-MARKER", "position": 1, "depth": 0, "role": 0}
    extensions.setdefault("disabledExtensions", []).append(f"third-party/{PROOF_GLOBAL_NAME}")
    st.seed_settings(settings)
    st.install_extension(PROOF_EXTENSION, PROOF_NAME)
    st.install_extension(PROOF_EXTENSION, PROOF_GLOBAL_NAME, for_all_users=True)
    try:
        with st:
            yield st
    finally:
        st.uninstall_extension(PROOF_GLOBAL_NAME, for_all_users=True)


@pytest.fixture(scope="session")
def dle(tmp_path_factory: pytest.TempPathFactory, sillytavern: SillyTavern) -> Iterator[DleServer]:
    """DLE Desktop's `serve` with the e2e vault, allowing SillyTavern's page (its origin), and the
    bridge installed for SillyTavern's user by the real installer, as the app's Install button does."""
    from dle_desktop.st_bridge import install as installer
    from tests.support.tiny_gguf import make_tiny_qwen3_gguf

    root = tmp_path_factory.mktemp("dle")
    model = make_tiny_qwen3_gguf(root / "tiny-embedder.gguf")
    server = DleServer(root / "data", write_vault(root / "vault"), embedding_model=model)
    port = sillytavern.port
    server.update_settings(
        server_allowed_origins=[f"http://127.0.0.1:{port}", f"http://localhost:{port}"],
        olra_enabled=True,
        olra_port=free_port(),
    )  # the Obsidian REST emulation, for DLE itself
    found = installer.inspect(sillytavern.st_dir)
    # The suite's SillyTavern keeps its data in a folder of its own (--dataRoot), not <install>/data.
    st = dataclasses.replace(found, data_root=sillytavern.data_root, users=(USER,), port=port)
    installer.install(st, server_url=server.url, token=server.token(), user=USER)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: run scripts/st-e2e (it installs Debian's chromium), or set DLE_CHROMIUM"
        )
    with sync_playwright() as pw:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        chromium = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def st_page(browser, sillytavern: SillyTavern, dle: DleServer, shots_dir: Path):
    """SillyTavern open in Chromium with the default character's chat showing. Shared by the
    proof's tests (loading SillyTavern costs seconds); each test sends its own messages. The
    bridge is installed but switched off in this page (in memory only), so that only the proof
    extension adds to these prompts."""
    yield from _open_page(browser, sillytavern, shots_dir, "proof", bridge_on=False)


@pytest.fixture(scope="module")
def bridge_page(browser, sillytavern: SillyTavern, dle: DleServer, shots_dir: Path):
    """A page of its own for the bridge's tests, with the bridge on."""
    yield from _open_page(browser, sillytavern, shots_dir, "bridge", bridge_on=True)


def _open_page(browser, sillytavern: SillyTavern, shots_dir: Path, name: str, bridge_on: bool):
    from tests.e2e.sillytavern.st_page import StPage

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = StPage(context.new_page(), sillytavern, shots_dir)
    page.page.set_default_timeout(30_000)
    page.open()
    page.wait_js("the DLE Desktop bridge to start", "() => globalThis.dleDesktopBridge?.ready === true")
    page.evaluate("(on) => { SillyTavern.getContext().extensionSettings.dle_desktop_bridge.enabled = on; }", bridge_on)
    page.screenshot(f"{name}-loaded")
    page.open_character(CHARACTER)
    page.screenshot(f"{name}-character-chat")
    yield page
    context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """On a failure, attach a screenshot path and SillyTavern's log tail to the report."""
    report = yield
    if report.failed and call.when in ("setup", "call"):
        funcargs = getattr(item, "funcargs", {})
        page = funcargs.get("st_page") or funcargs.get("bridge_page")
        st = item.funcargs.get("sillytavern") if hasattr(item, "funcargs") else None
        if page is not None:
            report.sections.append(("screenshot", str(page.screenshot("failure-" + item.name))))
        if st is not None:
            report.sections.append((f"SillyTavern log {st.log_path}", st.log_tail(60)))
    return report


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    folder = config.stash.get(_SHOTS, None)
    if folder is not None:
        terminalreporter.write_line(f"SillyTavern screenshots: {folder}")
