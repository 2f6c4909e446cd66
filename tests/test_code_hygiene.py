"""Every suppression says what it suppresses and why: `# noqa: CODE - reason` and
`# type: ignore[code]  # reason`, in the product, the tests, the benchmarks and packaging."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("dle_desktop", "tests", "benchmarks", "packaging")

# A code list, then a separator and at least one word of explanation.
NOQA = re.compile(r"#\s*noqa\b(?P<rest>.*)$", re.IGNORECASE)
NOQA_OK = re.compile(r"^:\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*\s*(?:[-—–:(]|#)\s*\w")
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<rest>.*)$")
IGNORE_OK = re.compile(r"^\[[a-z0-9-]+(?:\s*,\s*[a-z0-9-]+)*\]\s*(?:#|[-—–(])\s*\w")


def _comments(path: Path):
    text = path.read_text(encoding="utf-8")
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string


def _offenders() -> list[str]:
    bad = []
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            for line, comment in _comments(path):
                for rx, ok in ((NOQA, NOQA_OK), (IGNORE, IGNORE_OK)):
                    m = rx.search(comment)
                    if m and not ok.match(m.group("rest").strip() if rx is IGNORE else m.group("rest")):
                        bad.append(f"{path.relative_to(ROOT)}:{line}: {comment}")
    return bad


def test_every_suppression_names_its_code_and_says_why():
    assert _offenders() == []


def test_the_rule_itself():
    assert NOQA_OK.match(": BLE001 - a stuck engine is one more thing to report")
    assert NOQA_OK.match(": E402  (after the sys.path setup)")
    assert not NOQA_OK.match(": E402")
    assert not NOQA_OK.match("")
    assert IGNORE_OK.match("[arg-type]  # Qt's stub misses the int overload")
    assert not IGNORE_OK.match("[arg-type]")
    assert not IGNORE_OK.match("")


def test_each_class_name_means_one_thing():
    """No two classes of the product share a name, with one deliberate exception: a model in
    server/answers*.py is the JSON form of the domain class it is named after (its name is the
    OpenAPI component's name)."""
    import ast
    from collections import defaultdict

    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted((ROOT / "dle_desktop").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(str(path.relative_to(ROOT)))
    clashes = {
        name: paths
        for name, paths in where.items()
        if len([p for p in paths if not p.startswith("dle_desktop/server/answers")]) > 1
        or len([p for p in paths if p.startswith("dle_desktop/server/answers")]) > 1
    }
    assert clashes == {}
