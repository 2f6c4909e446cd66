"""Session Scribe, Auto Lorebook and AI Notepad over a running engine: their AI calls on the
engine's channels, their writes through its note writer, their per-chat state in the data folder.
The text work is in core/writers; the HTTP routes are server/routes_writers.py."""
