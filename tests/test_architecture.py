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
        str(p.relative_to(PKG)): sorted(
            n for n in _imports(p) if n.startswith("dle_desktop") and not n.startswith("dle_desktop.core")
        )
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
            bad = [
                n
                for n in _imports(p)
                if n.startswith(
                    ("dle_desktop.server", "dle_desktop.ui", "dle_desktop.engine.engine", "dle_desktop.app.runtime")
                )
            ]
            assert bad == [], f"{p.relative_to(PKG)} imports {bad}"


def test_the_import_contracts_hold():
    """Every row of the layer table in docs/architecture.md, as import-linter contracts
    (.importlinter): layers, core and the shared modules, the UI's one door to the engine, Qt only
    in the UI, no import circles."""
    import subprocess
    import sys

    linter = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(linter), "--no-cache"], cwd=PKG.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def _engine_reach_ins(path: Path) -> list[int]:
    """Lines where a module reaches past the bridge into its engine (`<anything>.bridge.engine`,
    `bridge.engine`) or into the runtime's engine (`runtime.engine`)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr == "engine":
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
            if name in ("bridge", "runtime"):
                lines.append(node.lineno)
    return lines


def test_views_reach_the_engine_only_through_the_bridges_methods():
    offenders = {str(p.relative_to(PKG)): _engine_reach_ins(p) for p in _modules("ui") if p.name != "bridge.py"}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_import_graph_in_the_docs_is_current():
    """docs/architecture.md shows the package graph scripts/import_graph.py draws from the code."""
    import subprocess
    import sys

    drawn = subprocess.run(
        [sys.executable, str(PKG.parent / "scripts" / "import_graph.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.strip()
    docs = (PKG.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"```mermaid\n{drawn}\n```" in docs, "run scripts/import_graph.py and paste its output into the docs"
