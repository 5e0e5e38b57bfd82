"""Pure-Python twin of the compiled kernels in ``_speedups.pyx``: same names, signatures, results
and exceptions, the reference the compiled code is tested against, and what runs when the
extension is missing or disabled; import the names from ``mcp_lite._accel``, never from here
(see docs/explanation/architecture.md, "Kernels").
"""

from __future__ import annotations

import operator
import os
import re
import select
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from mcp_lite.errors import MessageTooLarge

__all__ = [
    "Gate",
    "HeldLock",
    "LruCache",
    "NdjsonSplitter",
    "ResponseIdScanner",
    "SseEvent",
    "SseParser",
    "build_tool_name",
    "build_tool_names",
    "decode_message",
    "encode_message",
    "normalize_name",
    "normalize_names",
    "open_deferred",
    "parse_tool_name",
    "plain_shape",
    "scan_response_id",
    "write_nowait",
]

DEFAULT_MAX_SIZE = 64 * 1024 * 1024
HEAD_SIZE = 256  # bytes of an oversized message kept in MessageTooLarge.head

# --- copying ---------------------------------------------------------------------------


class _Uncopyable:
    """A kernel object is live parse state (in the compiled build: C buffers, a lock): a
    copy would share or lose it, so ``copy`` and ``pickle`` refuse, in both builds."""

    __slots__ = ()

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError(f"cannot copy or pickle a {type(self).__name__} object")

    def __reduce__(self) -> Any:
        raise TypeError(f"cannot copy or pickle a {type(self).__name__} object")


# --- names -----------------------------------------------------------------------------

_BAD_NAME_CHAR = re.compile(r"[^a-zA-Z0-9_-]")
_PREFIX = "mcp__"


def _check_str(value: object, what: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")


def normalize_name(name: str) -> str:
    """Replace every code point outside ``[a-zA-Z0-9_-]`` by ``_``.

    One ``_`` per code point, so ``"café"`` gives ``"caf_"`` and the length is kept.
    ``""`` gives ``""``.

    Raises:
        TypeError: ``name`` is not a ``str``.
    """
    _check_str(name, "name")
    return _BAD_NAME_CHAR.sub("_", name)


def normalize_names(names: Iterable[str]) -> list[str]:
    """``normalize_name`` over a batch, in order.

    Raises:
        TypeError: an item is not a ``str``.
    """
    return [normalize_name(name) for name in names]


def build_tool_name(server: str, tool: str) -> str:
    """``"mcp__" + normalize_name(server) + "__" + normalize_name(tool)``.

    Raises:
        TypeError: ``server`` or ``tool`` is not a ``str``.
    """
    return _PREFIX + normalize_name(server) + "__" + normalize_name(tool)


def build_tool_names(server: str, tools: Iterable[str]) -> list[str]:
    """``build_tool_name(server, tool)`` for every tool, in order; the server part is
    normalized once.

    Raises:
        TypeError: ``server`` or a tool is not a ``str``.
    """
    prefix = _PREFIX + normalize_name(server) + "__"
    return [prefix + normalize_name(tool) for tool in tools]


def parse_tool_name(name: str) -> tuple[str, str]:
    """Split ``"mcp__<server>__<tool>"`` into ``(server, tool)``.

    The server is the text up to the FIRST ``"__"`` after the prefix, the tool is everything
    after it (it may itself contain ``"__"``); ``"mcp__srv"`` gives ``("srv", "")``.

    A server name containing ``"__"`` is ambiguous: ``build_tool_name("a__b", "t")`` parses
    back as ``("a", "b__t")``. The same goes for server names starting or ending with ``_``
    after normalization. The Hub therefore refuses such server names.

    Raises:
        TypeError: ``name`` is not a ``str``.
        ValueError: ``name`` does not start with ``"mcp__"`` or its server part is empty.
    """
    _check_str(name, "name")
    if not name.startswith(_PREFIX):
        raise ValueError(f"not an MCP tool name (no 'mcp__' prefix): {name!r}")
    end = name.find("__", 5)
    if end < 0:
        server, tool = name[5:], ""
    else:
        server, tool = name[5:end], name[end + 2 :]
    if not server:
        raise ValueError(f"MCP tool name has an empty server part: {name!r}")
    return server, tool


# --- framing helpers -------------------------------------------------------------------


def _check_size(max_size: object, what: str = "max_size") -> int:
    size = operator.index(max_size)  # type: ignore[arg-type]
    if not 1 <= size <= sys.maxsize:
        raise ValueError(f"{what} must be between 1 and {sys.maxsize}, got {size}")
    return size


def _as_bytes(data: object) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"data must be bytes, bytearray or memoryview, not {type(data).__name__}")


def _too_large(
    max_size: int, head: bytes, scanner: ResponseIdScanner | None = None
) -> MessageTooLarge:
    if scanner is None:  # only the head was kept (SSE): not scanned
        return MessageTooLarge(f"message larger than {max_size} bytes", max_size, head[:HEAD_SIZE])
    return MessageTooLarge(
        f"message larger than {max_size} bytes",
        max_size,
        head[:HEAD_SIZE],
        scanner.response_id,
        True,
        scanner.request_id,
    )


# --- attribution -----------------------------------------------------------------------

_ID_KEY_MAX = 8  # longest top-level key we need to recognise ("method", "result", "error")
_ID_VALUE_MAX = 256  # an id longer than this (raw JSON) is not attributed
_INT_ID = re.compile(rb"-?(?:0|[1-9][0-9]{0,18})")
_IN_STRING = re.compile(rb'["\\]')
_STRUCTURAL = re.compile(rb'[\[\]{}",:]')
_WS = b" \t\r\n"


class ResponseIdScanner(_Uncopyable):
    """Find the top-level ``"id"`` of a JSON-RPC response in bytes fed in chunks, without
    decoding them and holding only a few hundred bytes (a message too large to keep, or one
    that cannot be decoded: nested too deep, invalid UTF-8, a number too long).

    Only the outermost object's own members count: an ``"id"`` inside ``params`` or
    ``result`` never does, and an object with a top-level ``"method"`` (a request or a
    notification from the peer) has no response id. Key order does not matter.

    ``response_id`` is that id (an ``int``, or a ``str``) once the object is complete, else
    ``None``; ``request_id`` is the id of a complete request from the peer. ``likely_response_id`` also answers for a prefix (only a head was kept): the
    id when ``"result"`` or ``"error"`` was seen at the top level and ``"method"`` was not.

    Not thread-safe: one reader owns a scanner.
    """

    __slots__ = (
        "_capture",
        "_depth",
        "_done",
        "_escape",
        "_expect_key",
        "_id_raw",
        "_id_string",
        "_in_string",
        "_invalid",
        "_key",
        "_keys",
        "_scalar",
        "_value_key",
    )

    def __new__(cls) -> ResponseIdScanner:
        # the state is set here, as the compiled build's __cinit__ does: valid even when a
        # subclass skips __init__
        self = super().__new__(cls)
        self._start()
        return self

    def _start(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._capture: bytearray | None = None  # the string being kept (a key or the id)
        self._key = b""  # the last top-level key read
        self._value_key = b""  # the key whose value is being read
        self._expect_key = False
        self._scalar: bytearray | None = None  # the raw text of a non-string id
        self._id_raw: bytes | None = None
        self._id_string = False
        self._keys: set[bytes] = set()  # the top-level keys that matter, once seen
        self._done = False  # the outermost object closed
        self._invalid = False  # not an object, or broken beyond reading

    @property
    def response_id(self) -> int | str | None:
        if not self._done:
            return None
        return self.likely_response_id

    @property
    def likely_response_id(self) -> int | str | None:
        if self._invalid or self._id_raw is None or b"method" in self._keys:
            return None
        if not self._done and not (self._keys & {b"result", b"error"}):
            return None
        return self._parsed_id()

    @property
    def request_id(self) -> int | str | None:
        """The id of a complete request from the peer (a top-level ``"method"`` and
        ``"id"``), so that it can be answered with an error; else None."""
        if not self._done or self._invalid or self._id_raw is None:
            return None
        return self._parsed_id() if b"method" in self._keys else None

    def _parsed_id(self) -> int | str | None:
        raw = self._id_raw
        if raw is None:
            return None
        if self._id_string:
            try:
                value = decode_message(b'"' + raw + b'"')
            except ValueError:
                return None
            return value if isinstance(value, str) else None
        raw = raw.strip(_WS)
        if _INT_ID.fullmatch(raw):
            return int(raw)
        return None

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Scan ``data``, the next bytes of the message.

        Raises:
            TypeError: ``data`` is not bytes-like.
        """
        data = _as_bytes(data)
        pos, n = 0, len(data)
        while pos < n and not self._done and not self._invalid:
            if self._in_string:
                pos = self._string(data, pos)
                continue
            match = _STRUCTURAL.search(data, pos)
            end = match.start() if match is not None else n
            if self._scalar is not None:
                self._keep(self._scalar, data[pos:end])
            elif self._depth == 0 and data[pos:end].strip(_WS):
                self._invalid = True  # the message is not a JSON object
                return
            if match is None:
                return
            self._structural(data[end])
            pos = end + 1

    def _string(self, data: bytes, pos: int) -> int:
        if self._escape:
            self._escape = False
            if self._capture is not None:
                self._keep(self._capture, data[pos : pos + 1])
            return pos + 1
        match = _IN_STRING.search(data, pos)
        end = match.start() if match is not None else len(data)
        if self._capture is not None:
            self._keep(self._capture, data[pos:end])
        if match is None:
            return end
        if data[end] == 0x5C:  # backslash: the next byte is escaped
            if self._capture is not None:
                self._keep(self._capture, b"\\")
            self._escape = True
            return end + 1
        self._in_string = False
        captured, self._capture = self._capture, None
        if captured is not None and self._depth == 1:
            if self._expect_key:
                self._key = bytes(captured) if len(captured) <= _ID_KEY_MAX else b""
            elif self._value_key == b"id":
                self._id_raw, self._id_string = bytes(captured), True
        return end + 1

    def _keep(self, buffer: bytearray, data: bytes) -> None:
        if len(buffer) <= _ID_VALUE_MAX:
            buffer += data[: _ID_VALUE_MAX + 1 - len(buffer)]

    def _structural(self, char: int) -> None:
        depth = self._depth
        if char == 0x22:  # '"'
            self._in_string = True
            if depth == 1 and (self._expect_key or self._value_key == b"id"):
                self._capture = bytearray()
            if self._scalar is not None:  # a string after a scalar start: broken
                self._scalar = None
            return
        if depth == 0:
            if char == 0x7B:  # '{'
                self._depth = 1
                self._expect_key = True
            else:
                self._invalid = True
            return
        if depth == 1:
            if char == 0x3A:  # ':' the key is complete, its value follows
                self._value_key = self._key
                if self._key in (b"method", b"result", b"error"):
                    self._keys.add(self._key)
                self._expect_key = False
                if self._key == b"id":
                    self._id_raw = None
                    self._scalar = bytearray()
                return
            self._end_scalar()
            if char == 0x2C:  # ','
                self._expect_key = True
                self._value_key = b""
            elif char in (0x7D, 0x5D):  # '}' (or a stray ']') closes the message
                self._depth = 0
                self._done = True
            else:  # '{' or '[': a container value
                self._depth = 2
            return
        if char in (0x7B, 0x5B):
            self._depth = depth + 1
        elif char in (0x7D, 0x5D):
            self._depth = depth - 1

    def _end_scalar(self) -> None:
        scalar, self._scalar = self._scalar, None
        if scalar is not None and scalar.strip(_WS):
            self._id_raw, self._id_string = bytes(scalar), False


def _scanned(data: bytes) -> ResponseIdScanner:
    scanner = ResponseIdScanner()
    scanner.feed(data)
    return scanner


def scan_response_id(data: bytes) -> int | str | None:
    """``ResponseIdScanner`` over one whole message: its top-level response id, or None."""
    return _scanned(data).response_id


# --- NDJSON ----------------------------------------------------------------------------


class Gate(_Uncopyable):
    """A one-shot event for one waiting thread: closed at birth, ``open()`` once;
    ``wait(timeout)`` (< 0: no limit) returns True once open, and it stays open.

    The compiled twin can defer an ``open()`` made while a reader routes a batch, so that
    the woken thread finds the GIL free; this build opens at once (the same outcome,
    without that saving)."""

    __slots__ = ("_lock", "_opened")

    def __new__(cls) -> Gate:
        self = super().__new__(cls)  # set up here, as the compiled __cinit__ does
        self._start()
        return self

    def _start(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._opened = False

    def is_open(self) -> bool:
        return self._opened

    def open(self) -> None:
        if not self._opened:
            self._opened = True
            self._lock.release()

    def wait(self, timeout: float) -> bool:
        # negative, NaN, or past what a lock can time (inf): no limit
        forever = not 0 <= timeout <= threading.TIMEOUT_MAX
        if self._lock.acquire(True, -1 if forever else timeout):
            self._lock.release()
            return True
        return self._opened


def open_deferred() -> None:
    """Open every gate whose wake-up is queued: none in this build (see ``Gate``)."""


class HeldLock(_Uncopyable):
    """``with HeldLock(lock, timeout) as got:`` — take ``lock`` (waiting up to ``timeout``
    seconds; a negative timeout does not wait), run the block, release it if it was taken.

    The compiled twin does both in C, so no interrupt can leave the lock held; here both are
    Python methods, and a Ctrl-C landing exactly as one starts could (best effort only).
    """

    __slots__ = ("_got", "_lock", "_timeout")

    def __init__(self, lock: Any, timeout: float) -> None:
        self._lock = lock
        self._timeout = float(timeout)
        self._got = False

    def __enter__(self) -> bool:
        if self._timeout < 0:
            self._got = bool(self._lock.acquire(False))
        elif self._timeout > threading.TIMEOUT_MAX:  # inf, or more than a lock can time
            self._got = bool(self._lock.acquire(True))
        else:
            self._got = bool(self._lock.acquire(True, self._timeout))
        return self._got

    def __exit__(self, *exc: object) -> None:
        if self._got:
            self._got = False
            self._lock.release()


READ_CHUNK = 64 * 1024  # one read_into; under the allocator's mmap threshold


def write_nowait(fd: int, data: bytes | bytearray | memoryview) -> int:
    """Write what fits of ``data`` to the non-blocking ``fd`` now: the number of bytes
    written, or -1 when it has no room (nothing written). Other ``OSError``s propagate
    (``BrokenPipeError`` when the reader is gone).

    ``fd`` must be in non-blocking mode: the compiled kernel keeps the GIL around the write
    (such a write never waits) and does not check; here ``os.write`` lets go of the GIL, as
    Python always does (on Windows, where pipes block, the stdio transport uses this one)."""
    try:
        return os.write(fd, data)
    except (BlockingIOError, InterruptedError):
        return -1


def _wait_ms(timeout: float) -> int:
    """A read's wait in whole milliseconds, as the kernel computes it: none for ``<= 0`` and
    NaN, rounded up, and at most about 23 days (``inf`` waits that long: no ``OverflowError``
    from ``select``)."""
    if not timeout > 0:
        return 0
    return int(timeout * 1000.0) + 1 if timeout < 2_000_000.0 else 2_000_000_000


class NdjsonSplitter(_Uncopyable):
    """Split a byte stream into newline-delimited messages (the stdio transport's framing).

    ``feed(chunk)`` returns every message completed by ``chunk``, in arrival order: the line
    without its ``b"\\n"`` and without one trailing ``b"\\r"``. Blank and whitespace-only
    lines are skipped. A message whose content is larger than ``max_size`` bytes gives one
    ``MessageTooLarge`` item at its position instead, when its line ends (``head`` = its
    first 256 bytes, ``response_id`` = its top-level response id, see
    ``ResponseIdScanner``), and the splitter goes on with the next line. The partial line
    is never buffered beyond ``max_size + 1`` bytes: once it is certain to be too large it
    is dropped as it arrives, only scanned for its id, up to the next ``b"\\n"``. (A
    too-large line is reported even if it turns out to be all whitespace.)

    ``flush()`` at EOF returns the final unterminated line, if not blank (or its
    ``MessageTooLarge``), and resets.

    ``read_into(fd, timeout)`` waits up to ``timeout`` seconds for ``fd`` to be readable,
    reads once and keeps the completed messages in the splitter; ``pop_frame()`` hands them
    out one at a time. In the compiled kernel that whole step is one C call that never runs
    Python code, so an interrupt (Ctrl-C) cannot fall between the read and the split and
    leave half a message behind. Here, in pure Python, it can: the stdio transport therefore
    reads only on its own reader thread with this twin (see ``StdioTransport.lead``).

    Not thread-safe: one thread at a time owns a splitter.
    """

    __slots__ = (
        "_head",
        "_max_size",
        "_pending",
        "_polled",
        "_poller",
        "_ready",
        "_scanner",
        "_taken",
        "_woke",
    )

    def __new__(cls, *args: object, **kwargs: object) -> NdjsonSplitter:
        # set up here, as the compiled __cinit__ does: valid even when __init__ is skipped
        self = super().__new__(cls)
        self._reset(DEFAULT_MAX_SIZE)
        return self

    def __init__(self, max_size: int = DEFAULT_MAX_SIZE) -> None:
        self._reset(_check_size(max_size))

    def _reset(self, max_size: int) -> None:
        self._max_size = max_size
        self._pending = bytearray()  # the partial line: never contains b"\n"
        self._scanner: ResponseIdScanner | None = None  # dropping an oversized line
        self._head = b""  # the first bytes of that line
        self._ready: list[bytes | MessageTooLarge] = []  # read_into's messages not yet popped
        self._taken = 0  # how many of _ready pop_frame has handed out
        self._woke = 0  # read_watching's watched fds that were ready
        self._polled: tuple[int, ...] = ()  # the fds _poller was made for
        self._poller: Any = None

    def read_into(self, fd: int, timeout: float) -> int:
        """Wait up to ``timeout`` s (``<= 0``: not at all) for ``fd``, read once (at most
        64 KiB) and keep what completes. Returns how many messages are ready to pop, or -1
        at end of stream (the last unterminated line, if any, is then ready too). A read
        that would block or was interrupted reads nothing. Other ``OSError``s propagate."""
        wait = _wait_ms(timeout)
        if wait:
            readable: bool
            try:
                if hasattr(select, "poll"):  # as the kernel: any fd number (select: < 1024)
                    poller = select.poll()
                    poller.register(fd, select.POLLIN)
                    readable = bool(poller.poll(wait))
                else:  # pragma: no cover - Windows (the transport does not read this way there)
                    readable = bool(select.select([fd], [], [], wait / 1000.0)[0])
            except InterruptedError:  # pragma: no cover - PEP 475 retries it
                readable = False
            if not readable:
                return len(self._ready) - self._taken
        try:
            chunk = os.read(fd, READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return len(self._ready) - self._taken
        if not chunk:
            self._ready.extend(self.flush())
            return -1
        self._ready.extend(self.feed(chunk))
        return len(self._ready) - self._taken

    def lead(
        self,
        fd: int,
        stop: Callable[[], object],
        deadline: float,
        on_message: Callable[[bytes | MessageTooLarge], object],
        owner: object,
        cap: float = 0.5,
    ) -> int:
        """The stdio leader's loop: ``read_into`` (each wait capped at ``cap`` s, so a moved
        deadline, a close and whatever else ``stop()`` watches are noticed) and ``route``
        to ``on_message`` until ``stop()`` is true, ``owner._reader_wanted`` or
        ``owner._closing`` is set, or ``time.monotonic()`` reaches ``deadline``
        (``time.monotonic()`` seconds). Returns -1 at end of stream (what was read is
        routed first), else 0. An ``OSError`` from a read, and what ``on_message`` raises,
        propagate."""
        while not (stop() or owner._reader_wanted):  # type: ignore[attr-defined]
            remaining = deadline - time.monotonic()
            if remaining <= 0 or owner._closing:  # type: ignore[attr-defined]
                return 0
            count = self.read_into(fd, remaining if remaining < cap else cap)
            self.route(on_message)
            if count < 0:
                return -1
        return 0

    def read_watching(self, fd: int, timeout: float, a: int, b: int, c: int) -> int:
        """``read_into`` that also wakes for the watched fds ``a``, ``b``, ``c`` (-1: none;
        ``fd`` -1: watch only): one wait for all, up to ``timeout`` s; ``fd`` is read (once)
        only when it is ready. Afterwards ``woke`` has bit 1, 2, 4 set for ``a``, ``b``,
        ``c`` ready (readable, at end of stream or in error). Returns as ``read_into``."""
        key = (fd, a, b, c)
        if self._polled != key:  # the set rarely changes: keep the poll object
            self._poller = select.poll()
            for watched in key:
                if watched >= 0:
                    self._poller.register(watched, select.POLLIN)
            self._polled = key
        try:
            events = self._poller.poll(_wait_ms(timeout))
        except InterruptedError:  # pragma: no cover - PEP 475 retries it
            events = []
        woke = 0
        ready = False
        for got, _ in events:
            if got == fd:
                ready = True
            elif got == a:
                woke |= 1
            elif got == b:
                woke |= 2
            elif got == c:
                woke |= 4
        self._woke = woke
        if not ready:
            return len(self._ready) - self._taken
        return self.read_into(fd, 0.0)

    @property
    def woke(self) -> int:
        """Bits 1, 2, 4: the watched fds a, b, c of the last ``read_watching`` were ready."""
        return self._woke

    def pop_frame(self) -> bytes | MessageTooLarge | None:
        """The next message ``read_into`` completed, or None when there is none."""
        ready = self._ready
        if self._taken >= len(ready):
            return None
        frame = ready[self._taken]
        self._taken += 1
        if self._taken == len(ready):
            ready.clear()
            self._taken = 0
        return frame

    def route(
        self, on_message: Callable[[bytes | MessageTooLarge], object], defer_wakes: bool = False
    ) -> bool:
        """Hand every message ``read_into`` completed to ``on_message``, in order; True if
        there was one. Each is taken before its call, so an exception out of
        ``on_message`` leaves the ones after it for the next ``route``. ``defer_wakes``
        changes nothing here: this build opens every ``Gate`` at once."""
        frame = self.pop_frame()
        routed = frame is not None
        while frame is not None:
            on_message(frame)
            frame = self.pop_frame()
        return routed

    @property
    def max_size(self) -> int:
        """The size limit in bytes."""
        return self._max_size

    @property
    def buffered(self) -> int:
        """Bytes held for a partial line."""
        return len(self._pending)

    def feed(self, data: bytes) -> list[bytes | MessageTooLarge]:
        """Add ``data``; return the messages (and ``MessageTooLarge`` items) it completes.

        ``b""`` returns ``[]``.

        Raises:
            TypeError: ``data`` is not bytes-like.
        """
        data = _as_bytes(data)
        out: list[bytes | MessageTooLarge] = []
        max_size = self._max_size
        scanner = self._scanner
        if scanner is not None:
            end = data.find(b"\n")
            if end < 0:
                scanner.feed(data)
                return out
            scanner.feed(data[:end])
            out.append(_too_large(max_size, self._head, scanner))
            self._scanner, self._head = None, b""
            data = data[end + 1 :]
        parts = data.split(b"\n")
        tail = parts.pop()  # after the last b"\n": the new partial line
        pending = self._pending
        if parts and pending:
            pending += parts[0]
            parts[0] = bytes(pending)
            pending.clear()
        for line in parts:
            if line[-1:] == b"\r":
                line = line[:-1]
            if len(line) > max_size:
                out.append(_too_large(max_size, line, _scanned(line)))
            elif line and not line.isspace():
                out.append(line)
        if tail:
            size = len(pending) + len(tail)
            if size > max_size + 1 or (size == max_size + 1 and tail[-1:] != b"\r"):
                scanner = ResponseIdScanner()
                scanner.feed(pending)
                scanner.feed(tail)
                self._head = (bytes(pending[:HEAD_SIZE]) + tail[:HEAD_SIZE])[:HEAD_SIZE]
                self._scanner = scanner
                pending.clear()
            else:
                pending += tail
        return out

    def flush(self) -> list[bytes | MessageTooLarge]:
        """End of stream: return ``[line]`` for a final non-blank line without ``b"\\n"``
        (``[MessageTooLarge]`` if it was too large), or ``[]``; the splitter is reset and
        can be reused."""
        scanner, head = self._scanner, self._head
        self._scanner, self._head = None, b""
        if scanner is not None:
            return [_too_large(self._max_size, head, scanner)]
        line = bytes(self._pending)
        self._pending.clear()
        if line[-1:] == b"\r":
            line = line[:-1]
        if line and not line.isspace():
            return [line]
        return []


# --- SSE -------------------------------------------------------------------------------


class SseEvent:
    """One dispatched server-sent event. Immutable; equal when all three fields are equal.

    Attributes:
        event: the event type, ``"message"`` when the stream gave none.
        data: the data lines joined with ``"\\n"``.
        id: the parser's last event ID when the event was dispatched (``""`` if none).
    """

    __slots__ = ("_data", "_event", "_id")

    def __init__(self, event: str = "message", data: str = "", id: str = "") -> None:
        self._event = event
        self._data = data
        self._id = id

    @property
    def event(self) -> str:
        return self._event

    @property
    def data(self) -> str:
        return self._data

    @property
    def id(self) -> str:
        return self._id

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, SseEvent)
        return self._event == other._event and self._data == other._data and self._id == other._id

    def __hash__(self) -> int:
        return hash((self._event, self._data, self._id))

    def __repr__(self) -> str:
        return f"SseEvent(event={self._event!r}, data={self._data!r}, id={self._id!r})"


_BOM = b"\xef\xbb\xbf"
_DIGITS = frozenset(b"0123456789")
# A line longer than this while it is still arriving is certain to make the event too
# large ("data: " is the longest prefix in front of a data value); this bounds the buffer.
_LINE_SLACK = 6
_RETRY_DIGITS = 18  # a longer retry value (leading zeros aside) is ignored, not an error


class SseParser(_Uncopyable):
    """Parse a ``text/event-stream`` body as the WHATWG HTML standard says, chunk by chunk.

    ``feed(chunk)`` returns the events dispatched by ``chunk`` in order. Handled: one UTF-8
    BOM at the very start, CR / LF / CRLF line ends (also a CR and LF split across chunks),
    comments (``:``), ``field: value`` with one leading space stripped, a line without a colon
    as a field with an empty value, ``event``, ``data`` (joined with ``"\\n"``), ``id``
    (ignored when it contains NUL), ``retry`` (ASCII digits only), unknown fields ignored.
    Invalid UTF-8 decodes to U+FFFD.

    A blank line dispatches the event. As the standard says, ``last_event_id`` takes the
    value of the last ``id`` field at that blank line, even when the event has no data and
    nothing is dispatched; an event cut off by the end of the stream does not update it
    (so a reconnection resumes before it). ``retry`` is set as soon as its line is complete.

    Size limit: when an event's data (the lines joined) grows past ``max_size`` bytes, or an
    ``event`` or ``id`` line is longer than ``max_size + 6`` bytes, the rest of the event is
    dropped as it arrives (later ``id`` and ``retry`` fields still count) and, at its blank
    line, one ``MessageTooLarge`` item takes the event's place (``head``: the first 256 bytes
    of its data, or of that line; ``response_id``: the data's top-level response id, scanned
    as the data was dropped, see ``ResponseIdScanner``). An event cut off by the end of the
    stream is not reported. Other over-long lines (comments, unknown fields, ``retry``) are
    ignored. A line is never buffered past ``max_size + 6`` bytes: as soon as the partial
    line is that long it is handled as above and the rest of it is skipped (only scanned).

    Not thread-safe: one reader thread owns a parser.

    Attributes:
        last_event_id: the ID to send as ``Last-Event-ID`` on reconnection (``""`` at first).
        retry: the reconnection time in ms the server asked for, or ``None``.
    """

    __slots__ = (
        "_bom_pending",
        "_data",
        "_drop_head",
        "_dropping",
        "_event",
        "_id_buffer",
        "_line",
        "_max_size",
        "_scanner",
        "_skip_data",
        "_skip_line",
        "_skip_lf",
        "last_event_id",
        "retry",
    )

    def __new__(cls, *args: object, **kwargs: object) -> SseParser:
        # set up here, as the compiled __cinit__ does: valid even when __init__ is skipped
        self = super().__new__(cls)
        self._reset(DEFAULT_MAX_SIZE)
        return self

    def __init__(self, max_size: int = DEFAULT_MAX_SIZE) -> None:
        self._reset(_check_size(max_size))

    def _reset(self, max_size: int) -> None:
        self._max_size = max_size
        self.last_event_id = ""
        self.retry: int | None = None
        self._bom_pending: bytes | None = b""  # None once the stream start is past
        self._line = bytearray()  # the partial line: no CR or LF in it
        self._skip_lf = False  # the last line ended in CR: a LF right after is part of it
        self._skip_line = False  # dropping the rest of an oversized line
        self._data = bytearray()  # data lines, each followed by b"\n"
        self._event = b""
        self._id_buffer = ""
        self._dropping = False  # the current event is too large
        self._scanner: ResponseIdScanner | None = None  # its data, scanned as it is dropped
        self._drop_head = b""
        self._skip_data = False  # the line being skipped is a data line: scan it

    @property
    def max_size(self) -> int:
        """The size limit in bytes for one event's data."""
        return self._max_size

    @property
    def buffered(self) -> int:
        """Bytes held for the current partial line and event data."""
        return len(self._line) + len(self._data) + len(self._bom_pending or b"")

    def feed(self, data: bytes) -> list[SseEvent | MessageTooLarge]:
        """Add ``data``; return the events (and ``MessageTooLarge`` items) it dispatches.

        Raises:
            TypeError: ``data`` is not bytes-like.
        """
        data = _as_bytes(data)
        out: list[SseEvent | MessageTooLarge] = []
        if self._bom_pending is not None:
            data = self._bom_pending + data
            if len(data) < 3 and _BOM.startswith(data):
                self._bom_pending = data
                return out
            self._bom_pending = None
            if data.startswith(_BOM):
                data = data[3:]
        if not data:
            return out
        if self._skip_lf:
            self._skip_lf = False
            if data[:1] == b"\n":
                data = data[1:]
        if b"\n" not in data and b"\r" not in data:
            self._add_partial(data, out)
            return out
        lines = data.splitlines(True)
        last = lines[-1]
        tail = b"" if last[-1:] in (b"\n", b"\r") else lines.pop()
        self._skip_lf = last[-1:] == b"\r"
        if self._skip_line:
            # the first line is the end of an oversized line that is being dropped
            self._skip_line = False
            if self._skip_data and self._scanner is not None:
                self._scanner.feed(lines[0].rstrip(b"\r\n"))
                self._scanner.feed(b"\n")
            self._skip_data = False
            del lines[0]
        elif self._line:
            self._line += lines[0]
            lines[0] = bytes(self._line)
            self._line.clear()
        for line in lines:
            self._process(line.rstrip(b"\r\n"), out)
        if tail:
            self._add_partial(tail, out)
        return out

    def _add_partial(self, chunk: bytes, out: list[SseEvent | MessageTooLarge]) -> None:
        if self._skip_line:
            if self._skip_data and self._scanner is not None:
                self._scanner.feed(chunk)
            return
        line = self._line
        if len(line) + len(chunk) <= self._max_size + _LINE_SLACK:
            line += chunk
            return
        # Certain to be too long: drop it (see _process), scanning the rest of a data line.
        whole = bytes(line) + chunk
        line.clear()
        self._skip_line = True
        if whole.startswith(b"data:"):
            value = whole[6:] if whole[5:6] == b" " else whole[5:]
            if not self._dropping:
                self._drop(bytes(self._data[:HEAD_SIZE]) + value[:HEAD_SIZE])
            if self._scanner is not None:
                self._scanner.feed(value)
                self._skip_data = True
        elif whole.startswith((b"event:", b"id:")) and not self._dropping:
            self._drop(whole[: HEAD_SIZE + _LINE_SLACK])

    def _drop(self, head: bytes) -> None:
        """The event is too large: from now on its data is only scanned for its id."""
        self._dropping = True
        scanner = ResponseIdScanner()
        scanner.feed(self._data)
        self._scanner = scanner
        self._drop_head = head[:HEAD_SIZE]
        self._data.clear()

    def _process(self, line: bytes, out: list[SseEvent | MessageTooLarge]) -> None:
        if not line:
            self._dispatch(out)
            return
        colon = line.find(b":")
        if colon == 0:
            return
        if colon < 0:
            field, value = line, b""
        else:
            field = line[:colon]
            value = line[colon + 2 :] if line[colon + 1 : colon + 2] == b" " else line[colon + 1 :]
        if field == b"data":
            data = self._data
            if not self._dropping and len(data) + len(value) > self._max_size:
                self._drop(bytes(data[:HEAD_SIZE]) + value[:HEAD_SIZE])
            if self._dropping:
                if self._scanner is not None:
                    self._scanner.feed(value)
                    self._scanner.feed(b"\n")
                return
            data += value
            data += b"\n"
        elif len(line) > self._max_size + _LINE_SLACK:
            # an over-long line of another field: an event or id makes the event too large,
            # anything else (retry, unknown fields) is ignored
            if colon > 0 and field in (b"event", b"id") and not self._dropping:
                self._drop(line)
        elif field == b"event":
            self._event = value
        elif field == b"id":
            if b"\x00" not in value:
                self._id_buffer = value.decode("utf-8", "replace")
        elif field == b"retry" and value and _DIGITS.issuperset(value):
            value = value.lstrip(b"0") or b"0"
            if len(value) <= _RETRY_DIGITS:  # a longer one is unusable: ignored
                self.retry = int(value)

    def _dispatch(self, out: list[SseEvent | MessageTooLarge]) -> None:
        self.last_event_id = self._id_buffer
        data = self._data
        if self._dropping:
            out.append(_too_large(self._max_size, self._drop_head, self._scanner))
            self._scanner, self._drop_head = None, b""
        elif data:
            out.append(
                SseEvent(
                    self._event.decode("utf-8", "replace") or "message",
                    data[:-1].decode("utf-8", "replace"),
                    self._id_buffer,
                )
            )
        data.clear()
        self._event = b""
        self._dropping = False


# --- JSON ------------------------------------------------------------------------------

# pydantic_core costs ~35 ms to import: load it on the first message, not with mcp_lite.
_to_json: Callable[..., bytes] | None = None
_from_json: Callable[..., Any] | None = None


def _load_json() -> tuple[Callable[..., bytes], Callable[..., Any]]:
    global _to_json, _from_json
    from pydantic_core import from_json, to_json

    _to_json, _from_json = to_json, from_json
    return to_json, from_json


def encode_message(obj: Any) -> bytes:
    """Serialize one JSON-RPC message: compact JSON, UTF-8 (non-ASCII kept), then ``b"\\n"``.

    JSON escapes control characters, so the only raw newline is the final one. NaN and
    infinities become ``null`` (as in pydantic's JSON output), keeping the result valid JSON.

    Raises:
        ValueError: ``obj`` holds something JSON cannot represent
            (``pydantic_core.PydanticSerializationError``).
    """
    to_json = _to_json if _to_json is not None else _load_json()[0]
    return to_json(obj, inf_nan_mode="null") + b"\n"


def decode_message(data: bytes | bytearray | str) -> Any:
    """Parse one JSON message.

    Raises:
        ValueError: ``data`` is not valid JSON (empty, truncated, bad UTF-8...).
    """
    from_json = _from_json if _from_json is not None else _load_json()[1]
    return from_json(data)


# --- shapes ----------------------------------------------------------------------------

_UNKNOWN = object()


def plain_shape(raw: Any, checks: dict[str, Any], names: frozenset[str]) -> bool:
    """True when ``raw`` is a dict whose known keys hold values of the exact expected types
    and which uses none of ``names`` (a field's Python name). Unknown keys are fine.

    This is how ``protocol.results`` decides that a server's dict can be used as it is,
    without pydantic. ``checks`` maps a wire key to its check:

    - ``None``: any value;
    - a ``frozenset`` of types: the value's exact type is one of them (no subclasses);
    - a tuple ``(item_checks, item_names, required)``: a list of dicts, each plain by
      ``item_checks`` and ``item_names`` and holding the key ``required``;
    - anything else: a function of the value, true when it is plain.
    """
    if type(raw) is not dict:
        return False
    for key, value in raw.items():
        check = checks.get(key, _UNKNOWN)
        if check is _UNKNOWN:
            if key in names:
                return False
        elif check is None:
            continue
        elif type(check) is frozenset:
            if type(value) not in check:
                return False
        elif type(check) is tuple:
            if type(value) is not list:
                return False
            if len(check) != 3:
                raise ValueError(
                    "a list check is (item_checks, item_names, required), "
                    f"not a tuple of {len(check)}"
                )
            item_checks, item_names, required = check
            for item in value:
                if not (plain_shape(item, item_checks, item_names) and required in item):
                    return False
        elif not check(value):
            return False
    return True


# --- LRU cache -------------------------------------------------------------------------


class LruCache(_Uncopyable):
    """A bounded mapping that evicts the least recently used key, safe to share across threads.

    Every operation holds one ``threading.Lock`` (no reliance on the GIL, so it stays correct
    on free-threaded Python). ``get`` and ``put`` count as use; ``__contains__``, ``keys`` and
    ``len`` do not. ``maxsize=0`` keeps nothing. Keys' ``__hash__``/``__eq__`` and the
    ``delete_where`` predicate run with the lock held: they must not use the same cache.
    """

    __slots__ = ("_data", "_lock", "_maxsize")

    def __new__(cls, *args: object, **kwargs: object) -> LruCache:
        # set up here, as the compiled __cinit__ does: valid even when __init__ is skipped
        self = super().__new__(cls)
        self._start()
        return self

    def _start(self) -> None:
        self._maxsize = 100
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __init__(self, maxsize: int = 100) -> None:
        size = operator.index(maxsize)
        if not 0 <= size <= sys.maxsize:
            raise ValueError(f"maxsize must be between 0 and {sys.maxsize}, got {size}")
        with self._lock:
            self._maxsize = size
            self._data = OrderedDict()

    @property
    def maxsize(self) -> int:
        return self._maxsize

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value for ``key`` (marking it most recently used), else ``default``."""
        with self._lock:
            try:
                value = self._data[key]
            except KeyError:
                return default
            self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value`` as the most recently used; evict the oldest past ``maxsize``."""
        with self._lock:
            data = self._data
            data[key] = value
            data.move_to_end(key)
            if len(data) > self._maxsize:
                data.popitem(last=False)

    def delete(self, key: Hashable) -> bool:
        """Remove ``key``; ``True`` if it was there."""
        with self._lock:
            try:
                del self._data[key]
            except KeyError:
                return False
            return True

    def delete_where(self, predicate: Callable[[Any], object]) -> int:
        """Remove every key for which ``predicate(key)`` is true; return how many.

        If ``predicate`` raises, nothing is removed and the exception propagates.
        """
        with self._lock:
            doomed = [key for key in self._data if predicate(key)]
            for key in doomed:
                del self._data[key]
            return len(doomed)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def keys(self) -> list[Any]:
        """The keys, least recently used first."""
        with self._lock:
            return list(self._data)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def __repr__(self) -> str:
        return f"LruCache(maxsize={self._maxsize}, size={len(self)})"
