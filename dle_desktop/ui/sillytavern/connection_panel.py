"""The SillyTavern view's Connection panel: whether a SillyTavern page talks to DLE Desktop now,
what it last did, and the last error its bridge reported. Read from the runtime's bridge monitor
(`snapshot()`), every two seconds while the view is shown."""

from __future__ import annotations

from PySide6.QtWidgets import QGroupBox, QVBoxLayout

from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, MUTED_STYLE, OK_STYLE, WARN_STYLE, note
from dle_desktop.ui.sillytavern.common import age_text, cut, plural

CHAT_ROOM = 36
NEVER = "No SillyTavern page has contacted DLE Desktop yet"


def connection_text(snap: dict | None) -> tuple[str, str]:
    """(one line for the user, its style) from a bridge monitor snapshot."""
    if snap is None:
        return "The connection status is not available.", MUTED_STYLE
    age = snap.get("last_contact_age_s")
    if snap.get("last_contact") is None and age is None:
        return NEVER + ". Install the bridge above, then reload SillyTavern's page (F5).", MUTED_STYLE
    if not snap.get("connected"):
        return f"Last contact {age_text(age)} ago (not connected now)", WARN_STYLE
    who = "Connected: SillyTavern"
    if snap.get("st_version"):
        who += f" {snap['st_version']}"
    if snap.get("extension_version"):
        who += f", bridge {snap['extension_version']}"
    parts = [who, "last contact just now" if (age or 0) < 1 else f"last contact {age_text(age)} ago"]
    chat = snap.get("chat_id")
    if chat:
        parts.append(f'chat "{cut(str(chat), CHAT_ROOM)}"')
    elif snap.get("character"):
        parts.append(f"character {cut(str(snap['character']), 36)}")
    injected = snap.get("last_injected")
    if injected is not None:
        extra = []
        if snap.get("last_total_tokens") is not None:
            extra.append(plural(int(snap["last_total_tokens"]), "token"))
        if snap.get("last_ms") is not None:
            extra.append(f"{float(snap['last_ms']):,.0f} ms")
        count = len(injected) if isinstance(injected, (list, tuple)) else int(injected)
        parts.append(plural(count, "entry", "entries") + " injected" + (f" ({', '.join(extra)})" if extra else ""))
    return " · ".join(parts), OK_STYLE


def details_text(snap: dict | None) -> str:
    """The smaller line below: where the page is, the whole chat name, how many generations."""
    if not snap or (snap.get("last_contact") is None and snap.get("last_contact_age_s") is None):
        return ""
    parts = []
    if snap.get("origin"):
        parts.append(f"page {snap['origin']}")
    if snap.get("character"):
        parts.append(f"character {snap['character']}")
    if snap.get("chat_id") and len(str(snap["chat_id"])) > CHAT_ROOM:  # the status line shows it cut
        parts.append(f"chat {snap['chat_id']}")
    injected = snap.get("last_injected")
    if isinstance(injected, (list, tuple)) and injected:
        shown = ", ".join(str(t) for t in injected[:6]) + (
            f" and {len(injected) - 6} more" if len(injected) > 6 else ""
        )
        parts.append(f"last injected: {shown}")
    if snap.get("generations") is not None:
        parts.append(plural(int(snap["generations"]), "generation") + " since DLE Desktop started")
    return " · ".join(parts)


def error_text(snap: dict | None) -> str:
    error = (snap or {}).get("last_error")
    if not error:
        return ""
    if isinstance(error, dict):
        error = error.get("message") or error.get("error") or str(error)
    return f"The bridge last reported: {error}"


class ConnectionPanel(QGroupBox):
    def __init__(self, view) -> None:
        super().__init__("Connection")
        self.view = view
        self.snapshot: dict | None = None
        self.status = note(NEVER, MUTED_STYLE)
        self.details = note("", MUTED_STYLE)
        self.error = note("", ERROR_STYLE)
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addWidget(self.details)
        layout.addWidget(self.error)
        self.show_snapshot(None, available=True)

    def show_snapshot(self, snap: dict | None, available: bool = True) -> None:
        self.snapshot = snap
        text, style = connection_text(snap if available else None)
        if available and snap is None:
            text, style = NEVER + ".", MUTED_STYLE
        self.status.setText(text)
        self.status.setStyleSheet(style)
        self.details.setText(details_text(snap))
        self.details.setVisible(bool(self.details.text()))
        self.error.setText(error_text(snap))
        self.error.setVisible(bool(self.error.text()))

    def refresh(self) -> None:
        monitor = getattr(self.view.bridge.runtime, "bridge_monitor", None)
        if monitor is None:
            self.show_snapshot(None, available=False)
            return
        self.show_snapshot(monitor.snapshot())  # thread-safe: a plain dict under the monitor's lock
