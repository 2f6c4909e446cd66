"""Issue 21.13: the Graph view's findings carry a severity, the real problems come first, and the
"shares a field value" suggestions are one per entry, name a few partners, and leave out values
so common that linking them all would be noise."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from dle_desktop.core.graph import (
    MAX_PARTNERS_SHOWN,
    SEVERITIES,
    analyse,
    build_graph,
    common_value_limit,
    missing_connections,
    rank_findings,
)
from dle_desktop.vault.indexer import VaultIndexer
from dle_desktop.vault.sources import FolderSource
from tests.core._helpers import entry, one_vault

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "sample_vault"


def note(title: str, links=(), fm: str = ""):
    return entry(title, fm=fm, body=f"{title} text. " + " ".join(f"[[{t}]]" for t in links))


@pytest.fixture(scope="module")
def sample_graph():
    loop = asyncio.new_event_loop()
    try:
        snap = loop.run_until_complete(VaultIndexer([FolderSource("vault", SAMPLE)]).sync_all()).snapshot
    finally:
        loop.close()
    return build_graph(snap)


def as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def severity_order(findings) -> list[int]:
    return [SEVERITIES.index(f.severity) for f in findings]


def test_sample_vault_circular_requires_ranks_first(sample_graph):
    found = analyse(sample_graph).findings
    assert found[0].kind == "requires_cycle" and found[0].severity == "problem"
    assert set(found[0].titles) == {"The Lovers' Letters", "The Secret Betrothal"}
    assert severity_order(found) == sorted(severity_order(found))
    assert sum(f.severity == "problem" for f in found) == 1


def test_sample_vault_one_suggestion_per_entry_naming_a_few_partners(sample_graph):
    suggestions = [f for f in analyse(sample_graph).findings if f.kind == "missing_connection"]
    subjects = [f.entries[0] for f in suggestions]
    assert suggestions and len(subjects) == len(set(subjects)) <= sample_graph.n  # was 191 pairs
    for f in suggestions:
        assert f.severity == "suggestion"
        assert 1 <= len(f.entries) - 1 <= MAX_PARTNERS_SHOWN
        assert f.data["unlinked"] >= len(f.entries) - 1
        if f.data["unlinked"] > MAX_PARTNERS_SHOWN:
            assert f"and {f.data['unlinked'] - MAX_PARTNERS_SHOWN} more" in f.message


def test_sample_vault_era_every_present_day_entry_has_is_collapsed(sample_graph):
    found = analyse(sample_graph).findings
    present = [e for e in sample_graph.entries if "Present Day" in as_list(e.custom_fields.get("era"))]
    assert len(present) > common_value_limit(sample_graph.n)
    notes = [f for f in found if f.kind == "common_value" and f.data["field"] == "era"]
    line = next(f for f in notes if f.data["value"] == "Present Day")
    assert line.severity == "note" and len(line.entries) == len(present)
    assert line.message.startswith(f"era: Present Day: {len(present)} entries share it, too common to suggest links")
    assert not any("Present Day" in f.message for f in found if f.kind == "missing_connection")


def test_built_graph_problems_then_warnings_then_suggestions():
    g = build_graph(
        one_vault(
            note("Alpha", fm="era: [Old]"),  # orphan, shares era with Zeta
            note("Zeta", ["Mid"], fm="era: [Old]"),
            note("Mid", ["Zeta"]),
            note("Loop A", fm="requires: [Loop B]"),
            note("Loop B", fm="requires: [Loop A]"),
            note("Lone", fm="era: [Far]"),
            note("Also lone", fm="era: [Far]"),
        )
    )
    found = analyse(g).findings
    kinds = [f.kind for f in found]
    assert kinds[0] == "requires_cycle"
    assert [f.severity for f in found] == sorted((f.severity for f in found), key=SEVERITIES.index)
    assert kinds.index("orphan") < kinds.index("missing_connection")
    orphans = [f.titles[0] for f in found if f.kind == "orphan"]
    assert orphans == sorted(orphans, key=str.lower)  # within a kind: a meaningful order, here by title
    assert all(f.to_json()["severity"] == f.severity for f in found)
    json.dumps([f.to_json() for f in found])


def test_no_more_than_one_suggestion_and_a_few_partners_per_entry():
    hub = note("Hub", fm="character_present: [Reed]\nlocation: [Quay]")
    others = [
        note(f"N{i}", fm="character_present: [Reed]" + ("\nlocation: [Quay]" if i == 3 else "")) for i in range(5)
    ]
    crowd = [note(f"C{i}", fm=f"scene_type: [Crowd {i}]") for i in range(54)]  # keeps Reed below "too common"
    g = build_graph(one_vault(hub, *others, *crowd))
    assert common_value_limit(g.n) >= 6
    found = missing_connections(g)
    by_subject = {f.titles[0]: f for f in found}
    assert len(by_subject) == len(found) == 6
    hub_f = by_subject["Hub"]
    assert hub_f.data["unlinked"] == 5 and len(hub_f.titles) == 1 + MAX_PARTNERS_SHOWN
    assert hub_f.titles[1] == "N3"  # shares two values: the strongest partner comes first
    assert found[0].titles[:2] in (("Hub", "N3"), ("N3", "Hub"))
    assert "and 2 more" in hub_f.message
    assert by_subject["N0"].message == (
        "'N0' shares character_present: Reed with 5 entries it has no link to: Hub, N1, N2 and 2 more"
    )


def test_a_value_most_entries_share_is_collapsed_into_one_line():
    g = build_graph(one_vault(*[note(f"N{i}", fm="era: [Old]") for i in range(6)], note("Other", fm="era: [New]")))
    found = analyse(g).findings
    assert [f.kind for f in found if f.kind in ("missing_connection", "common_value")] == ["common_value"]
    line = next(f for f in found if f.kind == "common_value")
    assert line.message.startswith("era: Old: 6 entries share it, too common to suggest links")
    assert len(line.entries) == 6


def test_rank_is_deterministic_and_stable():
    g = build_graph(one_vault(note("B"), note("a"), note("C", fm="requires: [C]")))
    found = analyse(g).findings
    assert rank_findings(reversed(found)) == list(found)
    assert [(f.kind, f.titles[0]) for f in found] == [
        ("requires_cycle", "C"),  # C requires itself, so it has no edge either
        ("orphan", "a"),
        ("orphan", "B"),
        ("orphan", "C"),
    ]
