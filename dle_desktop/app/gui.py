"""The window's composition: what `ui.launch.run_gui` is handed so that the UI never builds the
engine, the servers or the runtime itself (the composition root stands above the UI)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dle_desktop.app.context import AppContext, make_context, session_engine
from dle_desktop.app.runtime import Runtime
from dle_desktop.engine.engine import source_from_spec
from dle_desktop.engine.session_vaults import SessionVaults


class AppComposition:
    """Satisfies `ui.ports.Composition`."""

    def make_context(self, data_dir: str | None) -> AppContext:
        return make_context(data_dir, log_to_stderr=True)

    def check_vault_spec(self, spec: str) -> None:
        """Raises DleError for a `--vault` the app could not open (a folder that is not there)."""
        source_from_spec(spec)

    def open_runtime(self, ctx: AppContext, vault_specs: Sequence[str] | None, port: int | None) -> Runtime:
        """The session's vaults, its engine and the runtime around it (not started yet)."""
        ctx.session = SessionVaults.from_command_line(list(vault_specs) if vault_specs else None)
        return Runtime(ctx, session_engine(ctx), port=port)


def run_gui(args: Any) -> int:
    from dle_desktop.ui.launch import run_gui as run_window

    return run_window(args, AppComposition())
