"""DLE Desktop: a native lore engine for SillyTavern."""

__version__ = "0.1.0"
