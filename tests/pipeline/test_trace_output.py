"""The decision record (dle-behaviour §3.10 and the issue's output spec): a verdict for every
entry a stage touched, per-stage timings, and the JSON shape."""

from __future__ import annotations

import json

import pytest

from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.state import ChatState, EntryRef

from .conftest import FixedRng, chat, fields_yaml, msg, note, run, snapshot, titles, verdicts

ALWAYS = ["lorebook", "lorebook-always"]


def _scenario():
    fd = fields_yaml(
        {
            "name": "era",
            "type": "string",
            "multi": True,
            "gating": {"enabled": True, "operator": "match_any", "tolerance": "moderate"},
        }
    )
    snap = snapshot(
        note("Rules", tags=ALWAYS, priority=1),
        note("Refined", ["go"], refine_keys=["never"]),
        note("Warm", ["go"], warmup=5),
        note("Chance", ["go"], probability=0.5),
        note("Cooling", ["go"], cooldown=2),
        note("Gated", ["go"], era="Dawn"),
        note("Elsewhere", ["go"], folder="Places"),
        note("Blocked", ["go"]),
        note("Reinjected", ["go"]),
        note("Needy", ["go"], requires=["Absent"]),
        note("Absent"),
        note("Stripped", ["go"]),
        note("Fits", ["go"], "x" * 40, priority=20),
        note("Truncated", ["go"], ("Sentence here. " * 80).strip(), priority=21),
        note("Late", ["go"], priority=22),
        field_definitions=fd,
    )
    prior_log = (
        {
            "gen": 4,
            "entries": [
                {
                    "title": "Stripped",
                    "pos": 1,
                    "depth": 4,
                    "role": 0,
                    "hash": next(e.content_hash for e in snap.entries if e.title == "Stripped"),
                }
            ],
        },
    )
    state = ChatState(
        generation_count=5,
        cooldowns={"v:Cooling": 1},
        injection_history={"v:Reinjected": 5},
        injection_log=prior_log,
        context={"era": "dusk"},
        folder_filter=("Characters",),
        blocks=(EntryRef("Blocked"),),
    )
    cfg = MatchConfig(max_tokens_budget=200, reinjection_cooldown=2)
    return run(snap, chat("go"), state, cfg=cfg, rng=FixedRng(0.9))


EXPECTED = [
    ("Rules", "constants", "matched"),
    ("Refined", "keywords", "skipped"),
    ("Warm", "keywords", "skipped"),
    ("Chance", "keywords", "skipped"),
    ("Cooling", "keywords", "skipped"),
    ("Gated", "contextual gating", "removed"),
    ("Elsewhere", "folder filter", "removed"),
    ("Blocked", "blocks", "removed"),
    ("Reinjected", "reinjection cooldown", "removed"),
    ("Needy", "requires/excludes", "removed"),
    ("Stripped", "strip duplicates", "removed"),
    ("Rules", "budget", "injected"),
    ("Fits", "budget", "injected"),
    ("Truncated", "budget", "truncated"),
    ("Late", "budget", "cut"),
]


@pytest.mark.parametrize("title,stage,outcome", EXPECTED)
def test_every_decision_has_a_verdict_at_the_right_stage(title, stage, outcome):
    result, _ = _scenario()
    vs = verdicts(result, title, stage, outcome)
    assert len(vs) == 1, [v for v in result.verdicts if v.title == title]
    assert vs[0].reason


def test_the_scenario_injects_what_the_verdicts_say():
    result, _ = _scenario()
    assert titles(result) == ["Rules", "Fits", "Truncated"]
    injected = {v.title for v in result.verdicts if v.stage == "budget" and v.outcome in ("injected", "truncated")}
    assert injected == set(titles(result))


def test_every_entry_not_injected_has_a_removal_or_skip_verdict():
    result, _ = _scenario()
    considered = {v.title for v in result.verdicts}
    final = {v.title for v in result.verdicts if v.outcome in ("skipped", "removed", "cut")}
    assert considered - set(titles(result)) <= final


def test_verdict_reasons_carry_the_detail():
    result, _ = _scenario()
    reason = {t: verdicts(result, t)[0].reason for t in ("Refined", "Warm", "Chance", "Cooling", "Gated")}
    assert "never" in reason["Refined"]
    assert "occur 1 time" in reason["Warm"] and "needs 5" in reason["Warm"]
    assert "0.900" in reason["Chance"]
    assert "cooldown" in reason["Cooling"]
    [gated] = verdicts(result, "Gated", "contextual gating")
    assert "era" in gated.reason and "dusk" in gated.reason


def test_timings_cover_every_stage():
    result, _ = _scenario()
    for stage in (
        "constants",
        "keywords",
        "character",
        "cascade",
        "recursion",
        "fuzzy",
        "gating",
        "folder filter",
        "pins",
        "reinjection",
        "requires/excludes",
        "strip duplicates",
        "budget",
        "tracking",
        "total",
    ):
        assert stage in result.timings_ms, stage
        assert result.timings_ms[stage] >= 0


def test_to_json_matches_the_issue_output_spec():
    result, _ = _scenario()
    out = json.loads(json.dumps(result.to_json()))
    assert {"injected", "groups", "total_tokens", "verdicts", "timings_ms"} <= set(out)
    for item in out["injected"]:
        assert {"title", "vault", "tokens", "truncated"} <= set(item)
        assert isinstance(item["tokens"], int) and isinstance(item["truncated"], bool)
    assert [i["title"] for i in out["injected"]] == ["Rules", "Fits", "Truncated"]
    assert [i["truncated"] for i in out["injected"]] == [False, False, True]
    for g in out["groups"]:
        assert {"position", "depth", "role", "text"} <= set(g)
    for v in out["verdicts"]:
        assert {"title", "stage", "outcome", "reason"} <= set(v)
    assert out["total_tokens"] == sum(i["tokens"] for i in out["injected"])
    assert all(isinstance(x, (int, float)) for x in out["timings_ms"].values())


def test_a_skipped_generation_serialises_too():
    snap = snapshot(note("Rules", tags=ALWAYS))
    result, _ = run(snap, chat("x") + [msg("sys", is_system=True)])
    out = result.to_json()
    assert out["skipped_reason"] and out["injected"] == [] and out["groups"] == []
