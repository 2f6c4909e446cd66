"""Desktop integration: the login item, the menu entry, the diagnostics archive."""
