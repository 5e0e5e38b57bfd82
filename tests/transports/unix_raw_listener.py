"""``RawUnixListener``: an AF_UNIX listener that answers every request with fixed bytes,
for tests of the ``unix://`` client that need exact answers (no HTTP server in between)."""

from __future__ import annotations

import contextlib
import socket
import threading


class RawUnixListener:
    """An AF_UNIX listener answering every request head with ``answer`` on the same
    connection (``close``: then it closes); counts connections and requests."""

    def __init__(self, path: str, answer: bytes, *, close: bool = False) -> None:
        self.answer = answer
        self.close_each = close
        self.connections = 0
        self.requests = 0
        self.heads: list[bytes] = []
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(path)
        self._sock.listen(8)
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        with contextlib.suppress(OSError):
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                self.heads.append(head)
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(data) < length:
                    data += conn.recv(65536)
                data = data[length:]
                self.requests += 1
                conn.sendall(self.answer)
                if self.close_each:
                    conn.close()
                    return

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.close()
        self._thread.join(5)
