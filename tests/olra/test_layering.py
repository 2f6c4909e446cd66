"""The emulation's layering (docs/architecture.md): it may use core, vault, state, errors and
logging_setup (and fileio, the file reader and writer), never the lore server, the UI, the engine or the app."""

from __future__ import annotations

from tests.test_architecture import PKG, _imports

ALLOWED = (
    "dle_desktop.core",
    "dle_desktop.vault",
    "dle_desktop.state",
    "dle_desktop.errors",
    "dle_desktop.logging_setup",
    "dle_desktop.fileio",
    "dle_desktop.http_limits",
    "dle_desktop.olra",
)


def test_olra_imports_only_the_layers_below():
    bad = {}
    for path in sorted((PKG / "olra").rglob("*.py")):
        names = [
            n
            for n in _imports(path)
            if n.startswith("dle_desktop") and n != "dle_desktop" and not n.startswith(ALLOWED)
        ]
        if names:
            bad[path.name] = names
    assert bad == {}


def test_olra_does_not_import_qt():
    for path in sorted((PKG / "olra").rglob("*.py")):
        assert not any(n.split(".")[0] in ("PySide6", "qasync", "shiboken6") for n in _imports(path)), path
