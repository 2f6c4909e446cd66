"""Issue 24's guard against a frozen window at scale: the real app on a generated 10,000-entry
vault, first start and restart, runs the GUI benchmark's scenario (entries loading, filter, sort,
selection, the Graph view) under the benchmark's own watchdog, a 5 ms timer on the GUI loop. A
stall over STALL_LIMIT_MS once the window is up fails the test.

The limit is issue 24's 250 ms. The app is at about 40-160 ms here at 10,000 entries, about as
long as on the 61-entry sample vault on the same machine (benchmarks/results/gui.txt): background
work gives way while the user acts (`core.user_activity`), a view's code loads off the GUI thread.

A loaded machine can make one run late for reasons of its own (the scheduler, not the app), so a
failing pair of runs is repeated once and the test fails only if the second pair fails too, with
both sets of figures in the message. A regression that freezes the window fails both.

Machines differ too: on a slower one the sample vault alone stalls longer than here. So the same
scenario runs on the sample vault first, and the limit is the larger of 250 ms and the sample's
longest stall plus SCALE_MARGIN_MS: what the test guards is the cost of 10,000 entries, not the
speed of the machine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "benchmarks") not in sys.path:
    sys.path.insert(0, str(REPO / "benchmarks"))

from bench_gui import compile_app, count_entries, run_child  # noqa: E402 - needs the sys.path line above
from bench_index import generate_vault  # noqa: E402 - needs the sys.path line above

pytestmark = pytest.mark.slow

STALL_LIMIT_MS = 250  # issue 24
#: How much longer than on the sample vault, on the same machine, a stall at 10,000 entries may be.
SCALE_MARGIN_MS = 150
SAMPLE = REPO / "resources" / "sample_vault"
ENTRIES = 10_000


@pytest.fixture(scope="module")
def big_vault(tmp_path_factory) -> tuple[Path, int]:
    compile_app()  # measured as the app runs when installed: from bytecode
    root = generate_vault(tmp_path_factory.mktemp("scale") / "vault", ENTRIES).root
    return root, count_entries(root)


def runs(vault: Path, expect: int, data: Path) -> dict[str, dict]:
    return {"first start": run_child(vault, data, expect), "restart": run_child(vault, data, expect)}


def worst_stall(pair: dict[str, dict]) -> float:
    return max(r["stall_ms"] for r in pair.values())


def test_the_window_never_stalls_long_at_10000_entries(big_vault, tmp_path):
    vault, expect = big_vault
    assert expect > 9000
    baseline = worst_stall(runs(SAMPLE, count_entries(SAMPLE), tmp_path / "data-sample"))
    limit = max(STALL_LIMIT_MS, baseline + SCALE_MARGIN_MS)
    attempts = [runs(vault, expect, tmp_path / "data-1")]
    if worst_stall(attempts[0]) > limit:
        attempts.append(runs(vault, expect, tmp_path / "data-2"))
    for pair in attempts:
        for run in pair.values():
            assert run["rows"] == expect and "graph_s" in run  # the whole scenario ran
    report = [
        f"{label}: longest stall {r['stall_ms']:.0f} ms (loading {r['stall_loading_ms']:.0f}, "
        f"table {r['stall_vault_ms']:.0f}, graph {r['stall_graph_ms']:.0f})"
        for pair in attempts
        for label, r in pair.items()
    ]
    report.insert(0, f"limit {limit:.0f} ms (the sample vault's longest stall here: {baseline:.0f} ms)")
    assert worst_stall(attempts[-1]) <= limit, "the GUI loop stalled:\n" + "\n".join(report)
