"""An emulation of the Obsidian Local REST API subset that DeepLore Enhanced uses, over DLE
Desktop's folder vaults: an unmodified DLE in the browser reads and writes them without Obsidian.

`runner.OlraRunner` serves it (its own thread and loop), `app.OlraApp` is the ASGI app,
`paths` decodes and confines vault paths, `keys` holds the API key, `cert` the HTTPS certificate."""

from dle_desktop.olra.cert import cert_path
from dle_desktop.olra.keys import OLRA_KEY_SECRET, olra_key, rotate_olra_key
from dle_desktop.olra.runner import OlraRunner

__all__ = ["OLRA_KEY_SECRET", "OlraRunner", "cert_path", "olra_key", "rotate_olra_key"]
