# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled kernels of mcp_lite (Cython). The pure-Python twin is ``_speedups_py.py``.

Same names, signatures, results and exceptions as the twin; ``mcp_lite._accel`` picks one.
The compiled code owns whole loops: names are read with the ``str`` kind-based accessors and
written into a fresh ASCII string; the framers scan the caller's buffer with ``memchr`` and
never re-scan bytes they have seen; the LRU cache is a dict plus a linked list guarded by a
PyThread lock (no reliance on the GIL).
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New
from cpython.pythread cimport (
    NOWAIT_LOCK,
    WAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
    PyThread_tss_create,
    PyThread_tss_get,
    PyThread_tss_set,
    PyLockStatus,
    PY_LOCK_ACQUIRED,
    PY_LOCK_INTR,
)
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdlib cimport free, realloc
from libc.string cimport memchr, memcmp, memcpy

import operator
import os
import re
import sys
from threading import TIMEOUT_MAX as _TIMEOUT_MAX
from time import monotonic as _time_monotonic


from mcp_lite.errors import MessageTooLarge

cdef extern from "pythread.h":
    PyLockStatus PyThread_acquire_lock_timed(PyThread_type_lock, long long microseconds,
                                             int intr_flag) nogil

cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1
    object _Py_NewAscii "PyUnicode_New"(Py_ssize_t size, Py_UCS4 maxchar)
    void* _Py_UDATA "PyUnicode_DATA"(object o)
    int _Py_UKIND "PyUnicode_KIND"(object o)
    Py_UCS4 _Py_UREAD "PyUnicode_READ"(int kind, void* data, Py_ssize_t index)
    Py_ssize_t _Py_ULEN "PyUnicode_GET_LENGTH"(object o)

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
HEAD_SIZE = 256
cdef Py_ssize_t _HEAD = 256

# --- copying ---------------------------------------------------------------------------


cdef object _refuse_copy(object obj):
    # A kernel object is live parse state (C buffers, a lock, a stream position): a copy
    # would share or lose it, so copy and pickle refuse, in both builds.
    raise TypeError(f"cannot copy or pickle a {type(obj).__name__} object")


# --- names -----------------------------------------------------------------------------

cdef unsigned char _NAME_OK[128]
cdef int _c
for _c in range(128):
    _NAME_OK[_c] = (
        (ord("a") <= _c <= ord("z")) or (ord("A") <= _c <= ord("Z"))
        or (ord("0") <= _c <= ord("9")) or _c == ord("_") or _c == ord("-")
    )


cdef inline bint _ok(Py_UCS4 c) noexcept:
    return c < 128 and _NAME_OK[c]


cdef inline str _check_str(object value, str what):
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return <str>value


cdef Py_ssize_t _first_bad(str s) noexcept:
    """Index of the first code point to replace, or len(s)."""
    cdef Py_ssize_t i, n = _Py_ULEN(s)
    cdef int kind = _Py_UKIND(s)
    cdef void* data = _Py_UDATA(s)
    cdef const unsigned char* p1
    if kind == 1:
        p1 = <const unsigned char*>data
        for i in range(n):
            if p1[i] >= 128 or not _NAME_OK[p1[i]]:
                return i
        return n
    for i in range(n):
        if not _ok(_Py_UREAD(kind, data, i)):
            return i
    return n


cdef void _write_normalized(str s, unsigned char* out) noexcept:
    """Write normalize_name(s) (always ASCII, same length) into ``out``."""
    cdef Py_ssize_t i, n = _Py_ULEN(s)
    cdef int kind = _Py_UKIND(s)
    cdef void* data = _Py_UDATA(s)
    cdef const unsigned char* p1
    cdef unsigned char c1
    cdef Py_UCS4 c
    if kind == 1:
        p1 = <const unsigned char*>data
        for i in range(n):
            c1 = p1[i]
            out[i] = c1 if (c1 < 128 and _NAME_OK[c1]) else 95  # "_"
        return
    for i in range(n):
        c = _Py_UREAD(kind, data, i)
        out[i] = <unsigned char>c if _ok(c) else 95


cdef str _normalize(str s):
    cdef Py_ssize_t n = _Py_ULEN(s)
    if type(s) is str and _first_bad(s) == n:
        return s
    cdef str result = _Py_NewAscii(n, 127)
    _write_normalized(s, <unsigned char*>_Py_UDATA(result))
    return result


cdef str _join_normalized(str prefix, str tool):
    """prefix (ASCII) + normalize_name(tool), built in one allocation."""
    cdef Py_ssize_t plen = _Py_ULEN(prefix)
    cdef Py_ssize_t n = _Py_ULEN(tool)
    cdef str result = _Py_NewAscii(plen + n, 127)
    cdef unsigned char* out = <unsigned char*>_Py_UDATA(result)
    memcpy(out, _Py_UDATA(prefix), plen)
    _write_normalized(tool, out + plen)
    return result


def normalize_name(name):
    """Replace every code point outside ``[a-zA-Z0-9_-]`` by ``_`` (one per code point).

    Raises:
        TypeError: ``name`` is not a ``str``.
    """
    return _normalize(_check_str(name, "name"))


def normalize_names(names):
    """``normalize_name`` over a batch, in order.

    Raises:
        TypeError: an item is not a ``str``.
    """
    cdef list out = []
    for name in names:
        out.append(_normalize(_check_str(name, "name")))
    return out


def build_tool_name(server, tool):
    """``"mcp__" + normalize_name(server) + "__" + normalize_name(tool)``.

    Raises:
        TypeError: ``server`` or ``tool`` is not a ``str``.
    """
    cdef str prefix = "mcp__" + _normalize(_check_str(server, "name")) + "__"
    return _join_normalized(prefix, _check_str(tool, "name"))


def build_tool_names(server, tools):
    """``build_tool_name(server, tool)`` for every tool, in order.

    Raises:
        TypeError: ``server`` or a tool is not a ``str``.
    """
    cdef str prefix = "mcp__" + _normalize(_check_str(server, "name")) + "__"
    cdef list out = []
    for tool in tools:
        out.append(_join_normalized(prefix, _check_str(tool, "name")))
    return out


def parse_tool_name(name):
    """Split ``"mcp__<server>__<tool>"`` into ``(server, tool)``.

    The server is the text up to the FIRST ``"__"`` after the prefix, the tool is everything
    after it (it may contain ``"__"``); ``"mcp__srv"`` gives ``("srv", "")``. A server name
    containing ``"__"`` (or starting/ending with ``_``) is ambiguous, so the Hub refuses it.

    Raises:
        TypeError: ``name`` is not a ``str``.
        ValueError: no ``"mcp__"`` prefix, or an empty server part.
    """
    cdef str s = _check_str(name, "name")
    if not s.startswith("mcp__"):
        raise ValueError(f"not an MCP tool name (no 'mcp__' prefix): {s!r}")
    cdef Py_ssize_t end = s.find("__", 5)
    if end < 0:
        server, tool = s[5:], ""
    else:
        server, tool = s[5:end], s[end + 2:]
    if not server:
        raise ValueError(f"MCP tool name has an empty server part: {s!r}")
    return server, tool


# --- framing helpers -------------------------------------------------------------------


cdef Py_ssize_t _check_size(object max_size, str what="max_size") except -1:
    size = operator.index(max_size)
    if not 1 <= size <= sys.maxsize:
        raise ValueError(f"{what} must be between 1 and {sys.maxsize}, got {size}")
    return size


cdef bytes _as_bytes(object data):
    if type(data) is bytes:
        return <bytes>data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"data must be bytes, bytearray or memoryview, not {type(data).__name__}")


cdef object _too_large(Py_ssize_t max_size, const char* head, Py_ssize_t n):
    if n > _HEAD:
        n = _HEAD
    return MessageTooLarge(
        f"message larger than {max_size} bytes", max_size, PyBytes_FromStringAndSize(head, n)
    )


cdef inline bint _is_space(unsigned char c) noexcept:
    # bytes.isspace(): space, \t, \n, \v, \f, \r
    return c == 32 or 9 <= c <= 13


cdef inline bint _is_json_space(unsigned char c) noexcept:
    # JSON's whitespace: space, \t, \n, \r (not \v or \f)
    return c == 32 or c == 9 or c == 10 or c == 13


cdef inline bint _blank(const char* s, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        if not _is_space(<unsigned char>s[i]):
            return False
    return True


cdef object _too_large_scanned(Py_ssize_t max_size, bytes head, ResponseIdScanner scanner):
    return MessageTooLarge(
        f"message larger than {max_size} bytes",
        max_size,
        head[:_HEAD],
        scanner.response_id,
        True,
        scanner.request_id,
    )


# --- attribution -----------------------------------------------------------------------

cdef Py_ssize_t _ID_KEY_MAX = 8
cdef Py_ssize_t _ID_VALUE_MAX = 256
_INT_ID = re.compile(rb"-?(?:0|[1-9][0-9]{0,18})")
_WS = b" \t\r\n"
cdef int _KEY_METHOD = 1, _KEY_RESULT = 2, _KEY_ERROR = 4


cdef int _keep(bytearray buf, const char* s, Py_ssize_t n) except -1:
    cdef Py_ssize_t have = len(buf)
    if have <= _ID_VALUE_MAX:
        if n > _ID_VALUE_MAX + 1 - have:
            n = _ID_VALUE_MAX + 1 - have
        buf += PyBytes_FromStringAndSize(s, n)
    return 0


@cython.auto_pickle(False)
cdef class ResponseIdScanner:
    """Find the top-level ``"id"`` of a JSON-RPC response in bytes fed in chunks, without
    decoding them; see ``_speedups_py.ResponseIdScanner`` for the full contract
    (``response_id`` once the object is complete, ``likely_response_id`` for a head).
    """

    cdef Py_ssize_t _depth
    cdef bint _in_string, _escape, _expect_key, _done, _invalid, _id_string
    cdef object _capture  # bytearray or None
    cdef object _scalar  # bytearray or None
    cdef bytes _key, _value_key
    cdef object _id_raw  # bytes or None
    cdef int _keys

    def __cinit__(self):
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._expect_key = False
        self._done = False
        self._invalid = False
        self._id_string = False
        self._capture = None
        self._scalar = None
        self._key = b""
        self._value_key = b""
        self._id_raw = None
        self._keys = 0

    def __reduce__(self):
        _refuse_copy(self)

    def __reduce_ex__(self, protocol):
        _refuse_copy(self)

    @property
    def response_id(self):
        if not self._done:
            return None
        return self.likely_response_id

    @property
    def likely_response_id(self):
        if self._invalid or self._id_raw is None or self._keys & _KEY_METHOD:
            return None
        if not self._done and not (self._keys & (_KEY_RESULT | _KEY_ERROR)):
            return None
        return self._parsed_id()

    @property
    def request_id(self):
        """The id of a complete request from the peer, else None."""
        if not self._done or self._invalid or self._id_raw is None:
            return None
        return self._parsed_id() if self._keys & _KEY_METHOD else None

    def _parsed_id(self):
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

    def feed(self, data):
        """Scan ``data``, the next bytes of the message."""
        cdef bytes buf = _as_bytes(data)
        self._scan(PyBytes_AS_STRING(buf), PyBytes_GET_SIZE(buf))

    cdef int _scan(self, const char* p, Py_ssize_t n) except -1:
        cdef Py_ssize_t i = 0, start
        cdef unsigned char c
        while i < n and not self._done and not self._invalid:
            if self._in_string:
                if self._escape:
                    self._escape = False
                    if self._capture is not None:
                        _keep(self._capture, p + i, 1)
                    i += 1
                    continue
                start = i
                while i < n and p[i] != b'"' and p[i] != b"\\":
                    i += 1
                if self._capture is not None and i > start:
                    _keep(self._capture, p + start, i - start)
                if i == n:
                    return 0
                if p[i] == b"\\":
                    if self._capture is not None:
                        _keep(self._capture, b"\\", 1)
                    self._escape = True
                else:
                    self._in_string = False
                    self._end_string()
                i += 1
                continue
            c = <unsigned char>p[i]
            if c == 34 or c == 91 or c == 93 or c == 123 or c == 125 or c == 44 or c == 58:
                self._structural(c)
            elif self._scalar is not None:
                _keep(self._scalar, p + i, 1)
            elif self._depth == 0 and not _is_json_space(c):
                self._invalid = True
            i += 1
        return 0

    cdef int _end_string(self) except -1:
        captured = self._capture
        self._capture = None
        if captured is not None and self._depth == 1:
            if self._expect_key:
                self._key = bytes(captured) if len(captured) <= _ID_KEY_MAX else b""
            elif self._value_key == b"id":
                self._id_raw = bytes(captured)
                self._id_string = True
        return 0

    cdef int _structural(self, unsigned char c) except -1:
        cdef Py_ssize_t depth = self._depth
        if c == 34:  # '"'
            self._in_string = True
            if depth == 1 and (self._expect_key or self._value_key == b"id"):
                self._capture = bytearray()
            self._scalar = None
            return 0
        if depth == 0:
            if c == 123:
                self._depth = 1
                self._expect_key = True
            else:
                self._invalid = True
            return 0
        if depth == 1:
            if c == 58:  # ':'
                self._value_key = self._key
                if self._key == b"method":
                    self._keys |= _KEY_METHOD
                elif self._key == b"result":
                    self._keys |= _KEY_RESULT
                elif self._key == b"error":
                    self._keys |= _KEY_ERROR
                self._expect_key = False
                if self._key == b"id":
                    self._id_raw = None
                    self._scalar = bytearray()
                return 0
            scalar = self._scalar
            self._scalar = None
            if scalar is not None and scalar.strip(_WS):
                self._id_raw = bytes(scalar)
                self._id_string = False
            if c == 44:  # ','
                self._expect_key = True
                self._value_key = b""
            elif c == 125 or c == 93:
                self._depth = 0
                self._done = True
            else:
                self._depth = 2
            return 0
        if c == 123 or c == 91:
            self._depth = depth + 1
        elif c == 125 or c == 93:
            self._depth = depth - 1
        return 0


def scan_response_id(data):
    """``ResponseIdScanner`` over one whole message: its top-level response id, or None."""
    cdef ResponseIdScanner scanner = ResponseIdScanner()
    scanner.feed(data)
    return scanner.response_id


# --- NDJSON ----------------------------------------------------------------------------


cdef extern from *:
    """
    #ifdef _WIN32
    static Py_ssize_t mcpl_wait_read(int fd, int timeout_ms, char *buf, Py_ssize_t n, int *err) {
        *err = 38; /* ENOSYS: the stdio transport never calls this on Windows */
        return -2;
    }
    static int mcpl_nonblocking(int fd) { return 0; }
    static Py_ssize_t mcpl_read_now(int fd, char *buf, Py_ssize_t n, int *err) {
        *err = 38;
        return -2;
    }
    static Py_ssize_t mcpl_write_now(int fd, const char *buf, Py_ssize_t n, int *err) {
        *err = 38;
        return -2;
    }
    static Py_ssize_t mcpl_wait_read_watch(int fd, int timeout_ms, char *buf, Py_ssize_t n,
                                           int *err, int a, int b, int c, int *woke) {
        *err = 38;
        *woke = 0;
        return -2;
    }
    #else
    #include <errno.h>
    #include <fcntl.h>
    #include <poll.h>
    #include <unistd.h>
    /* 1 when fd is in non-blocking mode: a read or write on it returns at once. */
    static int mcpl_nonblocking(int fd) {
        int flags = fcntl(fd, F_GETFL);
        return flags >= 0 && (flags & O_NONBLOCK);
    }
    /* One read that never waits (fd non-blocking): as mcpl_wait_read. */
    static Py_ssize_t mcpl_read_now(int fd, char *buf, Py_ssize_t n, int *err) {
        ssize_t got = read(fd, buf, (size_t)n);
        *err = 0;
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) return -1;
            *err = errno;
            return -2;
        }
        return (Py_ssize_t)got;
    }
    /* One write that never waits (fd non-blocking): >=0 bytes written, -1 no room, -2 error. */
    static Py_ssize_t mcpl_write_now(int fd, const char *buf, Py_ssize_t n, int *err) {
        ssize_t put = write(fd, buf, (size_t)n);
        *err = 0;
        if (put < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) return -1;
            *err = errno;
            return -2;
        }
        return (Py_ssize_t)put;
    }
    /* >0 bytes read, 0 end of stream, -1 nothing now (timeout, EINTR, EAGAIN), -2 error. */
    static Py_ssize_t mcpl_wait_read(int fd, int timeout_ms, char *buf, Py_ssize_t n, int *err) {
        struct pollfd p;
        ssize_t got;
        *err = 0;
        if (timeout_ms > 0) {
            p.fd = fd;
            p.events = POLLIN;
            p.revents = 0;
            int r = poll(&p, 1, timeout_ms);
            if (r == 0 || (r < 0 && errno == EINTR)) return -1;
            if (r < 0) { *err = errno; return -2; }
        }
        got = read(fd, buf, (size_t)n);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) return -1;
            *err = errno;
            return -2;
        }
        return (Py_ssize_t)got;
    }
    /* mcpl_wait_read, also waiting on up to three watched fds (a, b, c; -1: none, as
       poll ignores a negative fd): fd is read (once) only when it is ready; *woke gets bit
       1, 2, 4 set for a, b, c ready (readable, at end or in error). */
    static Py_ssize_t mcpl_wait_read_watch(int fd, int timeout_ms, char *buf, Py_ssize_t n,
                                           int *err, int a, int b, int c, int *woke) {
        struct pollfd p[4];
        ssize_t got;
        int r;
        *err = 0;
        *woke = 0;
        p[0].fd = fd; p[1].fd = a; p[2].fd = b; p[3].fd = c;
        for (r = 0; r < 4; r++) { p[r].events = POLLIN; p[r].revents = 0; }
        r = poll(p, 4, timeout_ms > 0 ? timeout_ms : 0);
        if (r == 0 || (r < 0 && errno == EINTR)) return -1;
        if (r < 0) { *err = errno; return -2; }
        *woke = (p[1].revents ? 1 : 0) | (p[2].revents ? 2 : 0) | (p[3].revents ? 4 : 0);
        if (fd < 0 || !p[0].revents) return -1;
        got = read(fd, buf, (size_t)n);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) return -1;
            *err = errno;
            return -2;
        }
        return (Py_ssize_t)got;
    }
    #endif
    """
    Py_ssize_t mcpl_wait_read(int fd, int timeout_ms, char* buf, Py_ssize_t n, int* err) nogil
    Py_ssize_t mcpl_wait_read_watch(int fd, int timeout_ms, char* buf, Py_ssize_t n, int* err,
                                    int a, int b, int c, int* woke) nogil
    int mcpl_nonblocking(int fd)
    Py_ssize_t mcpl_read_now(int fd, char* buf, Py_ssize_t n, int* err)
    Py_ssize_t mcpl_write_now(int fd, const char* buf, Py_ssize_t n, int* err)


def write_nowait(int fd, data):
    """Write what fits of ``data`` (bytes-like) to the non-blocking ``fd`` now; see the
    twin. The GIL is kept: such a write never waits, and letting go of the GIL around it
    only hands the GIL to another thread and makes this one queue to get it back (with 8
    threads on one connection that was several futex round trips a call). ``fd`` must be
    in non-blocking mode (the stdio transport sets it so at start; it is not checked here,
    which saves a system call a write): a blocking write would hold the GIL while it waits."""
    cdef Py_buffer view
    cdef Py_ssize_t put
    cdef int err = 0
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        put = mcpl_write_now(fd, <const char*>view.buf, view.len, &err)
    finally:
        PyBuffer_Release(&view)
    if put == -2:
        raise OSError(err, os.strerror(err))
    return put


cdef enum:
    DEF_READ_CHUNK = 65536
READ_CHUNK = DEF_READ_CHUNK


@cython.auto_pickle(False)
cdef class HeldLock:
    """``with HeldLock(lock, timeout) as got:`` — take ``lock`` (waiting up to ``timeout``
    seconds; a negative timeout does not wait), run the block, release it if it was taken.

    The acquire and the release are C code entered and left by the ``with`` statement
    itself, so no Python bytecode runs between taking the lock and entering the block, or
    instead of releasing it: a Ctrl-C (or two, in quick succession) cannot leave the lock
    held. The pure-Python twin cannot promise this.
    """

    cdef object _lock
    cdef double _timeout
    cdef bint _got

    def __cinit__(self, lock, double timeout):
        self._lock = lock
        self._timeout = timeout
        self._got = False

    def __reduce__(self):
        _refuse_copy(self)

    def __reduce_ex__(self, protocol):
        _refuse_copy(self)

    def __enter__(self):
        if self._timeout < 0:
            self._got = self._lock.acquire(False)
        elif self._timeout > _TIMEOUT_MAX:  # inf, or more than a lock can time: no limit
            self._got = self._lock.acquire(True)
        else:
            self._got = self._lock.acquire(True, self._timeout)
        return self._got

    def __exit__(self, exc_type, exc, tb):
        if self._got:
            self._got = False
            self._lock.release()
        return False


# --- Gates: what a blocking call waits on, and deferred wake-ups ----------------------------

# Gates a reader thread completed while routing a batch (see Gate.open): opened one at a time,
# each by a thread that has just let go of the GIL, so the thread woken finds the GIL free.
cdef list _deferred = []
# Set (to a non-NULL marker) on a thread while it routes with defer_wakes: per thread, so
# two readers routing at once (two connections) never see each other's setting.
cdef Py_tss_t _deferring
if PyThread_tss_create(&_deferring) != 0:
    raise MemoryError("no thread-specific storage key for mcp_lite._speedups")
cdef int _GUARD_MS = 1  # a reader with deferred gates left waits at most this long


cdef double _monotonic() except? -1.0:
    return _time_monotonic()


cdef inline Gate _next_deferred():
    if _deferred:
        return <Gate>_deferred.pop(0)
    return None


@cython.auto_pickle(False)
cdef class Gate:
    """A one-shot event for one waiting thread: closed at birth, ``open()`` once.

    ``wait(timeout)`` blocks on a PyThread lock without the GIL and returns True once open
    (it stays open). A reader thread routing with ``route(..., defer_wakes=True)`` does not
    open a gate at once: it queues it, and the gate is opened right after some thread lets
    go of the GIL to wait (the reader before its next poll, or a woken caller before it
    blocks again), one at a time. A thread woken while the reader still routes would only
    queue for the GIL and sleep again; woken this way it runs at once. Opening early is
    always safe, so every path that stops routing calls ``open_deferred()``.
    """

    cdef PyThread_type_lock _lock
    cdef bint _opened

    def __cinit__(self):
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError()
        PyThread_acquire_lock(self._lock, WAIT_LOCK)

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)
            self._lock = NULL

    def __reduce__(self):
        _refuse_copy(self)

    def __reduce_ex__(self, protocol):
        _refuse_copy(self)

    def is_open(self):
        """True once ``open()`` was called (the wake-up itself may still be queued)."""
        return self._opened

    def open(self):
        if self._opened:
            return
        self._opened = True
        if PyThread_tss_get(&_deferring) != NULL:
            _deferred.append(self)
        else:
            PyThread_release_lock(self._lock)

    def wait(self, double timeout):
        """Block up to ``timeout`` seconds (< 0: no limit) until open; True if it is.

        Hands one deferred wake-up on first, after letting go of the GIL. Signals are
        handled as ``threading.Lock.acquire`` does: a handler that raises (Ctrl-C) ends the
        wait with its exception; otherwise the wait goes on to the same deadline."""
        cdef Gate after = _next_deferred()
        cdef PyLockStatus got
        cdef long long us
        cdef double deadline = 0.0, left
        cdef bint forever = not (timeout >= 0)  # negative or NaN, as in the twin
        if not forever:
            deadline = _monotonic() + timeout
        while True:
            if forever:
                us = -1
            else:
                # clamp as a double: converting inf (or anything past 2**63) is undefined
                left = (deadline - _monotonic()) * 1e6
                if left <= 0.0:
                    us = 0
                elif left > 4e12:
                    us = 4000000000000
                else:
                    us = <long long>left
            with nogil:
                if after is not None:
                    PyThread_release_lock(after._lock)
                got = PyThread_acquire_lock_timed(self._lock, us, 1)
            after = None
            if got == PY_LOCK_ACQUIRED:
                PyThread_release_lock(self._lock)  # open stays open
                return True
            if got != PY_LOCK_INTR:
                if self._opened or forever or _monotonic() >= deadline:
                    return self._opened  # timed out (an open may be queued: it counts)
                continue  # a clamped wait ended before a far deadline: wait on
            PyErr_CheckSignals()


def open_deferred():
    """Open every gate whose wake-up is still queued (a reader stops routing)."""
    cdef Gate gate
    while _deferred:
        gate = <Gate>_deferred.pop(0)
        PyThread_release_lock(gate._lock)


@cython.auto_pickle(False)
cdef class NdjsonSplitter:
    """Split a byte stream into newline-delimited messages (the stdio transport's framing).

    See ``_speedups_py.NdjsonSplitter`` for the full contract: messages are lines without
    ``\\n`` and one trailing ``\\r``, blank lines skipped, a line over ``max_size`` bytes
    becomes one ``MessageTooLarge`` item when it ends (dropped as it arrives, only scanned
    for its response id), ``flush()`` returns an unterminated last line.
    """

    cdef Py_ssize_t _max_size
    cdef bytearray _pending
    cdef ResponseIdScanner _scanner  # dropping an oversized line, or None
    cdef bytes _head
    cdef list _ready
    cdef Py_ssize_t _taken
    cdef char* _buf
    cdef int _woke

    def __cinit__(self, *args, **kwargs):
        # valid before (or without) __init__: a subclass may skip it, or __new__ be called
        self._buf = NULL
        self._reset(DEFAULT_MAX_SIZE)

    def __init__(self, max_size=DEFAULT_MAX_SIZE):
        self._reset(_check_size(max_size))

    cdef int _reset(self, Py_ssize_t max_size) except -1:
        self._max_size = max_size
        self._pending = bytearray()
        self._scanner = None
        self._head = b""
        self._ready = []
        self._taken = 0
        self._woke = 0
        return 0

    def __dealloc__(self):
        free(self._buf)
        self._buf = NULL

    def __reduce__(self):
        _refuse_copy(self)

    def __reduce_ex__(self, protocol):
        _refuse_copy(self)

    def read_into(self, int fd, double timeout):
        """Wait up to ``timeout`` s (``<= 0``: not at all) for ``fd``, read once (at most
        64 KiB) and keep what completes; see the twin. One C call: the wait and the read run
        without the GIL, and no Python code runs between the read and the split, so an
        interrupt can never leave half a message behind."""
        return self._read_into(fd, timeout)

    def lead(self, int fd, stop, double deadline, on_message, owner, double cap=0.5):
        """The leader's loop (see the twin): ``read_into`` (each wait at most ``cap`` s) and
        ``route`` until ``stop()``, ``owner._reader_wanted``, ``owner._closing`` or
        ``deadline``; -1 at end of stream, else 0. One C call a lead, no bytecode per read; signals are checked after each
        read and its routing, so a Ctrl-C lands as it would between two Python lines
        (frames read are routed first)."""
        cdef double remaining
        cdef Py_ssize_t count
        while not (stop() or owner._reader_wanted):
            remaining = deadline - _monotonic()
            if remaining <= 0 or owner._closing:
                return 0
            count = self._read_into(fd, remaining if remaining < cap else cap)
            self._route(on_message, False)
            if count < 0:
                return -1
            PyErr_CheckSignals()
        return 0

    cdef Py_ssize_t _read_into(self, int fd, double timeout) except -3:
        cdef int err = 0
        cdef int ms = 0
        cdef Py_ssize_t got
        cdef Gate after = None
        if self._buf == NULL:
            self._buf = <char*>realloc(NULL, DEF_READ_CHUNK)
            if self._buf == NULL:
                raise MemoryError()
        if timeout > 0:
            ms = <int>(timeout * 1000.0) + 1 if timeout < 2000000.0 else 2000000000
        # No wait asked for, on a non-blocking fd: read with the GIL kept (such a read
        # never waits, see write_nowait). A wait lets go of the GIL (poll, then read).
        if ms == 0 and mcpl_nonblocking(fd):
            got = mcpl_read_now(fd, self._buf, DEF_READ_CHUNK, &err)
        else:
            # A wait lets go of the GIL: the moment to wake one deferred caller. While more
            # are queued the wait is short, so none waits long on a caller that never
            # blocks again to pass the wake-up on.
            after = _next_deferred()
            if _deferred and ms > _GUARD_MS:
                ms = _GUARD_MS
            with nogil:
                if after is not None:
                    PyThread_release_lock(after._lock)
                got = mcpl_wait_read(fd, ms, self._buf, DEF_READ_CHUNK, &err)
            after = None
        if got == -2:
            raise OSError(err, "read_into failed")
        if got == 0:
            self._ready.extend(self.flush())
            return -1
        if got > 0:
            self._ready.extend(self.feed(PyBytes_FromStringAndSize(self._buf, got)))
        return len(self._ready) - self._taken

    def read_watching(self, int fd, double timeout, int a, int b, int c):
        """``read_into`` (with a wait) that also wakes for the watched fds ``a``, ``b``,
        ``c`` (-1: none; ``fd`` -1: watch only): one poll for all; ``fd`` is read only when
        it is ready. Which watched fds are ready is in ``woke`` afterwards; see the twin."""
        cdef int err = 0
        cdef int ms = 0
        cdef int woke = 0
        cdef Py_ssize_t got
        cdef Gate after = None
        if self._buf == NULL:
            self._buf = <char*>realloc(NULL, DEF_READ_CHUNK)
            if self._buf == NULL:
                raise MemoryError()
        if timeout > 0:
            ms = <int>(timeout * 1000.0) + 1 if timeout < 2000000.0 else 2000000000
        after = _next_deferred()  # the wait lets go of the GIL: see read_into
        if _deferred and ms > _GUARD_MS:
            ms = _GUARD_MS
        with nogil:
            if after is not None:
                PyThread_release_lock(after._lock)
            got = mcpl_wait_read_watch(fd, ms, self._buf, DEF_READ_CHUNK, &err, a, b, c, &woke)
        after = None
        self._woke = woke
        if got == -2:
            raise OSError(err, "read_watching failed")
        if got == 0:
            self._ready.extend(self.flush())
            return -1
        if got > 0:
            self._ready.extend(self.feed(PyBytes_FromStringAndSize(self._buf, got)))
        return len(self._ready) - self._taken

    @property
    def woke(self):
        """Bits 1, 2, 4: the watched fds a, b, c of the last ``read_watching`` were ready."""
        return self._woke

    def pop_frame(self):
        """The next message ``read_into`` completed, or None when there is none."""
        cdef list ready = self._ready
        if self._taken >= len(ready):
            return None
        frame = ready[self._taken]
        self._taken += 1
        if self._taken == len(ready):
            del ready[:]
            self._taken = 0
        return frame

    def route(self, on_message, bint defer_wakes=False):
        """Hand every message ``read_into`` completed to ``on_message``, in order; True if
        there was one (see the twin). ``defer_wakes``: gates opened meanwhile on this
        thread are queued (see ``Gate``)."""
        return self._route(on_message, defer_wakes)

    cdef bint _route(self, on_message, bint defer_wakes) except -1:
        cdef list ready = self._ready
        cdef bint routed = False
        cdef object frame
        cdef void* before = PyThread_tss_get(&_deferring)
        if defer_wakes:
            PyThread_tss_set(&_deferring, <void*>1)
        try:
            while self._taken < len(ready):
                frame = ready[self._taken]
                self._taken += 1
                if self._taken == len(ready):
                    del ready[:]
                    self._taken = 0
                routed = True
                on_message(frame)
        finally:
            if defer_wakes:
                PyThread_tss_set(&_deferring, before)
        return routed

    @property
    def max_size(self):
        """The size limit in bytes."""
        return self._max_size

    @property
    def buffered(self):
        """Bytes held for a partial line."""
        return len(self._pending)

    cdef inline int _emit(self, list out, const char* s, Py_ssize_t n) except -1:
        cdef ResponseIdScanner scanner
        if n and s[n - 1] == b"\r":
            n -= 1
        if n > self._max_size:
            scanner = ResponseIdScanner()
            scanner._scan(s, n)
            out.append(
                _too_large_scanned(
                    self._max_size, PyBytes_FromStringAndSize(s, n if n < _HEAD else _HEAD), scanner
                )
            )
        elif n and not _blank(s, n):
            out.append(PyBytes_FromStringAndSize(s, n))
        return 0

    def feed(self, data):
        """Add ``data``; return the messages (and ``MessageTooLarge`` items) it completes.

        Raises:
            TypeError: ``data`` is not bytes-like.
        """
        cdef bytes buf = _as_bytes(data)
        cdef const char* p = PyBytes_AS_STRING(buf)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(buf)
        cdef Py_ssize_t pos = 0, end, size
        cdef const char* q
        cdef list out = []
        cdef bytes line
        cdef ResponseIdScanner scanner
        if self._scanner is not None:
            q = <const char*>memchr(p, b"\n", n)
            if q == NULL:
                self._scanner._scan(p, n)
                return out
            pos = q - p
            self._scanner._scan(p, pos)
            out.append(_too_large_scanned(self._max_size, self._head, self._scanner))
            self._scanner = None
            self._head = b""
            pos += 1
        if len(self._pending):
            q = <const char*>memchr(p + pos, b"\n", n - pos)
            if q != NULL:
                end = q - p
                self._pending += buf[pos:end]
                line = bytes(self._pending)
                del self._pending[:]
                self._emit(out, PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line))
                pos = end + 1
        while pos < n:
            q = <const char*>memchr(p + pos, b"\n", n - pos)
            if q == NULL:
                break
            end = q - p
            self._emit(out, p + pos, end - pos)
            pos = end + 1
        if pos < n:
            # size - 1, not max_size + 1: a max_size near PY_SSIZE_T_MAX must not overflow
            size = len(self._pending) + (n - pos) - 1
            if size > self._max_size or (size == self._max_size and p[n - 1] != b"\r"):
                scanner = ResponseIdScanner()
                scanner.feed(self._pending)
                scanner._scan(p + pos, n - pos)
                self._head = (bytes(self._pending[:_HEAD]) + buf[pos:pos + _HEAD])[:_HEAD]
                self._scanner = scanner
                del self._pending[:]
            else:
                self._pending += buf[pos:]
        return out

    def flush(self):
        """End of stream: ``[line]`` for a final non-blank unterminated line (its
        ``MessageTooLarge`` if it was too large), else ``[]``; the splitter is reset."""
        cdef list out = []
        cdef ResponseIdScanner scanner = self._scanner
        if scanner is not None:
            self._scanner = None
            out.append(_too_large_scanned(self._max_size, self._head, scanner))
            self._head = b""
            return out
        cdef bytes line = bytes(self._pending)
        del self._pending[:]
        self._emit_flush(out, line)
        return out

    cdef int _emit_flush(self, list out, bytes line) except -1:
        cdef const char* s = PyBytes_AS_STRING(line)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(line)
        if n and s[n - 1] == b"\r":
            n -= 1
        if n and not _blank(s, n):
            out.append(PyBytes_FromStringAndSize(s, n))
        return 0


# --- SSE -------------------------------------------------------------------------------


cdef class SseEvent:
    """One dispatched server-sent event. Immutable; equal when all three fields are equal.

    Attributes:
        event: the event type, ``"message"`` when the stream gave none.
        data: the data lines joined with ``"\\n"``.
        id: the parser's last event ID when the event was dispatched (``""`` if none).
    """

    cdef readonly object event
    cdef readonly object data
    cdef readonly object id

    def __init__(self, event="message", data="", id=""):
        self.event = event
        self.data = data
        self.id = id

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        cdef SseEvent o = <SseEvent>other
        return self.event == o.event and self.data == o.data and self.id == o.id

    def __ne__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return not self.__eq__(other)

    def __hash__(self):
        return hash((self.event, self.data, self.id))

    def __repr__(self):
        return f"SseEvent(event={self.event!r}, data={self.data!r}, id={self.id!r})"

    def __reduce__(self):
        return (SseEvent, (self.event, self.data, self.id))


cdef bytes _BOM = b"\xef\xbb\xbf"
cdef Py_ssize_t _LINE_SLACK = 6  # len(b"data: "): see _speedups_py
cdef Py_ssize_t _RETRY_DIGITS = 18  # a longer retry (leading zeros aside) is ignored


cdef inline str _decode(const char* s, Py_ssize_t n):
    return PyUnicode_DecodeUTF8(s, n, "replace")


@cython.auto_pickle(False)
cdef class SseParser:
    """Parse a ``text/event-stream`` body as the WHATWG HTML standard says, chunk by chunk.

    See ``_speedups_py.SseParser`` for the full contract (BOM, CR/LF/CRLF, comments, fields,
    ``last_event_id`` updated at each blank line, ``retry``, oversized events: dropped as
    they arrive, scanned for their response id, reported at their blank line).

    Attributes:
        last_event_id: the ID to send as ``Last-Event-ID`` on reconnection (``""`` at first).
        retry: the reconnection time in ms the server asked for, or ``None``.
    """

    cdef Py_ssize_t _max_size
    cdef public object last_event_id
    cdef public object retry
    cdef object _bom_pending
    cdef bytearray _line
    cdef bint _skip_lf
    cdef bint _skip_line
    cdef bint _dropping
    cdef ResponseIdScanner _scanner  # the dropped event's data, scanned for its id
    cdef bytes _drop_head
    cdef bint _skip_data  # the line being skipped is a data line: scan it
    cdef char* _data
    cdef Py_ssize_t _dlen
    cdef Py_ssize_t _dcap
    cdef object _event
    cdef str _id_buffer

    def __cinit__(self, *args, **kwargs):
        # valid before (or without) __init__: a subclass may skip it, or __new__ be called
        self._data = NULL
        self._dlen = 0
        self._dcap = 0
        self._reset(DEFAULT_MAX_SIZE)

    def __dealloc__(self):
        free(self._data)

    def __reduce__(self):
        _refuse_copy(self)

    def __reduce_ex__(self, protocol):
        _refuse_copy(self)

    def __init__(self, max_size=DEFAULT_MAX_SIZE):
        self._reset(_check_size(max_size))

    cdef int _reset(self, Py_ssize_t max_size) except -1:
        self._max_size = max_size
        self.last_event_id = ""
        self.retry = None
        self._bom_pending = b""
        self._line = bytearray()
        self._skip_lf = False
        self._skip_line = False
        self._dlen = 0
        self._event = ""
        self._id_buffer = ""
        self._dropping = False
        self._scanner = None
        self._drop_head = b""
        self._skip_data = False
        return 0

    @property
    def max_size(self):
        """The size limit in bytes for one event's data."""
        return self._max_size

    @property
    def buffered(self):
        """Bytes held for the current partial line and event data."""
        return len(self._line) + self._dlen + (
            len(self._bom_pending) if self._bom_pending is not None else 0
        )

    cdef int _reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t need = self._dlen + extra
        cdef Py_ssize_t cap
        cdef char* mem
        if need <= self._dcap:
            return 0
        cap = self._dcap * 2 if self._dcap else 1024
        if cap < need:
            cap = need
        mem = <char*>realloc(self._data, cap)
        if mem == NULL:
            raise MemoryError()
        self._data = mem
        self._dcap = cap
        return 0

    cdef int _dispatch(self, list out) except -1:
        cdef SseEvent ev
        self.last_event_id = self._id_buffer
        if self._dropping:
            out.append(_too_large_scanned(self._max_size, self._drop_head, self._scanner))
            self._scanner = None
            self._drop_head = b""
        elif self._dlen:
            ev = SseEvent.__new__(SseEvent)
            ev.event = self._event or "message"
            ev.data = _decode(self._data, self._dlen - 1)
            ev.id = self._id_buffer
            out.append(ev)
        self._dlen = 0
        if self._dcap > 1 << 20:  # do not keep a huge event's buffer around
            free(self._data)
            self._data = NULL
            self._dcap = 0
        self._event = ""
        self._dropping = False
        return 0

    cdef int _drop(self, bytes head) except -1:
        """The event is too large: from now on its data is only scanned for its id."""
        self._dropping = True
        self._scanner = ResponseIdScanner()
        self._scanner._scan(self._data, self._dlen)
        self._drop_head = head[:_HEAD]
        self._dlen = 0
        return 0

    cdef bytes _data_head(self, const char* v, Py_ssize_t vlen):
        """The first bytes of the event's data followed by ``v``."""
        cdef Py_ssize_t have = self._dlen if self._dlen < _HEAD else _HEAD
        if vlen > _HEAD - have:
            vlen = _HEAD - have
        return PyBytes_FromStringAndSize(self._data, have) + PyBytes_FromStringAndSize(v, vlen)

    cdef int _process(self, const char* s, Py_ssize_t n, list out) except -1:
        cdef const char* colon
        cdef const char* v
        cdef Py_ssize_t flen, vlen, i
        if n == 0:
            return self._dispatch(out)
        if s[0] == b":":
            return 0
        colon = <const char*>memchr(s, b":", n)
        if colon == NULL:
            flen = n
            v = s + n
            vlen = 0
        else:
            flen = colon - s
            v = colon + 1
            vlen = n - flen - 1
            if vlen and v[0] == b" ":
                v += 1
                vlen -= 1
        if flen == 4 and memcmp(s, b"data", 4) == 0:
            if not self._dropping and self._dlen + vlen > self._max_size:
                self._drop(self._data_head(v, vlen))
            if self._dropping:
                if self._scanner is not None:
                    self._scanner._scan(v, vlen)
                    self._scanner._scan(b"\n", 1)
                return 0
            self._reserve(vlen + 1)
            memcpy(self._data + self._dlen, v, vlen)
            self._dlen += vlen
            self._data[self._dlen] = b"\n"
            self._dlen += 1
        elif n - _LINE_SLACK > self._max_size:  # (not max_size + slack: no overflow)
            # an over-long event or id makes the event too large; other fields are ignored
            if colon != NULL and not self._dropping and (
                (flen == 5 and memcmp(s, b"event", 5) == 0)
                or (flen == 2 and memcmp(s, b"id", 2) == 0)
            ):
                return self._drop(PyBytes_FromStringAndSize(s, n if n < _HEAD else _HEAD))
        elif flen == 5 and memcmp(s, b"event", 5) == 0:
            if vlen == 7 and memcmp(v, b"message", 7) == 0:
                self._event = "message"
            else:
                self._event = _decode(v, vlen)
        elif flen == 2 and memcmp(s, b"id", 2) == 0:
            if memchr(v, 0, vlen) == NULL:
                self._id_buffer = _decode(v, vlen)
        elif flen == 5 and memcmp(s, b"retry", 5) == 0:
            if vlen == 0:
                return 0
            for i in range(vlen):
                if not (b"0" <= v[i] <= b"9"):
                    return 0
            while vlen > 1 and v[0] == b"0":
                v += 1
                vlen -= 1
            if vlen > _RETRY_DIGITS:  # unusable: ignored, as a value with a non-digit is
                return 0
            self.retry = int(PyBytes_FromStringAndSize(v, vlen))
        return 0

    cdef int _add_partial(self, bytes chunk, list out) except -1:
        if self._skip_line:
            if self._skip_data and self._scanner is not None:
                self._scanner.feed(chunk)
            return 0
        cdef bytearray line = self._line
        if len(line) + len(chunk) - _LINE_SLACK <= self._max_size:  # (no overflow)
            line += chunk
            return 0
        # certain to be too long: drop it (as _process would), scanning the rest of a data line
        cdef bytes whole = bytes(line) + chunk
        cdef bytes value
        del line[:]
        self._skip_line = True
        if whole.startswith(b"data:"):
            value = whole[6:] if whole[5:6] == b" " else whole[5:]
            if not self._dropping:
                self._drop(self._data_head(value, len(value)))
            if self._scanner is not None:
                self._scanner.feed(value)
                self._skip_data = True
        elif whole.startswith((b"event:", b"id:")) and not self._dropping:
            self._drop(whole[:_HEAD + _LINE_SLACK])
        return 0

    def feed(self, data):
        """Add ``data``; return the events (and ``MessageTooLarge`` items) it dispatches.

        Raises:
            TypeError: ``data`` is not bytes-like.
        """
        cdef bytes buf = _as_bytes(data)
        cdef list out = []
        if self._bom_pending is not None:
            buf = self._bom_pending + buf
            if len(buf) < 3 and _BOM.startswith(buf):
                self._bom_pending = buf
                return out
            self._bom_pending = None
            if buf.startswith(_BOM):
                buf = buf[3:]
        cdef Py_ssize_t n = PyBytes_GET_SIZE(buf)
        if n == 0:
            return out
        cdef const char* p = PyBytes_AS_STRING(buf)
        cdef Py_ssize_t pos = 0
        if self._skip_lf:
            self._skip_lf = False
            if p[0] == b"\n":
                pos = 1
        cdef Py_ssize_t lf = -1, i
        cdef const char* q
        cdef bint first = True
        cdef bytes line
        while True:
            if lf < pos:
                q = <const char*>memchr(p + pos, b"\n", n - pos)
                lf = q - p if q != NULL else n
            q = <const char*>memchr(p + pos, b"\r", lf - pos)
            i = q - p if q != NULL else lf
            if i == n:
                break
            if first:
                first = False
                if self._skip_line:
                    self._skip_line = False  # the end of a dropped oversized line
                    if self._skip_data and self._scanner is not None:
                        self._scanner._scan(p + pos, i - pos)
                        self._scanner._scan(b"\n", 1)
                    self._skip_data = False
                elif len(self._line):
                    self._line += buf[pos:i]
                    line = bytes(self._line)
                    del self._line[:]
                    self._process(PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line), out)
                else:
                    self._process(p + pos, i - pos, out)
            else:
                self._process(p + pos, i - pos, out)
            if p[i] == b"\r":
                if i + 1 < n:
                    pos = i + 2 if p[i + 1] == b"\n" else i + 1
                else:
                    pos = n
                    self._skip_lf = True
            else:
                pos = i + 1
        if pos < n:
            self._add_partial(buf[pos:] if pos else buf, out)
        return out


# --- JSON ------------------------------------------------------------------------------

# pydantic_core costs ~35 ms to import: load it on the first message, not with mcp_lite.
_to_json = None
_from_json = None


def _load_json():
    global _to_json, _from_json
    from pydantic_core import from_json, to_json

    _to_json, _from_json = to_json, from_json
    return to_json, from_json



def encode_message(obj):
    """Serialize one JSON-RPC message: compact JSON, UTF-8, then ``b"\\n"``; NaN/inf -> null.

    Raises:
        ValueError: ``obj`` holds something JSON cannot represent.
    """
    to_json = _to_json if _to_json is not None else _load_json()[0]
    return to_json(obj, inf_nan_mode="null") + b"\n"


def decode_message(data):
    """Parse one JSON message.

    Raises:
        ValueError: ``data`` is not valid JSON.
    """
    from_json = _from_json if _from_json is not None else _load_json()[1]
    return from_json(data)


# --- shapes ----------------------------------------------------------------------------

cdef object _UNKNOWN = object()


cdef object _bad_spec(tuple spec):
    raise ValueError(
        f"a list check is (item_checks, item_names, required), not a tuple of {len(spec)}"
    )


def plain_shape(raw, dict checks, frozenset names):
    """True when ``raw`` is a dict whose known keys hold values of the exact expected types
    and which uses none of ``names``. See ``_speedups_py.plain_shape`` for the checks."""
    return _plain_shape(raw, checks, names)


cdef bint _plain_shape(object raw, dict checks, frozenset names) except -1:
    cdef object key, value, check, item
    cdef tuple spec
    if type(raw) is not dict:
        return False
    for key, value in (<dict>raw).items():
        check = checks.get(key, _UNKNOWN)
        if check is _UNKNOWN:
            if key in names:
                return False
        elif check is None:
            continue
        elif type(check) is frozenset:
            if type(value) not in <frozenset>check:
                return False
        elif type(check) is tuple:
            if type(value) is not list:
                return False
            spec = <tuple>check
            if len(spec) != 3:  # checked before the unchecked indexing below
                _bad_spec(spec)
            for item in <list>value:
                if not (_plain_shape(item, spec[0], spec[1]) and spec[2] in item):
                    return False
        elif not check(value):
            return False
    return True


# --- LRU cache -------------------------------------------------------------------------


cdef inline void _acquire(PyThread_type_lock lock) noexcept:
    # Try without blocking first; when we must wait, wait without holding the GIL (the
    # holder may need it to run a key's __eq__ or a predicate), so no deadlock, with or
    # without a GIL.
    if not PyThread_acquire_lock(lock, NOWAIT_LOCK):
        with nogil:
            PyThread_acquire_lock(lock, WAIT_LOCK)


@cython.auto_pickle(False)
cdef class _Link:
    cdef _Link prev
    cdef _Link next
    cdef object key
    cdef object value


@cython.auto_pickle(False)
cdef class LruCache:
    """A bounded mapping that evicts the least recently used key, safe to share across threads.

    See ``_speedups_py.LruCache``: one lock held around every operation; ``get``/``put``
    count as use; keys' ``__hash__``/``__eq__`` and ``delete_where`` predicates run with the
    lock held and must not use the same cache.
    """

    cdef dict _map
    cdef _Link _root  # sentinel: _root.next is the least, _root.prev the most recently used
    cdef Py_ssize_t _maxsize
    cdef PyThread_type_lock _lock

    def __cinit__(self, *args, **kwargs):
        # valid before (or without) __init__: a subclass may skip it, or __new__ be called
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError()
        self._maxsize = 100
        self._map = {}
        self._root = _Link()
        self._root.prev = self._root
        self._root.next = self._root

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)

    def __reduce__(self):
        _refuse_copy(self)

    def __reduce_ex__(self, protocol):
        _refuse_copy(self)

    def __init__(self, maxsize=100):
        size = operator.index(maxsize)
        if not 0 <= size <= sys.maxsize:
            raise ValueError(f"maxsize must be between 0 and {sys.maxsize}, got {size}")
        _acquire(self._lock)
        try:
            self._maxsize = size
            self._map = {}
            self._root.prev = self._root
            self._root.next = self._root
        finally:
            PyThread_release_lock(self._lock)

    @property
    def maxsize(self):
        return self._maxsize

    cdef inline void _unlink(self, _Link link) noexcept:
        link.prev.next = link.next
        link.next.prev = link.prev

    cdef inline void _append(self, _Link link) noexcept:
        cdef _Link root = self._root
        link.prev = root.prev
        link.next = root
        root.prev.next = link
        root.prev = link

    def get(self, key, default=None):
        """The value for ``key`` (marking it most recently used), else ``default``."""
        cdef _Link link
        _acquire(self._lock)
        try:
            found = self._map.get(key)
            if found is None:
                return default
            link = <_Link>found
            if link.next is not self._root:
                self._unlink(link)
                self._append(link)
            return link.value
        finally:
            PyThread_release_lock(self._lock)

    def put(self, key, value):
        """Store ``value`` as the most recently used; evict the oldest past ``maxsize``."""
        cdef _Link link, old
        _acquire(self._lock)
        try:
            found = self._map.get(key)
            if found is not None:
                link = <_Link>found
                link.value = value
                self._unlink(link)
                self._append(link)
                return
            if self._maxsize == 0:
                return
            link = _Link.__new__(_Link)
            link.key = key
            link.value = value
            self._map[key] = link
            self._append(link)
            if len(self._map) > self._maxsize:
                old = self._root.next
                del self._map[old.key]
                self._unlink(old)
        finally:
            PyThread_release_lock(self._lock)

    def delete(self, key):
        """Remove ``key``; ``True`` if it was there."""
        _acquire(self._lock)
        try:
            found = self._map.get(key)  # (not dict.pop: it skips hashing on an empty dict)
            if found is None:
                return False
            del self._map[key]
            self._unlink(<_Link>found)
            return True
        finally:
            PyThread_release_lock(self._lock)

    def delete_where(self, predicate):
        """Remove every key for which ``predicate(key)`` is true; return how many.

        If ``predicate`` raises, nothing is removed and the exception propagates.
        """
        cdef _Link link
        cdef list doomed = []
        _acquire(self._lock)
        try:
            link = self._root.next
            while link is not self._root:
                if predicate(link.key):
                    doomed.append(link)
                link = link.next
            for link in doomed:
                del self._map[link.key]
                self._unlink(link)
            return len(doomed)
        finally:
            PyThread_release_lock(self._lock)

    def clear(self):
        _acquire(self._lock)
        try:
            self._map.clear()
            self._root.prev = self._root
            self._root.next = self._root
        finally:
            PyThread_release_lock(self._lock)

    def keys(self):
        """The keys, least recently used first."""
        cdef _Link link
        cdef list out = []
        _acquire(self._lock)
        try:
            link = self._root.next
            while link is not self._root:
                out.append(link.key)
                link = link.next
            return out
        finally:
            PyThread_release_lock(self._lock)

    def __len__(self):
        _acquire(self._lock)
        try:
            return len(self._map)
        finally:
            PyThread_release_lock(self._lock)

    def __contains__(self, key):
        _acquire(self._lock)
        try:
            return key in self._map
        finally:
            PyThread_release_lock(self._lock)

    def __repr__(self):
        return f"LruCache(maxsize={self._maxsize}, size={len(self)})"
