"""A long health group (thousands of notes at 10,000 entries) makes its rows when first opened,
not with every report; a short one has them at once; the selected row survives a new report
even when it sits in a group not opened yet."""

from __future__ import annotations

from dle_desktop.core.health import HealthFinding, HealthReport
from dle_desktop.ui.vault import health_panel
from dle_desktop.ui.vault.health_panel import HealthPanel


def report(n_info: int) -> HealthReport:
    info = [
        HealthFinding("info", "I1", f"note {i}", entry=f"Entry {i}", vault="v", path=f"e{i}.md") for i in range(n_info)
    ]
    warnings = [HealthFinding("warning", "W1", "a warning", entry="Warned", vault="v", path="w.md")]
    return HealthReport(errors=[], warnings=warnings, info=info)


def test_a_long_group_fills_when_opened(qapp):
    panel = HealthPanel()
    panel.show_report(report(health_panel.LAZY_GROUP_ROWS + 10))
    warnings, info = panel.topLevelItem(1), panel.topLevelItem(2)
    assert warnings.childCount() == 1  # short: made at once
    assert info.childCount() == 0 and info.text(0) == f"Info ({health_panel.LAZY_GROUP_ROWS + 10})"
    assert info.childIndicatorPolicy() == info.ChildIndicatorPolicy.ShowIndicator  # it still shows it can open
    info.setExpanded(True)
    assert info.childCount() == health_panel.LAZY_GROUP_ROWS + 10
    last = info.child(info.childCount() - 1)
    assert (last.text(0), last.text(1), last.text(2)) == (
        f"Entry {health_panel.LAZY_GROUP_ROWS + 9}",
        f"note {health_panel.LAZY_GROUP_ROWS + 9}",
        "I1",
    )
    assert last.data(0, health_panel.ENTRY_ROLE) == ("v", f"e{health_panel.LAZY_GROUP_ROWS + 9}.md")


def test_the_selection_survives_a_report_in_a_closed_long_group(qapp):
    panel = HealthPanel()
    panel.show_report(report(health_panel.LAZY_GROUP_ROWS + 10))
    info = panel.topLevelItem(2)
    info.setExpanded(True)
    panel.setCurrentItem(info.child(7))
    info.setExpanded(False)
    panel.show_report(report(health_panel.LAZY_GROUP_ROWS + 11))
    current = panel.currentItem()
    assert current is not None and current.text(0) == "Entry 7"
