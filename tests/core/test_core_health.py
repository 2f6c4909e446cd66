"""Health check (reference §5.7): one test per check our code implements."""

import pytest

from dle_desktop.core.entry import Skip
from dle_desktop.core.health import HealthContext, run_health_check
from dle_desktop.core.index import VaultSlice, build_snapshot

from ._helpers import entry, one_vault, snapshot

OK = "keys: [healthy key]\nsummary: fine"


def findings(report, code):
    return [f for f in report.errors + report.warnings + report.info if f.code == code]


def only(report, code, severity, title=None):
    fs = findings(report, code)
    assert len(fs) == 1, (code, fs)
    f = fs[0]
    assert f.severity == severity
    bucket = {"error": report.errors, "warning": report.warnings, "info": report.info}[severity]
    assert f in bucket
    if title is not None:
        assert f.entry == title
    return f


def check(*entries, **ctx):
    return run_health_check(one_vault(*entries), HealthContext(**ctx))


# ---------------------------------------------------------------- baseline
def test_healthy_vault_has_no_findings():
    r = check(entry("Good", fm=OK), entry("Other", fm="keys: [another key]"))
    assert r.counts == (0, 0, 0), r.to_json()


# ---------------------------------------------------------------- configuration errors
def test_no_enabled_vaults():
    only(check(enabled_vaults=0), "no_enabled_vaults", "error")


def test_scan_depth_zero_with_ai_off():
    only(check(scan_depth=0), "scan_depth_zero_without_ai", "error")
    assert not findings(check(scan_depth=0, ai_search_enabled=True), "scan_depth_zero_without_ai")


def test_ai_only_without_profile():
    only(
        check(ai_search_enabled=True, ai_search_mode="ai-only", ai_search_connection_mode="profile"),
        "ai_only_without_profile",
        "error",
    )
    assert not findings(check(ai_search_enabled=True, ai_search_mode="two-stage"), "ai_only_without_profile")
    assert not findings(
        check(ai_search_enabled=True, ai_search_mode="ai-only", ai_search_profile_id="p1"), "ai_only_without_profile"
    )


def test_ai_proxy_without_url():
    only(check(ai_search_enabled=True, ai_search_connection_mode="proxy"), "ai_proxy_without_url", "error")
    assert not findings(
        check(ai_search_enabled=True, ai_search_connection_mode="proxy", ai_search_proxy_url="http://127.0.0.1:8080"),
        "ai_proxy_without_url",
    )


def test_scribe_without_profile():
    only(check(scribe_enabled=True, scribe_connection_mode="profile"), "scribe_without_profile", "error")


def test_scribe_proxy_without_url():
    only(check(scribe_enabled=True, scribe_connection_mode="proxy"), "scribe_proxy_without_url", "error")
    assert not findings(check(scribe_enabled=False, scribe_connection_mode="proxy"), "scribe_proxy_without_url")


# ---------------------------------------------------------------- configuration warnings / info
def test_vault_without_api_key():
    r = check(rest_vaults_without_key=("Remote",))
    assert "Remote" in only(r, "vault_without_key", "warning").message


def test_budget_below_200():
    only(check(max_tokens_budget=150), "budget_too_small", "warning")
    assert not findings(check(max_tokens_budget=200), "budget_too_small")
    assert not findings(check(max_tokens_budget=150, unlimited_budget=True), "budget_too_small")


def test_index_older_than_three_ttl():
    only(check(cache_ttl=300, index_age_s=901), "index_stale", "warning")
    assert not findings(check(cache_ttl=300, index_age_s=900), "index_stale")


def test_recursion_with_one_step():
    only(check(recursive_scan=True, max_recursion_steps=1), "recursion_one_step", "info")
    assert not findings(check(recursive_scan=False, max_recursion_steps=1), "recursion_one_step")


def test_cache_ttl_zero():
    only(check(cache_ttl=0), "cache_ttl_zero", "info")


# ---------------------------------------------------------------- entry errors
def test_requires_missing_uses_originals():
    e = entry("A", fm=OK + "\nrequires: [Ghost]")
    r = check(e)
    f = only(r, "requires_missing", "error", "A")
    assert "Ghost" in f.message and f.vault == "v" and f.path == "A.md"


def test_requires_existing_title_case_insensitive_is_fine():
    r = check(entry("A", fm=OK + "\nrequires: [b]"), entry("B", fm="keys: [bee]"))
    assert not findings(r, "requires_missing")


def test_excludes_missing():
    only(check(entry("A", fm=OK + "\nexcludes: [Ghost]")), "excludes_missing", "error", "A")


def test_excludes_self():
    only(check(entry("A", fm=OK + "\nexcludes: [a]")), "excludes_self", "error", "A")


def test_requires_and_excludes_same_title():
    r = check(entry("A", fm=OK + "\nrequires: [B]\nexcludes: [b]"), entry("B", fm="keys: [bee]"))
    f = only(r, "requires_and_excludes", "error", "A")
    assert "b" in f.message


def test_circular_requires_one_issue_per_pair():
    r = check(entry("A", fm="keys: [aa]\nrequires: [B]"), entry("B", fm="keys: [bb]\nrequires: [a]"))
    only(r, "circular_requires", "error")


def test_duplicate_title_within_vault_one_issue_per_title():
    r = check(
        entry("Twin", path="x/Twin.md", fm="keys: [t1]"),
        entry("twin", path="y/twin.md", fm="keys: [t2]"),
        entry("twin", path="z/t.md", fm="keys: [t3]"),
    )
    f = only(r, "duplicate_title", "error")
    assert "3 entries" in f.message


def test_same_title_in_two_vaults_is_not_a_duplicate_error():
    a = entry("Twin", vault="A", fm="keys: [t1]")
    b = entry("Twin", vault="B", fm="keys: [t2]")
    r = run_health_check(snapshot(("A", [a]), ("B", [b]), mode="all"))
    assert not findings(r, "duplicate_title")
    only(r, "cross_vault_duplicate", "info", "Twin")
    r2 = run_health_check(snapshot(("A", [a]), ("B", [b]), mode="first"))
    assert not findings(r2, "cross_vault_duplicate")


# ---------------------------------------------------------------- entry warnings
def test_cascade_missing():
    only(check(entry("A", fm=OK + "\ncascade_links: [Nowhere]")), "cascade_missing", "warning", "A")


@pytest.mark.parametrize("tag", ["lorebook-always", "lorebook-seed", "lorebook-bootstrap"])
def test_excludes_an_always_active_entry(tag):
    r = check(entry("A", fm=OK + "\nexcludes: [Rules]"), entry("Rules", fm="keys: [rules]", tags=f"lorebook, {tag}"))
    only(r, "excludes_always_active", "warning", "A")


def test_no_keys():
    only(check(entry("A", fm="summary: s")), "no_keys", "warning", "A")


@pytest.mark.parametrize("tags", ["lorebook, lorebook-always", "lorebook, lorebook-bootstrap", "lorebook-guide"])
def test_no_keys_not_flagged_for_constant_bootstrap_guide(tags):
    assert not findings(check(entry("A", tags=tags)), "no_keys")


def test_empty_content():
    e = entry("A", fm=OK, body="%% only a comment %%")
    assert e.content == ""
    only(check(e), "empty_content", "warning", "A")


def test_long_entry_over_1500_tokens():
    only(check(entry("A", fm=OK, body="x" * (1500 * 4 + 1))), "long_entry", "warning", "A")
    assert not findings(check(entry("A", fm=OK, body="x" * (1500 * 4))), "long_entry")


def test_no_summary_only_with_ai():
    e = entry("A", fm="keys: [aa]")
    only(check(e, ai_search_enabled=True, ai_search_profile_id="p"), "no_summary", "warning", "A")
    assert not findings(check(e), "no_summary")


def test_warmup_with_only_short_keys():
    only(check(entry("A", fm="keys: [abc, xy]\nwarmup: 2")), "warmup_short_keys", "warning", "A")
    assert not findings(check(entry("A", fm="keys: [abc, long]\nwarmup: 2")), "warmup_short_keys")
    assert not findings(check(entry("A", fm="keys: [abc]\nwarmup: 1")), "warmup_short_keys")


def test_bootstrap_without_keys():
    only(check(entry("A", tags="lorebook, lorebook-bootstrap")), "bootstrap_without_keys", "warning", "A")


def test_long_seed():
    e = entry("A", fm="keys: [seedy]", tags="lorebook, lorebook-seed", body="y" * (2000 * 4 + 4))
    only(check(e), "long_seed", "warning", "A")


def test_depth_or_role_with_position_not_in_chat():
    only(check(entry("A", fm=OK + "\nposition: before\ndepth: 3")), "depth_role_ignored", "warning", "A")
    only(check(entry("A", fm=OK + "\nrole: user"), injection_position=2), "depth_role_ignored", "warning", "A")
    # example 2 of §1.8: in_chat with depth and role is fine
    assert not findings(check(entry("A", fm=OK + "\nposition: in_chat\ndepth: 0\nrole: system")), "depth_role_ignored")
    assert not findings(check(entry("A", fm=OK + "\ndepth: 2"), injection_position=1), "depth_role_ignored")


def test_exclude_recursion_without_keys():
    only(
        check(entry("A", fm="excludeRecursion: true", tags="lorebook, lorebook-always")),
        "exclude_recursion_without_keys",
        "warning",
        "A",
    )


def test_probability_zero():
    only(check(entry("A", fm=OK + "\nprobability: 0")), "probability_zero", "warning", "A")


def test_constants_total_over_budget():
    c1 = entry("C1", tags="lorebook, lorebook-always", body="a" * 400)
    c2 = entry("C2", tags="lorebook, lorebook-always", body="b" * 400)
    only(check(c1, c2, max_tokens_budget=199), "constants_over_budget", "warning")
    assert not findings(check(c1, c2, max_tokens_budget=200), "constants_over_budget")
    assert not findings(check(c1, c2, max_tokens_budget=10, unlimited_budget=True), "constants_over_budget")


# ---------------------------------------------------------------- entry info
def test_short_key():
    f = only(check(entry("A", fm="keys: [ab, long key]")), "short_key", "info", "A")
    assert "'ab'" in f.message


def test_cooldown_on_constant():
    only(check(entry("A", fm="cooldown: 3", tags="lorebook, lorebook-always")), "cooldown_on_constant", "info", "A")


def test_unresolved_wikilinks():
    r = check(entry("A", fm=OK, body="see [[Nowhere]] and [[B]]"), entry("B", fm="keys: [bee]"))
    f = only(r, "unresolved_links", "info", "A")
    assert "Nowhere" in f.message and "B," not in f.message


def test_shared_keyword():
    r = check(entry("A", fm="keys: [Crown]"), entry("B", fm="keys: [crown]"))
    f = only(r, "shared_keyword", "info")
    assert "crown" in f.message and f.entry == "A"


def test_parser_warnings_surface_as_info():
    r = check(entry("A", fm="keys: a, b\nsticky: 2"))
    only(r, "w_comma_split", "info", "A")
    only(r, "w_not_implemented", "info", "A")


# ---------------------------------------------------------------- vault-wide warnings
@pytest.mark.parametrize("code", ["SKIP_BAD_FRONTMATTER", "SKIP_READ_ERROR"])
def test_bad_frontmatter_or_read_error_skip_reported_with_line(code):
    sk = Skip("v", "broken.md", code, "could not be read", 3)
    snap = build_snapshot([VaultSlice("v", (entry("A", fm=OK),), skipped=(sk,))])
    f = only(run_health_check(snap), code.lower(), "warning")
    assert "broken.md, line 3" in f.message and f.path == "broken.md" and f.vault == "v"


def test_bad_frontmatter_from_a_real_parse_is_reported():
    from dle_desktop.core.note_parser import parse_note

    sk = parse_note("v", "bad.md", "---\ntags: [lorebook]\nkeys: a: b\n---\nx")
    snap = build_snapshot([VaultSlice("v", (), skipped=(sk,))])
    f = only(run_health_check(snap), "skip_bad_frontmatter", "warning")
    assert "line 3" in f.message


def test_ordinary_skips_not_reported():
    sk = Skip("v", "plain.md", "SKIP_NO_LOREBOOK_TAG", "no tag")
    snap = build_snapshot([VaultSlice("v", (), skipped=(sk,))])
    assert run_health_check(snap).counts == (0, 0, 0)


def test_index_warnings_reported():
    snap = build_snapshot([VaultSlice("v", (), problems=("listing partial",))])
    f = only(run_health_check(snap), "index_warning", "warning")
    assert "listing partial" in f.message


def test_report_json_shape():
    r = check(entry("A", fm="excludes: [A]"))
    j = r.to_json()
    assert set(j) == {"errors", "warnings", "info"}
    assert any(x["code"] == "excludes_self" and x["entry"] == "A" for x in j["errors"])


def test_entry_scan_depth_zero_without_ai_is_a_warning():
    from dle_desktop.core.health import HealthContext, run_health_check
    from dle_desktop.core.index import VaultSlice, build_snapshot
    from dle_desktop.core.note_parser import parse_note

    e = parse_note("v", "a.md", "---\ntags: [lorebook]\nkeys: [saint]\nscanDepth: 0\n---\n# Saint\nx")
    snap = build_snapshot([VaultSlice("v", (e,))])
    codes = [f.code for f in run_health_check(snap, HealthContext()).warnings]
    assert "entry_scan_depth_zero_without_ai" in codes
    codes_ai = [f.code for f in run_health_check(snap, HealthContext(ai_search_enabled=True)).warnings]
    assert "entry_scan_depth_zero_without_ai" not in codes_ai


def test_constants_filling_the_entry_cap_are_a_warning():
    cs = [entry(f"C{i}", tags="lorebook, lorebook-always", body="short") for i in range(3)]
    only(check(*cs, max_entries=3), "constants_over_entry_cap", "warning")
    assert not findings(check(*cs, max_entries=4), "constants_over_entry_cap")
    assert not findings(check(*cs, max_entries=3, unlimited_entries=True), "constants_over_entry_cap")


# ---------------------------------------------------------------- a checker that remembers
def _same_entries_with_warnings(snap, *warnings):
    from dle_desktop.core.index import IndexSnapshot

    return IndexSnapshot(snap.entries, snap.skipped, warnings, slices=snap.slices, conflict_mode=snap.conflict_mode)


def test_checker_reuses_the_entries_findings_for_a_snapshot_of_the_very_same_entries():
    from dle_desktop.core.health import HealthChecker

    cached = _same_entries_with_warnings(
        one_vault(entry("Lonely", fm="keys: [k]\nrequires: [Nobody]")), "the index came from the cache"
    )
    checker = HealthChecker()
    first = checker.run(cached)
    reconciled = _same_entries_with_warnings(cached)  # the reconcile: same entries, the warning gone
    second = checker.run(reconciled)
    assert [f.code for f in first.warnings].count("index_warning") == 1
    assert findings(second, "index_warning") == []
    missing = only(second, "requires_missing", "error", "Lonely")
    assert missing is only(first, "requires_missing", "error", "Lonely")  # reused, not checked again
    assert second.to_json() == run_health_check(reconciled).to_json()


def test_checker_checks_again_when_the_entries_or_the_settings_differ():
    from dle_desktop.core.health import HealthChecker

    checker = HealthChecker()
    snap = one_vault(entry("Lonely", fm="keys: [k]\nrequires: [Nobody]"))
    first = checker.run(snap)
    fixed = one_vault(entry("Lonely", fm="keys: [k]"))
    assert findings(checker.run(fixed), "requires_missing") == []
    again = checker.run(snap, HealthContext(scan_depth=0))
    assert only(again, "requires_missing", "error") is not only(first, "requires_missing", "error")
    assert only(again, "scan_depth_zero_without_ai", "error")


def test_a_snapshot_of_the_same_entries_takes_the_lookups_already_made():
    a, b = entry("Alpha", fm="keys: [a]", body="See [[Beta]]."), entry("Beta", fm="keys: [b]")
    snap = one_vault(a, b)
    other = _same_entries_with_warnings(snap, "from the cache")
    assert other.same_entries_as(snap) and snap.same_entries_as(other)
    backlinks, by_title = snap.backlinks, snap.by_title
    other.adopt_lookups(snap)
    assert other.backlinks is backlinks and other.backlinks["Beta"] == ("Alpha",)
    assert other.by_title is by_title
    different = one_vault(a, entry("Beta", fm="keys: [b]"))
    assert not different.same_entries_as(snap)
    different.adopt_lookups(snap)
    assert different.backlinks is not backlinks and different.backlinks["Beta"] == ("Alpha",)
