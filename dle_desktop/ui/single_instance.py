"""One running app per data folder: a second launch asks the first to show itself and exits."""

from __future__ import annotations

import hashlib

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket


def instance_name(data_dir: str) -> str:
    return "dle-desktop-" + hashlib.sha1(data_dir.encode("utf-8")).hexdigest()[:16]


def ask_running_instance(name: str, message: bytes = b"show", timeout_ms: int = 500) -> bool:
    """True when another instance answered (and got our message)."""
    sock = QLocalSocket()
    sock.connectToServer(name)
    if not sock.waitForConnected(timeout_ms):
        return False
    sock.write(message + b"\n")
    sock.flush()
    sock.waitForBytesWritten(timeout_ms)
    sock.disconnectFromServer()
    return True


class InstanceServer(QObject):
    messageReceived = Signal(str)

    def __init__(self, name: str, parent=None) -> None:
        super().__init__(parent)
        self.server = QLocalServer(self)
        self.server.newConnection.connect(self._accept)
        if not self.server.listen(name):
            # A crashed instance can leave its socket behind; nobody answered it, so take over.
            QLocalServer.removeServer(name)
            self.server.listen(name)

    def _accept(self) -> None:
        while self.server.hasPendingConnections():
            conn = self.server.nextPendingConnection()
            conn.readyRead.connect(lambda c=conn: self._read(c))

    def _read(self, conn: QLocalSocket) -> None:
        while conn.canReadLine():
            self.messageReceived.emit(bytes(conn.readLine()).decode("utf-8", "replace").strip())

    def close(self) -> None:
        self.server.close()
