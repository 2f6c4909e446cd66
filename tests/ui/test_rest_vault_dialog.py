"""The Obsidian REST vault dialog's connection test names what answered on the port (issue 9,
item 10): a 404 from another server used to read as "connected; the vault is empty"."""

from __future__ import annotations

from tests.fakes.canned_server import CannedServer
from tests.fakes.obsidian_server import FakeObsidian


def test_the_connection_test_says_when_the_port_is_not_obsidian(qapp, qloop, tmp_path):
    from dle_desktop.ui.settings.dialog import RestVaultDialog

    dialog = RestVaultDialog(key="some-key")
    try:
        with CannedServer(404, b"Not Found") as other:
            dialog.port.setValue(other.port)
            qloop.run_until_complete(dialog._test())
        text = dialog.result_label.text()
        assert text.startswith("✖") and "not the Obsidian Local REST API (HTTP 404" in text

        vault = tmp_path / "vault"
        vault.mkdir()
        (vault / "Note.md").write_text("# Note\n", encoding="utf-8")
        with FakeObsidian(vault, api_key="some-key") as olra:
            dialog.port.setValue(olra.port)
            qloop.run_until_complete(dialog._test())
        assert dialog.result_label.text().startswith("✔ connected to")
    finally:
        dialog.deleteLater()
