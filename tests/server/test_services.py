"""Routes reach the engine and the bridge monitor only through `server.services` (typed protocols
the composition root's objects satisfy), and the runner swaps the engine behind them in place."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from dle_desktop.server import services
from dle_desktop.server.app import ServerRunner, build_app
from dle_desktop.st_bridge.monitor import BridgeMonitor

SERVER = Path(services.__file__).parent


def test_no_route_reads_the_engine_off_the_app_state():
    for path in SERVER.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"state\.(engine|bridge_monitor)\b", text), path.name


def test_the_app_hands_its_services_to_the_routes():
    engine, monitor = SimpleNamespace(name="first"), BridgeMonitor()
    app = build_app(engine, monitor)  # type: ignore[arg-type]  # a stand-in engine: the test checks it is handed on as it is
    served = services.services_of(app)
    assert served.engine is engine and served.bridge is monitor
    assert isinstance(services.services_of(build_app(engine)).bridge, BridgeMonitor)  # type: ignore[arg-type]  # a stand-in engine: the test checks it is handed on as it is


def test_a_new_engine_is_served_from_the_next_request_on():
    first, second = SimpleNamespace(name="first"), SimpleNamespace(name="second")
    runner = ServerRunner(first)  # type: ignore[arg-type]  # a stand-in engine: the test checks it is handed on as it is
    runner._app = build_app(first, runner.bridge_monitor)  # type: ignore[arg-type]  # a stand-in engine: the test checks it is handed on as it is
    runner.set_engine(second)  # type: ignore[arg-type]  # a stand-in engine: the test checks it is handed on as it is
    assert services.services_of(runner._app).engine is second
    assert services.services_of(runner._app).bridge is runner.bridge_monitor
