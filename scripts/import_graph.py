"""Print the package-level import graph of dle_desktop as a Mermaid diagram (docs/architecture.md
embeds it; tests/test_architecture.py checks that the embedded copy is current). The shared
top-level modules, which every layer may use, are left out, and so is every edge a longer path
already implies (a transitive reduction), so what is drawn is the layering itself.

    .venv/bin/python scripts/import_graph.py
"""

from __future__ import annotations

import grimp

# Top to bottom, as in .importlinter; the shared modules last.
ORDER = [
    "cli",
    "app",
    "ui",
    "server",
    "engine",
    "librarian",
    "writers",
    "olra",
    "desktop",
    "st_bridge",
    "worldinfo",
    "ai",
    "vectors",
    "vault",
    "state",
    "core",
    "errors",
    "fileio",
    "logging_setup",
    "http_limits",
]


def package_edges() -> set[tuple[str, str]]:
    graph = grimp.build_graph("dle_desktop")
    edges: set[tuple[str, str]] = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = importer.split(".")[1:2], imported.split(".")[1:2]
            if a and b and a != b and a[0] in ORDER and b[0] in ORDER:
                edges.add((a[0], b[0]))
    return edges


SHARED = {"errors", "fileio", "logging_setup", "http_limits"}


def reduced(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Drop a -> b when b is also reached from a through another package (the graph has no cycle:
    import-linter's contracts see to that)."""
    out: dict[str, set[str]] = {}
    for a, b in edges:
        out.setdefault(a, set()).add(b)

    def reach(start: str, skip: tuple[str, str]) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            node = todo.pop()
            for nxt in out.get(node, ()):
                if (node, nxt) != skip and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return {(a, b) for a, b in edges if b not in reach(a, (a, b))}


def mermaid() -> str:
    lines = ["flowchart TD"]
    layered = {(a, b) for a, b in package_edges() if a not in SHARED and b not in SHARED}
    for a, b in sorted(reduced(layered), key=lambda e: (ORDER.index(e[0]), ORDER.index(e[1]))):
        lines.append(f"    {a} --> {b}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(mermaid())
