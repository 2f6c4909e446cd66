"""The composition root: it builds the engine, its thread, the servers and the bridge monitor, and wires them."""
