"""HTTP/1.1 responses read by hand, for the cheap paths (``fast_post`` over TCP, ``unix_client``
over ``unix://``): the response head parsed with its size, header count and line length bounded
before more is read (``_Wire``), and the body read in bounded pieces (``_Body``: Content-Length,
chunked, or to the end of the stream) as the ``raw`` of a ``requests.Response``.
"""

from __future__ import annotations

import http.client
import re
import socket
import threading
from typing import Any

from requests.structures import CaseInsensitiveDict
from urllib3.exceptions import ProtocolError

from . import slots as _http_abort

__all__ = ["Headers"]

_MAX_LINE = 65536  # as http.client: one header line, one chunk-size line
_MAX_HEADERS = 100  # as http.client
_MAX_HEAD = 256 * 1024  # the whole response head
_RECV = 65536
_GLUE = 64 * 1024  # a body up to this size goes out in the headers' write
# A header block http.client would send as is: legal names, no line breaks in values.
_HEADER_BLOCK = re.compile(r"(?:[^:\s][^:\r\n]*: [^\r\n]*\r\n)*")
_HEAD_END = re.compile(rb"\r?\n\r?\n")
# One header line whose name is a token, after the line feed ending the previous line: the
# common case, parsed without a loop over the lines.
_FIELD = re.compile(r"\n([!#$%&'*+\-.^_`|~0-9A-Za-z]+):([^\r\n]*)\r?(?=\n|\Z)")


class Headers(CaseInsensitiveDict[str]):
    """A response's headers: ``requests``' case-insensitive dict, built from the parsed
    fields as they are (its own store: ``{lowercase name: (name, value)}``), whose lookups
    of an absent name cost no exception."""

    _store: dict[str, tuple[str, str]]

    @classmethod
    def of(cls, fields: dict[str, tuple[str, str]]) -> Headers:
        headers = cls.__new__(cls)
        headers._store = fields
        return headers

    def get(self, key: str, default: Any = None) -> Any:
        item = self._store.get(key.lower())
        return default if item is None else item[1]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._store


class _Cookies:
    """The ``Set-Cookie`` values of a response, shaped for ``extract_cookies_to_jar``."""

    def __init__(self, values: list[str]) -> None:
        self.msg = self
        self._values = values

    def get_all(self, name: str, default: Any = None) -> Any:
        return list(self._values) if name.lower() == "set-cookie" else default


class _Wire:
    """A socket with a read buffer: the response head, then the body in pieces. The buffer
    is a bytearray (appending and taking from the front cost what they move, so a server
    dripping its head in byte by byte costs linear time, not quadratic)."""

    __slots__ = ("sock", "buf")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def fill(self) -> bool:
        """Read what the socket has (at least one byte); False at the end of the stream."""
        data = self.sock.recv(_RECV)
        if not data:
            return False
        self.buf += data
        return True

    def head(self) -> tuple[int, str, int, dict[str, tuple[str, str]], list[str]]:
        """Status, reason, version (10 or 11), header fields and ``Set-Cookie`` values of
        the next response. The fields are keyed by lowercase name, each ``(name, value)``;
        a repeated field's values are joined with ", " (as urllib3 does)."""
        scanned = 0  # a head dripping in byte by byte is searched once, not once a byte
        buf = self.buf
        while True:
            # "\r\n\r\n" (found without a regex when no bare line feed comes first), or
            # bare line feeds; a match may straddle the previous end
            start = max(0, scanned - 3)
            cut = buf.find(b"\r\n\r\n", start)
            if (
                cut >= 0
                and buf.find(b"\n\n", start, cut) < 0
                and buf.find(b"\n\r\n", start, cut + 2) < 0
            ):
                head_end, body_start = cut, cut + 4
                break
            end = _HEAD_END.search(buf, start)
            if end is not None:
                head_end, body_start = end.start(), end.end()
                break
            if len(self.buf) > _MAX_HEAD:
                raise http.client.LineTooLong("response head")
            scanned = len(self.buf)
            if not self.fill():
                if self.buf:
                    raise http.client.IncompleteRead(bytes(self.buf))
                raise http.client.RemoteDisconnected(
                    "Remote end closed connection without response"
                )
        text = buf[:head_end].decode("iso-8859-1")
        del buf[:body_start]
        lines = text.split("\n")
        status_line = lines[0].rstrip("\r")
        version, _, rest = status_line.partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/") or len(code) != 3 or not code.isdigit():
            raise http.client.BadStatusLine(status_line)
        if len(lines) > _MAX_HEADERS + 1:
            raise http.client.HTTPException(f"got more than {_MAX_HEADERS} headers")
        if len(text) > _MAX_LINE and any(len(line) > _MAX_LINE for line in lines):
            raise http.client.LineTooLong("header line")
        cookies: list[str] = []
        pairs = _FIELD.findall(text, len(lines[0]))
        if len(pairs) == len(lines) - 1:  # every line a plain "Name: value", none folded
            fields = {name.lower(): (name, value.strip()) for name, value in pairs}
            if len(fields) == len(pairs) and "set-cookie" not in fields:  # none repeated
                return int(code), reason.strip(), 10 if version == "HTTP/1.0" else 11, fields, []
        fields = {}
        low = ""
        for line in lines[1:]:
            if line[:1] in (" ", "\t") and low:  # an obsolete folded continuation
                name, value = fields[low]
                fields[low] = (name, f"{value} {line.strip()}")
                continue
            name, sep, value = line.partition(":")
            if not sep:
                continue
            name, value = name.strip(), value.strip()
            low = name.lower()
            old = fields.get(low)
            fields[low] = (name, value) if old is None else (old[0], f"{old[1]}, {value}")
            if low == "set-cookie":
                cookies.append(value)
        return int(code), reason.strip(), 10 if version == "HTTP/1.0" else 11, fields, cookies


class _Body:
    """The body of one response, read in bounded pieces (``read1``); the connection goes
    back to the pool once the body has been read to its end, else it is closed."""

    def __init__(
        self,
        pool: Any,
        conn: Any,
        wire: _Wire,
        status: int,
        version: int,
        fields: dict[str, tuple[str, str]],
        slot: _http_abort.Slot | None,
    ) -> None:
        self._pool = pool
        self._connection: Any = conn  # body.abort() finds the socket here
        self._wire = wire
        self._slot = slot
        self._lock = threading.Lock()
        self._done = False
        tokens = fields.get("connection", ("", ""))[1].lower()
        self._reusable = ("keep-alive" in tokens) if version == 10 else ("close" not in tokens)
        self._chunked = "chunked" in fields.get("transfer-encoding", ("", ""))[1].lower()
        self._left: int | None = None  # bytes left (None: to the end of the stream)
        self._chunk_left = 0  # bytes left in the current chunk
        self._crlf_due = False
        if status in (204, 304) or status < 200:
            self._left = 0
        elif not self._chunked:
            length = fields.get("content-length", ("", ""))[1]
            if length.isdigit():
                self._left = int(length)
            else:
                self._reusable = False  # read to the end: the connection ends with the body
        self._ended = self._left == 0

    def read1(self, amount: int = _RECV, decode_content: bool = False) -> bytes:
        """At most ``amount`` bytes, as soon as some arrived; b"" at the end of the body.

        Raises:
            ProtocolError: the body broke off or its chunking is malformed.
        """
        if self._ended:
            self._finish(reuse=True)
            return b""
        if self._done:
            raise ProtocolError("the response was closed")
        if self._chunked:
            return self._read_chunked(amount)
        return self._read_plain(amount)

    def _read_plain(self, amount: int) -> bytes:
        wire = self._wire
        left = self._left
        if not wire.buf and not wire.fill():
            if left is None:
                self._ended = True
                return self.read1(amount)
            raise ProtocolError(f"Connection broken: IncompleteRead({left} bytes more expected)")
        take = amount if left is None else min(amount, left)
        data = bytes(wire.buf[:take])
        del wire.buf[:take]
        if left is not None:
            self._left = left - len(data)
            self._ended = self._left == 0
        return data

    def _read_chunked(self, amount: int) -> bytes:
        wire = self._wire
        if self._chunk_left == 0:
            if self._crlf_due:  # the line break after the previous chunk's data
                self._crlf_due = False
                if self._line():
                    raise ProtocolError("Connection broken: no line break after a chunk")
            size = self._line()
            try:
                self._chunk_left = int(size.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ProtocolError(
                    f"Connection broken: invalid chunk length {size[:40]!r}"
                ) from None
            if self._chunk_left == 0:  # the last chunk: skip the trailers
                while self._line():
                    pass
                self._ended = True
                return self.read1(amount)
        if not wire.buf and not wire.fill():
            raise ProtocolError("Connection broken: the chunked body ended early")
        take = min(amount, self._chunk_left)
        data = bytes(wire.buf[:take])
        del wire.buf[:take]
        self._chunk_left -= len(data)
        self._crlf_due = self._chunk_left == 0
        return data

    def _line(self) -> bytes:
        wire = self._wire
        scanned = 0
        while True:
            end = wire.buf.find(b"\n", scanned)
            if end >= 0:
                line = bytes(wire.buf[:end])
                del wire.buf[: end + 1]
                return line.rstrip(b"\r")
            scanned = len(wire.buf)
            if len(wire.buf) > _MAX_LINE:
                raise ProtocolError("Connection broken: chunk-size line too long")
            if not wire.fill():
                raise ProtocolError("Connection broken: the chunked body ended early")

    def buffered(self, amount: int) -> bytes | None:
        """At most ``amount`` bytes of the body when all of them (the rest of the body, or
        ``amount``) have arrived already, without reading; else None (read on)."""
        left = self._left
        if self._chunked or left is None or self._done:
            return None
        buf = self._wire.buf
        take = min(amount, left)
        if len(buf) < take:
            return None
        data = bytes(buf[:take]) if take < len(buf) else bytes(buf)
        del buf[:take]
        self._left = left - take
        if self._left == 0:
            self._ended = True
            self._finish(reuse=True)
        return data

    def read(self, amount: int | None = None, decode_content: bool = False) -> bytes:
        parts = []
        while amount is None or amount > 0:
            data = self.read1(_RECV if amount is None else min(amount, _RECV))
            if not data:
                break
            parts.append(data)
            if amount is not None:
                amount -= len(data)
        return b"".join(parts)

    def _finish(self, reuse: bool) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            conn, self._connection = self._connection, None
        if self._slot is not None:  # a late deadline must not hit the connection's next user
            self._slot.detach(conn.sock)
        if reuse and self._reusable and not self._wire.buf:
            self._pool._put_conn(conn)
        else:
            conn.close()
            self._pool._put_conn(None)

    def close(self) -> None:
        self._finish(reuse=self._ended)

    def release_conn(self) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._done
