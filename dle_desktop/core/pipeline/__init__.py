"""DLE's retrieval pipeline as pure functions: (snapshot, chat, chat state, config) →
(generation result with a verdict for every entry it touched, next chat state)."""
