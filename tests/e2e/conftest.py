"""The end-to-end home. Its `sillytavern/` suite needs SillyTavern, Chromium and Playwright, which
`scripts/st-e2e` installs before it runs that suite (with DLE_ST_E2E=1); the ordinary test run
leaves it out rather than fail on what it has not installed."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("DLE_ST_E2E") == "1" else ["sillytavern/*"]
