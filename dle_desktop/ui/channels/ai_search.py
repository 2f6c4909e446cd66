"""The Channels view's left-hand panels below the profiles: AI search's own options (edited into
the view's draft) and the circuit breaker (read from the engine's AI snapshot)."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QFormLayout, QGroupBox, QHBoxLayout, QPushButton, QSpinBox, QVBoxLayout

from dle_desktop.ui.channels.common import (
    AI_MODE_LABELS,
    EMPTY_FALLBACK_LABELS,
    ERROR_FALLBACK_LABELS,
    THRESHOLD_LABELS,
    combo,
    meta,
    set_combo,
)
from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, MUTED_STYLE, OK_STYLE, WARN_STYLE, note
from dle_desktop.ui.widgets.async_util import soon

BREAKER_TEXT = {
    "closed": ("Closed: AI calls go through.", OK_STYLE),
    "half-open": ("Half-open: the next AI call is a trial; its success closes the breaker.", WARN_STYLE),
}


class AiSearchPanel(QGroupBox):
    def __init__(self, view) -> None:
        super().__init__("AI search")
        self.view = view
        self._filling = False
        self.ai_enabled = QCheckBox("Let an AI choose the entries for each generation")
        self.ai_enabled.setToolTip("Uses the AI search channel's connection; its failures fall back as set below")
        self.ai_mode = combo(AI_MODE_LABELS, meta("ai_search_mode", "choices"))
        self.ai_threshold = combo(THRESHOLD_LABELS, meta("ai_confidence_threshold", "choices"))
        self.ai_error = combo(ERROR_FALLBACK_LABELS, meta("ai_error_fallback", "choices"))
        self.ai_empty = combo(EMPTY_FALLBACK_LABELS, meta("ai_empty_fallback", "choices"))
        self.ai_budget = QCheckBox("Confidence decides budget cuts")
        self.ai_budget.setToolTip(meta("fix_ai_confidence_budget", "doc"))
        self.prefilter = QCheckBox("Category pre-filter")
        self.prefilter.setToolTip(
            "For large vaults: a first, small AI call picks categories, so the full search sees fewer candidates"
        )
        self.aggressiveness = QSpinBox(
            minimum=0, maximum=int(meta("hierarchical_aggressiveness", "hi") * 100), suffix=" %"
        )
        self.aggressiveness.setPrefix("may drop up to ")
        self.aggressiveness.setToolTip(
            "The most of the candidates the pre-filter may drop; an answer that would drop more is ignored"
        )
        form = QFormLayout(self)
        form.addRow(self.ai_enabled)
        form.addRow("Mode", self.ai_mode)
        form.addRow("Confidence", self.ai_threshold)
        form.addRow("If the AI fails", self.ai_error)
        form.addRow("If it picks nothing", self.ai_empty)
        form.addRow(self.ai_budget)
        form.addRow(
            note(
                "When the token budget cuts, the AI's surest picks are kept first (off: by "
                "priority only, as DLE does).",
                MUTED_STYLE,
            )
        )
        pre = QHBoxLayout()
        pre.addWidget(self.prefilter)
        pre.addWidget(self.aggressiveness, 1)
        form.addRow(pre)
        self.ai_enabled.toggled.connect(lambda on: self._edit(ai_search_enabled=on))
        self.ai_mode.currentIndexChanged.connect(lambda *_: self._edit(ai_search_mode=self.ai_mode.currentData()))
        self.ai_threshold.currentIndexChanged.connect(
            lambda *_: self._edit(ai_confidence_threshold=self.ai_threshold.currentData())
        )
        self.ai_error.currentIndexChanged.connect(lambda *_: self._edit(ai_error_fallback=self.ai_error.currentData()))
        self.ai_empty.currentIndexChanged.connect(lambda *_: self._edit(ai_empty_fallback=self.ai_empty.currentData()))
        self.ai_budget.toggled.connect(lambda on: self._edit(fix_ai_confidence_budget=on))
        self.prefilter.toggled.connect(lambda on: self._edit(hierarchical_pre_filter=on))
        self.aggressiveness.valueChanged.connect(lambda v: self._edit(hierarchical_aggressiveness=v / 100))

    def fill(self, draft: dict) -> None:
        self._filling = True
        try:
            self.ai_enabled.setChecked(draft["ai_search_enabled"])
            set_combo(self.ai_mode, draft["ai_search_mode"])
            set_combo(self.ai_threshold, draft["ai_confidence_threshold"])
            set_combo(self.ai_error, draft["ai_error_fallback"])
            set_combo(self.ai_empty, draft["ai_empty_fallback"])
            self.ai_budget.setChecked(draft["fix_ai_confidence_budget"])
            self.prefilter.setChecked(draft["hierarchical_pre_filter"])
            self.aggressiveness.setValue(round(draft["hierarchical_aggressiveness"] * 100))
            self.aggressiveness.setEnabled(draft["hierarchical_pre_filter"])
        finally:
            self._filling = False

    def _edit(self, **values) -> None:
        if self._filling:
            return
        if "hierarchical_pre_filter" in values:
            self.aggressiveness.setEnabled(values["hierarchical_pre_filter"])
        self.view.set_draft(**values)


class BreakerPanel(QGroupBox):
    def __init__(self, view) -> None:
        super().__init__("Circuit breaker")
        self.view = view
        self.breaker_label = note("Reading…", MUTED_STYLE)
        self.breaker_label.setToolTip(
            "Two failures in a row that say the provider is broken (server errors, network, "
            "unreadable answers) pause AI calls for 30 s; AI search then falls back"
        )
        self.reset_button = QPushButton("Reset")
        self.reset_button.setToolTip("Close the breaker now, so the next AI call goes out")
        self.clear_cache_button = QPushButton("Clear AI cache")
        self.clear_cache_button.setToolTip("Forget remembered AI-search answers; the next generation asks again")
        self.breaker_message = note("", MUTED_STYLE)
        self.reset_button.clicked.connect(lambda *_: soon(self.reset_breaker))
        self.clear_cache_button.clicked.connect(lambda *_: soon(self.clear_cache))
        row = QHBoxLayout()
        row.addWidget(self.reset_button)
        row.addWidget(self.clear_cache_button)
        row.addWidget(self.breaker_message, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.breaker_label)
        layout.addLayout(row)

    def fill(self, snap: dict) -> None:
        b = snap.get("breaker") or {}
        state = b.get("state")
        if snap.get("offline"):
            text, style = "AI calls are switched off for this run (offline).", WARN_STYLE
        elif state == "open":
            text = (
                f"Open after {b.get('failures', 0)} failures: AI calls are paused, retrying in "
                f"{max(0, round(b.get('retry_in_seconds') or 0))} s."
            )
            style = ERROR_STYLE
        elif state in BREAKER_TEXT:
            text, style = BREAKER_TEXT[state]
        else:
            text, style = "Reading…", MUTED_STYLE
        self.breaker_label.setText(text)
        self.breaker_label.setStyleSheet(style)
        self.reset_button.setEnabled(state in ("open", "half-open"))

    async def reset_breaker(self) -> None:
        bridge = self.view.bridge
        await bridge.reset_ai_breaker()
        self.breaker_message.setText("Breaker reset.")
        await self.view.refresh()

    async def clear_cache(self) -> None:
        bridge = self.view.bridge
        await bridge.clear_ai_cache()
        self.breaker_message.setText("AI cache cleared.")
        await self.view.refresh()
