"""The engine layer: the Engine, its thread, per-chat retrieval, semantic search, session vaults, settings apply."""
