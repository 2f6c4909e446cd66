"""The SillyTavern end-to-end suite: a real SillyTavern in a real Chromium (run it with scripts/st-e2e)."""
