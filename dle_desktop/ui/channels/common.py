"""What the Channels view's panels share: the labels of the choices they offer and small helpers
for combo boxes filled from a setting's declared choices."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QComboBox

from dle_desktop.ai.types import FLAVOR_LABELS
from dle_desktop.state.settings import CHANNELS, FIELDS, ProfileConfig, Settings

CHANNEL_PARTS = ("connection_mode", "profile_id", "proxy_url", "model", "max_tokens", "timeout")
AI_SEARCH_FIELDS = (
    "ai_search_enabled",
    "ai_search_mode",
    "ai_confidence_threshold",
    "ai_error_fallback",
    "ai_empty_fallback",
    "fix_ai_confidence_budget",
    "hierarchical_pre_filter",
    "hierarchical_aggressiveness",
)
#: The settings the Channels view edits; everything else is left as it is.
OWN_FIELDS = ("connection_profiles", *(f"{c}_{p}" for c in CHANNELS for p in CHANNEL_PARTS), *AI_SEARCH_FIELDS)

MODE_LABELS = {
    "inherit": "Same as AI search",
    "st": "SillyTavern's connection (not reachable here: same as AI search)",
    "profile": "A connection profile",
    "proxy": "A proxy (Anthropic Messages API, e.g. claude-code-proxy)",
}
AI_MODE_LABELS = {
    "two-stage": "Two-stage: keywords first, then the AI chooses",
    "ai-only": "AI only: the AI chooses from all entries",
}
THRESHOLD_LABELS = {
    "low": "Low: keep every pick",
    "medium": "Medium: drop low-confidence picks",
    "high": "High: keep only high-confidence picks",
}
ERROR_FALLBACK_LABELS = {
    "keyword": "Use the keyword matches",
    "constants_only": "Only constant entries",
    "bootstrap_only": "Only bootstrap entries",
    "none": "Nothing",
}
EMPTY_FALLBACK_LABELS = {
    "constants": "Only constant entries",
    "constants_bootstrap": "Constant and bootstrap entries",
    "keyword": "Use the keyword matches",
    "none": "Nothing",
}


def own_values(settings: Settings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in OWN_FIELDS}


def meta(name: str, what: str):
    return FIELDS[name].metadata.get(what)


def combo(labels: dict[str, str], choices) -> QComboBox:
    box = QComboBox()
    for value in choices:
        box.addItem(labels.get(value, value), value)
    return box


def set_combo(box: QComboBox, value) -> None:
    i = box.findData(value)
    if i >= 0:
        box.setCurrentIndex(i)


def profile_kind(p: ProfileConfig) -> str:
    return FLAVOR_LABELS.get(p.flavor if p.provider == "openai" else p.provider, p.provider)
