"""The layering rules of docs/architecture.md, checked on the real import statements."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "dle_desktop"
QT_MODULES = ("PySide6", "qasync", "shiboken6")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(sub: str = "") -> list[Path]:
    return sorted((PKG / sub).rglob("*.py"))


def test_core_imports_nothing_of_ours_outside_core():
    offenders = {
        str(p.relative_to(PKG)): sorted(n for n in _imports(p) if n.startswith("dle_desktop") and not n.startswith("dle_desktop.core"))
        for p in _modules("core")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_only_ui_imports_qt():
    offenders = []
    for p in _modules():
        rel = p.relative_to(PKG)
        if rel.parts[0] == "ui":
            continue
        if any(n.split(".")[0] in QT_MODULES for n in _imports(p)):
            offenders.append(str(rel))
    assert offenders == []


def test_lower_layers_do_not_import_server_or_ui():
    for layer in ("core", "vault", "state", "ai", "vectors"):
        for p in _modules(layer):
            bad = [n for n in _imports(p) if n.startswith(("dle_desktop.server", "dle_desktop.ui", "dle_desktop.engine.engine", "dle_desktop.app.runtime"))]
            assert bad == [], f"{p.relative_to(PKG)} imports {bad}"
