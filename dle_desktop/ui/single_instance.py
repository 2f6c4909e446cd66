"""One running app per data folder: a second launch asks the first to show itself (and to open
the vaults it was given, after asking the user there) and exits."""

from __future__ import annotations

import hashlib

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket


def instance_name(data_dir: str) -> str:
    return "dle-desktop-" + hashlib.sha1(data_dir.encode("utf-8")).hexdigest()[:16]


ACK = "ok"
OPEN_VAULTS = "open-vaults "  # + a JSON list of vault specs (absolute folders, http(s) addresses)


def hand_over(name: str, message: str, timeout_ms: int = 3000) -> str | None:
    """Send one line to the running instance and wait for its answer: None when no instance runs,
    "" when one runs but does not answer (an older version that ignores the message)."""
    sock = QLocalSocket()
    sock.connectToServer(name)
    if not sock.waitForConnected(min(timeout_ms, 500)):
        return None
    sock.write(message.encode("utf-8") + b"\n")
    sock.flush()
    sock.waitForBytesWritten(timeout_ms)
    answer = b""
    while not answer.endswith(b"\n") and sock.waitForReadyRead(timeout_ms):
        answer += sock.readAll().data()
    sock.disconnectFromServer()
    return answer.decode("utf-8", "replace").strip()


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
        # Only this user may talk to us: a message can open a vault.
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
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
            message = bytes(conn.readLine().data()).decode("utf-8", "replace").strip()
            conn.write(f"{ACK}\n".encode())  # taken: the second launch can say so instead of guessing
            conn.flush()
            self.messageReceived.emit(message)

    def close(self) -> None:
        self.server.close()
