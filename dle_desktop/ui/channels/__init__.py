"""The Channels view: AI connection profiles, channels and AI search's options."""
