"""The SillyTavern view: installs, connection, access, chats and the Obsidian REST emulation."""
