"""The Graph view's side panel: the analysis findings grouped by kind, the real problems first,
each group saying its severity in a word and an icon (click one to focus the graph on it), the
filters (type, tag, folder, vault), the ego view and the colour legend."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QStyle,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.core.graph import NODE_TYPES, SEVERITIES, GraphFinding, LoreGraph, rank_findings

FINDING_KINDS = {
    "requires_cycle": ("Circular requires", "Entries that require each other in a circle: none can be injected"),
    "orphan": ("Orphans", "Entries with no connection at all"),
    "bridge": ("Bridges", "The only edge between two communities: remove it and they fall apart"),
    "cut_entry": ("Cut entries", "Entries whose removal cuts others off the rest"),
    "missing_connection": (
        "Missing connections",
        "Per entry: the entries it shares a custom-field value with but has no link to",
    ),
    "type_imbalance": ("Type imbalance", "Communities made mostly of one entry type"),
    "common_value": (
        "Too common to suggest links",
        "Values so many entries share that suggesting a link between each pair would be noise",
    ),
}
# the word says it, the icon helps the eye; colour alone never carries the severity
SEVERITY_WORDS = {"problem": "Problem", "warning": "Warning", "suggestion": "Suggestion", "note": "Note"}
SEVERITY_ICONS = {
    "problem": QStyle.StandardPixmap.SP_MessageBoxCritical,
    "warning": QStyle.StandardPixmap.SP_MessageBoxWarning,
    "suggestion": QStyle.StandardPixmap.SP_MessageBoxInformation,
    "note": QStyle.StandardPixmap.SP_FileDialogInfoView,
}
EXPANDED_SEVERITIES = ("problem", "warning")  # suggestions and notes start folded
ALL = "All"
FINDING_ROLE = Qt.ItemDataRole.UserRole + 1
LEGEND_ROWS = 10  # more would squeeze the findings list


def filter_choices(graph: LoreGraph) -> tuple[list[str], list[str], list[str]]:
    """The tags, folders and vaults a filter can pick, each sorted without regard to case."""
    tags = sorted({t for e in graph.entries for t in e.tags}, key=str.lower)
    folders = sorted({e.folder or "(top level)" for e in graph.entries}, key=str.lower)
    vaults = sorted({e.vault for e in graph.entries}, key=str.lower)
    return tags, folders, vaults


class GraphPanel(QWidget):
    findingActivated = Signal(object)  # GraphFinding
    filtersChanged = Signal()
    egoChanged = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.findings = QTreeWidget()
        self.findings.setHeaderHidden(True)
        self.findings.setRootIsDecorated(True)
        self.findings.setUniformRowHeights(True)
        self.findings.itemClicked.connect(self._clicked)
        self.findings.itemActivated.connect(self._clicked)
        self.summary = QLabel()
        self.summary.setWordWrap(True)

        filters = QGroupBox("Show")
        form = QFormLayout(filters)
        form.setContentsMargins(6, 6, 6, 6)
        self.type_boxes: dict[str, QCheckBox] = {}
        types = QHBoxLayout()
        types.setSpacing(4)
        for t in NODE_TYPES:
            box = QCheckBox(t)
            box.setChecked(True)
            box.toggled.connect(lambda *_: self.filtersChanged.emit())
            self.type_boxes[t] = box
            types.addWidget(box)
        form.addRow("Type", types)
        self.tag = QComboBox()
        self.folder = QComboBox()
        self.vault = QComboBox()
        for label, combo in (("Tag", self.tag), ("Folder", self.folder), ("Vault", self.vault)):
            combo.addItem(ALL)
            combo.setMinimumContentsLength(12)
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.currentIndexChanged.connect(lambda *_: self.filtersChanged.emit())
            form.addRow(label, combo)
        ego = QHBoxLayout()
        self.ego = QCheckBox("Ego view of the selection,")
        self.ego.setToolTip("Only the selected entry and what lies within N hops of it (E toggles, Esc leaves)")
        self.hops = QSpinBox(minimum=1, maximum=6, value=2, suffix=" hops")
        self.ego.toggled.connect(lambda *_: self.egoChanged.emit())
        self.hops.valueChanged.connect(lambda *_: self.egoChanged.emit())
        ego.addWidget(self.ego)
        ego.addWidget(self.hops)
        ego.addStretch(1)
        form.addRow(ego)

        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        legend_box = QGroupBox("Colours")
        lv = QVBoxLayout(legend_box)
        lv.setContentsMargins(6, 6, 6, 6)
        lv.addWidget(self.legend)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("<b>Findings</b>"))
        layout.addWidget(self.summary)
        layout.addWidget(self.findings, 1)
        layout.addWidget(filters)
        layout.addWidget(legend_box)

    # -- findings -----------------------------------------------------------------------------------
    def set_findings(self, findings: Iterable[GraphFinding], communities: int | None = None) -> None:
        self.findings.clear()
        groups: dict[str, list[GraphFinding]] = {}
        for f in rank_findings(findings):
            groups.setdefault(f.kind, []).append(f)  # ranked, so the groups come in severity order
        per_severity = dict.fromkeys(SEVERITIES, 0)
        for kind, items in groups.items():
            severity = items[0].severity
            per_severity[severity] += len(items)
            word = SEVERITY_WORDS[severity]
            name, tip = FINDING_KINDS.get(kind, (kind, ""))
            top = QTreeWidgetItem([f"{word} · {name} ({len(items)})"])
            top.setIcon(0, self._severity_icon(severity))
            top.setToolTip(0, f"{word}: {tip}" if tip else word)
            top.setData(0, Qt.ItemDataRole.UserRole, kind)
            for f in items:
                child = QTreeWidgetItem([_short(f)])
                child.setToolTip(0, f"{word}: {f.message}")
                child.setData(0, FINDING_ROLE, f)
                top.addChild(child)
            self.findings.addTopLevelItem(top)
            top.setExpanded(severity in EXPANDED_SEVERITIES)
        total = sum(per_severity.values())
        parts = [_count(per_severity[s], s) for s in ("problem", "warning", "suggestion")]
        if per_severity["note"]:
            parts.append(_count(per_severity["note"], "note"))
        text = ", ".join(parts) if total else "No problems, warnings or suggestions"
        if communities is not None:
            text += f" · {communities} communit{'ies' if communities != 1 else 'y'}"
        self.summary.setText(text + (". Click one to see it in the graph." if total else "."))

    def findings_pending(self) -> None:
        """A first picture is up and the analysis is still under way: no findings yet, and
        not "no problems" either."""
        self.findings.clear()
        self.summary.setText("The findings follow once the graph is analysed…")

    def _severity_icon(self, severity: str) -> QIcon:
        return self.style().standardIcon(SEVERITY_ICONS[severity])

    def group_counts(self) -> dict[str, int]:
        out = {}
        for i in range(self.findings.topLevelItemCount()):
            top = self.findings.topLevelItem(i)
            assert top is not None  # i < topLevelItemCount()
            out[top.data(0, Qt.ItemDataRole.UserRole)] = top.childCount()
        return out

    def _clicked(self, item: QTreeWidgetItem, _col: int = 0) -> None:
        f = item.data(0, FINDING_ROLE)
        if f is not None:
            self.findingActivated.emit(f)

    # -- filters ----------------------------------------------------------------------------------
    def set_choices(self, graph: LoreGraph, choices: tuple[list[str], list[str], list[str]] | None = None) -> None:
        """The filters' tags, folders and vaults (`filter_choices(graph)`, unless worked out
        already off the GUI thread)."""
        tags, folders, vaults = choices or filter_choices(graph)
        for combo, values in ((self.tag, tags), (self.folder, folders), (self.vault, vaults)):
            keep = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItem(ALL)
            combo.addItems(values)
            combo.setCurrentIndex(max(0, combo.findText(keep)))
            combo.blockSignals(False)
        self.vault.setEnabled(len(vaults) > 1)

    def filters(self) -> dict:
        def pick(c: QComboBox) -> str | None:
            return None if c.currentText() == ALL else c.currentText()

        return {
            "types": {t for t, b in self.type_boxes.items() if b.isChecked()},
            "tag": pick(self.tag),
            "folder": pick(self.folder),
            "vault": pick(self.vault),
        }

    def set_legend(self, legend: list[tuple[str, QColor]], note: str) -> None:
        rows = "".join(
            f"<tr><td><span style='color:{c.name()}; font-size:14px'>●</span></td><td>{_esc(label)}</td></tr>"
            for label, c in legend[:LEGEND_ROWS]
        )
        more = f"… and {len(legend) - LEGEND_ROWS} more" if len(legend) > LEGEND_ROWS else ""
        self.legend.setText(
            f"<table cellspacing=2>{rows}</table>{more}" + (f"<p style='color:#555'>{_esc(note)}</p>" if note else "")
        )


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _short(f: GraphFinding) -> str:
    if f.kind == "orphan":
        return f.titles[0] if f.titles else f.message
    if f.kind == "missing_connection" and f.titles and "unlinked" in f.data:
        fields = sorted({str(name) for name, _ in f.data.get("shared", [])})
        n = int(f.data["unlinked"])
        return f"{f.titles[0]}: {n} unlinked entr{'ies share' if n != 1 else 'y shares'} {', '.join(fields)}"
    if f.kind == "common_value" and "field" in f.data:
        return f"{f.data['field']}: {f.data.get('value', '')} ({len(f.entries)} entries)"
    if f.kind in ("bridge", "missing_connection") and len(f.titles) == 2:
        return f"{f.titles[0]} – {f.titles[1]}"
    if f.kind == "cut_entry" and f.titles:
        return f"{f.titles[0]} (cuts off {f.data.get('cut_off', '?')})"
    if f.kind == "requires_cycle":
        return " → ".join(f.titles)
    if f.kind == "type_imbalance":
        return f"community {int(f.data.get('community', 0)) + 1}: {f.data.get('share', 0):.0%} {f.data.get('type', '')}"
    return f.message


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def swatch(colour: QColor, size: int = 10) -> QPixmap:
    pm = QPixmap(size, size)
    pm.fill(colour)
    return pm
