"""The Qt layer: the only package that imports PySide6.

PySide6 replaces `__import__` to support its opt-in `from __feature__ import snake_case`
syntax, and after every later import of a Python module it reads that module's source file
(`inspect.getsource`) to see whether it mentions PySide6. The app uses no such feature, and the
reading cost about half a second at start (hundreds of modules) and a stall on the GUI thread
each time a view imported its modules late. So every module is taken to use PySide6 with no
feature selected, which is what PySide6 itself decides for a module that does."""

from __future__ import annotations

import PySide6.QtCore  # noqa: F401 - loads shiboken's feature support, patched below


def _skip_feature_source_scan() -> None:
    try:
        import shibokensupport.feature as feature  # type: ignore[import-not-found]  # inside shiboken6, no stubs
    except ImportError:  # another PySide6 layout: it keeps its own behaviour
        return
    if callable(getattr(feature, "_mod_uses_pyside", None)):
        feature._mod_uses_pyside = lambda _module: True


_skip_feature_source_scan()
