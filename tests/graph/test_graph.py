"""The Graph view's engine on small known graphs, built from real parsed notes."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from dle_desktop.core.graph import (
    PRESETS,
    LayoutParams,
    analyse,
    backbone,
    build_graph,
    common_values,
    communities,
    gap_analysis,
    layout,
    missing_connections,
    requires_cycles,
)
from tests.core._helpers import entry, one_vault


def note(title: str, links=(), fm: str = "", body: str = "", tags: str = "lorebook", path: str | None = None):
    text = " ".join(f"[[{t}]]" for t in links)
    return entry(title, fm=fm, body=f"{body or title + ' text.'} {text}", tags=tags, path=path)


def vault(*entries):
    return build_graph(one_vault(*entries))


def kinds_between(g, a: str, b: str) -> set[str]:
    ia = next(i for i, e in enumerate(g.entries) if e.title == a)
    ib = next(i for i, e in enumerate(g.entries) if e.title == b)
    lo, hi = min(ia, ib), max(ia, ib)
    return {e.kind for e in g.edges if (e.a, e.b) == (lo, hi)}


def two_cliques(size: int = 5):
    """Two cliques of `size` (A0..A4, B0..B4) joined by one link A0 – B0."""
    notes = []
    for side in "AB":
        names = [f"{side}{i}" for i in range(size)]
        for i, name in enumerate(names):
            links = names[i + 1 :]
            if name == "A0":
                links = [*links, "B0"]
            notes.append(note(name, links))
    return vault(*notes)


# ---------------------------------------------------------------------------------------------
# The graph
# ---------------------------------------------------------------------------------------------


def test_triangle_nodes_edges_and_default_weight():
    g = vault(note("Alpha", ["Beta"]), note("Beta", ["Gamma"]), note("Gamma", ["Alpha"]))
    assert [e.title for e in g.entries] == ["Alpha", "Beta", "Gamma"]
    assert [(e.a, e.b, e.kind) for e in g.edges] == [(0, 1, "link"), (0, 2, "link"), (1, 2, "link")]
    # each title appears once in the other's content (the link text), so max(1, 1, 0) = 1
    assert all(e.weight == 1.0 for e in g.edges)
    assert g.degree.tolist() == [2, 2, 2]


def test_edges_by_type_deduplicated_and_undirected():
    g = vault(
        note("Alpha", ["Beta", "Beta"], fm="requires: [Beta]\ncascade_links: [Gamma]"),
        note("Beta", ["Alpha"], fm="excludes: [Gamma]"),
        note("Gamma"),
    )
    assert kinds_between(g, "Alpha", "Beta") == {"link", "requires"}  # Beta → Alpha link folds into one
    assert kinds_between(g, "Alpha", "Gamma") == {"cascade"}
    assert kinds_between(g, "Beta", "Gamma") == {"excludes"}
    assert len([e for e in g.edges if e.kind == "link"]) == 1
    assert g.requires == ((0, 1),)
    pairs, _w = g.simple_edges(["link"])
    assert pairs.tolist() == [[0, 1]]


def test_weight_is_dle_mention_count_max_of_both_directions():
    g = vault(
        note("Saffre", ["Harbour"], body="Saffre sits on the harbour. The harbour floods; the Harbour bell rings."),
        note("Harbour", ["Saffre"], fm='keys: ["quay"]', body="Quays of Saffre."),
    )
    # Saffre's content names "harbour" 3 times in prose + once in the link; Harbour's names Saffre twice
    (edge,) = g.edges
    assert edge.weight == 4.0
    assert build_graph(one_vault(*g.entries), mention_weights=False).edges[0].weight == 1.0


def test_short_names_count_whole_words_only():
    g = vault(note("Ox", ["Hub"], body="Ox boxes oxen. ox."), note("Hub", ["Ox"], body="An ox, an Ox, oxford."))
    # "ox" (≤ 3 chars) counts as a word: Hub's content has "ox", "Ox" and the link [[Ox]] → 3
    assert g.edges[0].weight == 3.0


def test_graph_false_entries_and_their_edges_are_left_out():
    g = vault(note("Alpha", ["Hidden", "Beta"]), note("Beta"), note("Hidden", ["Alpha"], fm="graph: false"))
    assert [e.title for e in g.entries] == ["Alpha", "Beta"]
    assert [(e.a, e.b) for e in g.edges] == [(0, 1)]
    assert "Hidden" not in json.dumps(g.to_json())


# ---------------------------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------------------------


def test_two_cliques_make_two_communities_and_one_bridge():
    g = two_cliques()
    c = communities(g, seed=7)
    groups = sorted(sorted(g.entries[i].title for i in grp) for grp in c.groups)
    assert groups == [[f"A{i}" for i in range(5)], [f"B{i}" for i in range(5)]]
    assert c.modularity > 0.3
    gaps = gap_analysis(g, c)
    bridges = [f for f in gaps if f.kind == "bridge"]
    assert len(bridges) == 1 and set(bridges[0].titles) == {"A0", "B0"}
    assert "only connection" in bridges[0].message
    cuts = sorted(f.titles[0] for f in gaps if f.kind == "cut_entry")
    assert cuts == ["A0", "B0"]
    assert all(f.data["cut_off"] == 4 for f in gaps if f.kind == "cut_entry")
    assert communities(g, seed=7, method="louvain").membership == c.membership


def test_communities_are_seeded():
    g = two_cliques(8)
    assert communities(g, seed=3).membership == communities(g, seed=3).membership
    assert communities(g, seed=3).to_json(g) == communities(g, seed=3).to_json(g)


def test_requires_cycle_reported_once():
    g = vault(
        note("A", fm="requires: [B]"),
        note("B", fm="requires: [C]"),
        note("C", fm="requires: [A]"),
        note("D", fm="requires: [A]"),
    )
    cycles = requires_cycles(g)
    assert len(cycles) == 1
    (c,) = cycles
    assert c.kind == "requires_cycle" and c.titles == ("A", "B", "C")
    assert "A → B → C → A" in c.message
    assert len(c.entries) == 3 and all("\x00" in u for u in c.entries)


def test_two_entry_cycle_and_self_requires():
    g = vault(note("A", fm="requires: [B]"), note("B", fm="requires: [A]"), note("Solo", fm="requires: [Solo]"))
    got = {f.titles: f.message for f in requires_cycles(g)}
    assert set(got) == {("A", "B"), ("Solo",)}
    assert "requires itself" in got[("Solo",)]


def test_orphan_is_found():
    g = vault(note("A", ["B"]), note("B"), note("Lonely"))
    orphans = [f for f in gap_analysis(g) if f.kind == "orphan"]
    assert [f.titles for f in orphans] == [("Lonely",)]
    assert orphans[0].message.startswith("'Lonely' has no links")


def test_type_imbalance_per_community():
    consts = [note(f"C{i}", [f"C{j}" for j in range(6) if j != i], tags="lorebook, lorebook-always") for i in range(6)]
    regular = []
    for side in "PQR":
        names = [f"{side}{i}" for i in range(6)]
        regular += [note(n, [m for m in names if m != n]) for n in names]
    g = vault(*consts, *regular)
    imb = [f for f in gap_analysis(g, seed=1) if f.kind == "type_imbalance"]
    assert len(imb) == 1
    assert set(imb[0].titles) == {f"C{i}" for i in range(6)}
    assert imb[0].data["type"] == "constant" and "100% constant" in imb[0].message


def test_missing_connections_between_entries_sharing_a_custom_field_value():
    g = vault(
        note("Inn", fm="location: [Saffre]"),
        note("Quay", fm="location: [saffre, Delta]"),
        note("Bell", ["Inn"], fm="location: Saffre"),
        note("Far", fm="location: Elsewhere"),
    )
    found = {f.titles: f for f in missing_connections(g)}  # one per entry, its unlinked partners
    assert set(found) == {("Quay", "Bell", "Inn"), ("Inn", "Quay"), ("Bell", "Quay")}  # Inn – Bell are linked
    assert found[("Inn", "Quay")].message == "'Inn' shares location: Saffre with 1 entry it has no link to: Quay"


def test_missing_connections_skip_values_shared_by_too_many():
    g = vault(*[note(f"N{i}", fm="era: [Old]") for i in range(6)])
    assert missing_connections(g) == []  # 6 of 6 entries: too common (common_values says so)
    assert [f.message for f in common_values(g)] == [
        "era: Old: 6 entries share it, too common to suggest links (more than 5 of the 6 entries)"
    ]
    assert len(missing_connections(g, max_shared_group=6)) == 6
    assert common_values(g, max_shared_group=6) == []
    assert len(missing_connections(g, max_shared_group=6, max_missing=4)) == 4


def test_disparity_backbone_keeps_the_dominant_edges():
    # A hub with 6 spokes: one heavily mentioned, five mentioned once each
    hub_body = "Hub. " + "Main " * 40
    hub = note("Hub", ["Main", *[f"S{i}" for i in range(5)]], body=hub_body)
    main = note("Main", ["Hub", "S0"], body="Main road")
    ring = [note(f"S{i}", ["Hub", f"S{(i + 1) % 5}"]) for i in range(5)]  # no spoke has degree 1
    g = vault(hub, main, *ring)
    bb = backbone(g, alpha=0.05)
    kept = {frozenset((g.entries[a].title, g.entries[b].title)) for a, b in bb.pairs.tolist()}
    assert frozenset(("Hub", "Main")) in kept
    assert not any("Hub" in p and p != frozenset(("Hub", "Main")) for p in kept)
    assert bb.total == len(g.simple_edges()[0]) and len(bb.pairs) < bb.total
    assert backbone(g, alpha=1.01).pairs.shape[0] == bb.total  # alpha above 1 keeps everything


def test_analysis_to_json_is_plain_json():
    g = two_cliques()
    a = analyse(g, seed=1)
    doc = json.loads(json.dumps(a.to_json(g)))
    assert {f["kind"] for f in doc["findings"]} >= {"bridge", "cut_entry"}
    assert all(set(f) == {"kind", "severity", "entries", "titles", "message", "data"} for f in doc["findings"])
    assert len(doc["communities"]["groups"]) == 2


def test_empty_graph():
    g = build_graph([])
    assert g.n == 0 and analyse(g).findings == ()
    assert layout(g).positions.shape == (0, 2)


# ---------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------


def test_layout_is_deterministic_per_seed():
    g = two_cliques()
    a, b = layout(g, seed=5), layout(g, seed=5)
    assert np.array_equal(a.positions, b.positions)
    assert not np.array_equal(a.positions, layout(g, seed=6).positions)
    assert a.iterations == a.total == PRESETS["balanced"].iterations and not a.cancelled
    assert set(a.as_dict()) == set(g.uids)
    json.dumps(a.to_json())


def test_layout_separates_the_two_cliques():
    g = two_cliques()
    pos = layout(g, seed=1).positions
    side = np.array([e.title[0] == "A" for e in g.entries])
    ca, cb = pos[side].mean(axis=0), pos[~side].mean(axis=0)
    within = max(np.linalg.norm(pos[side] - ca, axis=1).mean(), np.linalg.norm(pos[~side] - cb, axis=1).mean())
    assert np.linalg.norm(ca - cb) > 1.5 * within


def test_presets_spread_differently():
    g = two_cliques()
    spans = {name: float(np.ptp(layout(g, name, seed=1).positions, axis=0).max()) for name in PRESETS}
    assert spans["compact"] < spans["balanced"] < spans["spacious"]


def test_progress_and_cancel():
    g = two_cliques()
    seen: list[tuple[int, int]] = []
    layout(g, seed=1, iterations=50, progress=lambda d, t: seen.append((d, t)), progress_every=10)
    assert seen == [(10, 50), (20, 50), (30, 50), (40, 50), (50, 50)]

    stop = threading.Event()
    calls = []

    def progress(done, total):
        calls.append(done)
        if done == 7:
            stop.set()

    res = layout(g, seed=1, iterations=100, progress=progress, cancel=stop.is_set, progress_every=1)
    assert res.cancelled and res.iterations == 7 and calls[-1] == 7
    assert np.isfinite(res.positions).all()
    assert layout(g, seed=1, cancel=stop).iterations == 0  # an Event works as well as its is_set


def test_incremental_layout_keeps_old_nodes_near_their_place_and_new_ones_near_neighbours():
    before = two_cliques()
    first = layout(before, seed=1)
    prev = first.as_dict()
    span = float(np.ptp(first.positions, axis=0).max())
    after = vault(*before.entries, note("A-new", ["A1", "A2"]))  # a newcomer linked into clique A
    res = layout(after, seed=1, previous=prev)
    assert res.total == PRESETS["balanced"].incremental_iterations
    new = res.as_dict()
    moved = [np.hypot(new[u][0] - prev[u][0], new[u][1] - prev[u][1]) for u in prev]
    assert max(moved) < 0.05 * span
    newcomer = next(e.uid for e in after.entries if e.title == "A-new")
    a_centre = np.mean([new[e.uid] for e in after.entries if e.title[0] == "A" and e.title != "A-new"], axis=0)
    b_centre = np.mean([new[e.uid] for e in after.entries if e.title[0] == "B"], axis=0)
    assert np.linalg.norm(np.array(new[newcomer]) - a_centre) < np.linalg.norm(np.array(new[newcomer]) - b_centre)


def test_mesh_repulsion_matches_exact_repulsion_in_shape(monkeypatch):
    import dle_desktop.core.graph.forceatlas2 as fa2

    notes = []
    for c in range(8):  # 8 rings of 12
        names = [f"R{c}-{i}" for i in range(12)]
        notes += [
            note(n, [names[(i + 1) % 12], names[(i + 3) % 12]] + ([f"R{(c + 1) % 8}-0"] if i == 0 else []))
            for i, n in enumerate(names)
        ]
    g = vault(*notes)

    def cohesion(pos):
        ring = np.array([int(e.title[1:].split("-")[0]) for e in g.entries])
        cent = np.array([pos[ring == c].mean(axis=0) for c in range(8)])
        return np.linalg.norm(pos - cent[ring], axis=1).mean() / np.linalg.norm(pos - pos.mean(axis=0), axis=1).mean()

    exact = layout(g, seed=2).positions
    monkeypatch.setattr(fa2, "EXACT_MAX_NODES", 10)
    mesh = layout(g, seed=2).positions
    assert not np.array_equal(exact, mesh)
    assert cohesion(mesh) == pytest.approx(cohesion(exact), abs=0.1)
    assert cohesion(mesh) < 0.6


def test_layout_params_kinds_limit_the_pull():
    g = vault(note("A", fm="excludes: [B]"), note("B"))
    free = layout(g, LayoutParams(kinds=("link",)), seed=1).positions
    pulled = layout(g, LayoutParams(), seed=1).positions
    assert np.linalg.norm(free[0] - free[1]) > np.linalg.norm(pulled[0] - pulled[1])


def test_rebuild_with_previous_reuses_weights_of_unchanged_pairs_only():
    import dle_desktop.core.graph.model as model

    a = note("Alpha", ["Beta"], body="Beta Beta Beta")
    b = note("Beta", ["Alpha", "Gamma"])
    c = note("Gamma", ["Beta"], body="Beta Beta")
    snap = one_vault(a, b, c)
    first = build_graph(snap)
    counted = []
    real = model._Mentions.count

    def spy(self, src, dst):
        counted.append((self._entries[src].title, self._entries[dst].title))
        return real(self, src, dst)

    model._Mentions.count = spy
    try:
        c2 = note("Gamma", ["Beta"], body="Beta once")  # an edited note: a new Entry object
        # a sync: the next snapshot re-uses the unchanged entries' objects
        second = build_graph(one_vault(a, b, c2, previous=snap), previous=first)
    finally:
        model._Mentions.count = real
    assert sorted(counted) == [("Beta", "Gamma"), ("Gamma", "Beta")]
    w = {frozenset((second.entries[e.a].title, second.entries[e.b].title)): e.weight for e in second.edges}
    assert w[frozenset(("Alpha", "Beta"))] == 4.0  # 3 in the prose + the link, reused
    assert w == {
        frozenset(e.title for e in (second.entries[x.a], second.entries[x.b])): x.weight
        for x in build_graph(one_vault(a, b, c2)).edges
    }


def test_islands_are_brought_in_next_to_the_largest_component():
    ring = [note(f"R{i}", [f"R{(i + 1) % 12}", f"R{(i + 5) % 12}"]) for i in range(12)]
    g = vault(*ring, note("Lonely"), note("Pair1", ["Pair2"]), note("Pair2"))
    pos = layout(g, seed=3).as_dict()
    centre = np.mean([pos[e.uid] for e in g.entries if e.title.startswith("R")], axis=0)
    radius = max(np.hypot(*(np.array(pos[e.uid]) - centre)) for e in g.entries if e.title.startswith("R"))
    for e in g.entries:
        if not e.title.startswith("R"):
            assert np.hypot(*(np.array(pos[e.uid]) - centre)) < 2.0 * radius
    flung = layout(g, LayoutParams(tidy_islands=False, linlog=True, scaling=0.5), seed=3).as_dict()
    lonely = next(e.uid for e in g.entries if e.title == "Lonely")
    assert np.hypot(*(np.array(flung[lonely]) - centre)) > np.hypot(*(np.array(pos[lonely]) - centre))


def test_incremental_known_nodes_move_at_most_inertia_times_the_span():
    before = two_cliques()
    first = layout(before, seed=1)
    span = float(np.ptp(first.positions, axis=0).max())
    after = vault(*before.entries, note("Newcomer", ["B1", "A3"]))
    for inertia in (0.0, 0.01):
        res = layout(
            after, LayoutParams(linlog=True, scaling=0.5, inertia=inertia), seed=1, previous=first.as_dict()
        ).as_dict()
        moved = max(np.hypot(res[u][0] - x, res[u][1] - y) for u, (x, y) in first.as_dict().items())
        assert moved <= inertia * span + 1e-9


def test_fixed_nodes_never_move_even_in_a_full_run_and_their_island_stays():
    g = two_cliques()
    a0 = next(e.uid for e in g.entries if e.title == "A0")
    pinned_at = {a0: (500.0, -300.0)}
    res = layout(g, seed=2, previous=pinned_at, fixed={a0}, iterations=PRESETS["balanced"].iterations)
    assert res.iterations == PRESETS["balanced"].iterations
    assert res.as_dict()[a0] == pinned_at[a0]
    # everyone else moved away from the pin's start (a real layout, not a pile at one point)
    others = np.array([p for u, p in res.as_dict().items() if u != a0])
    assert float(np.ptp(others, axis=0).max()) > 1.0
    # an island holding a pinned orphan is not pulled in by tidy_islands
    g2 = vault(*[note(f"R{i}", [f"R{(i + 1) % 12}", f"R{(i + 5) % 12}"]) for i in range(12)], note("Lonely"))
    lonely = next(e.uid for e in g2.entries if e.title == "Lonely")
    far = {lonely: (1e5, 1e5)}
    assert layout(g2, seed=3, previous=far, fixed={lonely}, iterations=50).as_dict()[lonely] == far[lonely]


def planted(k: int = 4, size: int = 50, p_in: float = 0.3, p_out: float = 0.005, seed: int = 7):
    """`k` planted communities of `size` entries: each pair linked with `p_in` inside a
    community, `p_out` between two; returns the graph and each node's planted community."""
    import random

    rng = random.Random(seed)
    names = [[f"{'ABCDEFGH'[c]}x{i:02d}" for i in range(size)] for c in range(k)]
    flat = [(c, name) for c in range(k) for name in names[c]]
    links: dict[str, list[str]] = {name: [] for _, name in flat}
    for i, (ci, a) in enumerate(flat):
        for cj, b in flat[i + 1 :]:
            if rng.random() < (p_in if ci == cj else p_out):
                links[a].append(b)
    g = vault(*[note(name, links[name]) for _, name in flat])
    group = np.array([ord(e.title[0]) - ord("A") for e in g.entries])
    return g, group


def same_vs_other(pos, group) -> float:
    """Mean distance between two nodes of the same community over that between communities."""
    d = np.sqrt(((pos[:, None, :] - pos[None, :, :]) ** 2).sum(axis=2))
    same = group[:, None] == group[None, :]
    np.fill_diagonal(same, False)
    other = group[:, None] != group[None, :]
    return float(d[same].mean() / d[other].mean())


@pytest.mark.parametrize("mesh", [False, True])
@pytest.mark.parametrize(
    "case, limit",
    [
        # 4 communities of 50, dense inside, sparse between (about 0.11 here)
        (dict(k=4, p_in=0.3, p_out=0.005), 0.3),
        # 8 weak ones (each node has more links outside its community than half its links inside):
        # about 0.47 from the communities' start, 0.64-0.67 from a random one
        (dict(k=8, p_in=0.08, p_out=0.01), 0.58),
    ],
)
def test_layout_shows_planted_communities_as_regions(monkeypatch, mesh, case, limit):
    import dle_desktop.core.graph.forceatlas2 as fa2

    if mesh:  # the 10,000-entry path: repulsion on the grid
        monkeypatch.setattr(fa2, "EXACT_MAX_NODES", 50)
    g, group = planted(**case)
    res = layout(g, seed=3)
    assert same_vs_other(res.positions, group) < limit
    assert np.array_equal(res.positions, layout(g, seed=3).positions)  # same seed, same picture
    # the worker passes the communities its analysis found: the very same start
    given = layout(g, seed=3, membership=communities(g, seed=3).membership)
    assert np.array_equal(res.positions, given.positions)


def test_incremental_run_starts_where_nodes_were_and_a_pinned_relayout_from_communities():
    g, group = planted()
    first = layout(g, seed=3)
    again = layout(g, seed=3, previous=first.as_dict(), iterations=0)
    assert np.allclose(again.positions, first.positions)
    # Re-layout with one pinned node: the pin stays, the rest start from communities again
    pin = g.uids[0]
    at = {pin: (400.0, -250.0)}
    res = layout(g, seed=3, previous=at, fixed={pin}, iterations=PRESETS["balanced"].iterations)
    assert res.as_dict()[pin] == at[pin]
    assert same_vs_other(res.positions, group) < 0.3
