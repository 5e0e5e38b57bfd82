"""The stdio transport: a server subprocess speaking newline-delimited JSON on its pipes.

The child runs in its own session (so its own process group): shutdown can reach every
process it started, and a Ctrl-C in the user's terminal does not hit it directly. Its
environment is a small allow-list plus the configured ``env``, never the whole parent
environment (secrets in the parent's environment stay there).

Threads: one reader for stdout (frames to ``on_message``), one for stderr (to the
``mcp_lite.stderr`` logger and a bounded tail that error messages quote).

Leader/follower reading (compiled kernels, POSIX; ``MCP_LITE_STDIO_LEADER=0`` turns it
off, see ``_LEADING``): a caller that is the only one waiting may
``lead()``: read the pipe on its own thread until its answer has come, as a hand-written
client does, with no hand-off between threads. Whoever holds the pipe lock reads, and routes
every frame it reads through ``on_message`` (the Connection hands notifications and server
requests to its workers as always). The reader thread owns the pipe whenever nobody leads:
it parks while a leader reads and for ``_LINGER`` after the last one left (so a tight loop
of calls never wakes it), and comes back at once when the Connection asks for it
(``want_reader``: several callers, a ``submit()`` future, server traffic). The read-and-split
step is one compiled kernel call (``NdjsonSplitter.read_into``), so a Ctrl-C that lands on a
leading main thread can never leave half a frame in the splitter. The pure-Python build
cannot promise that, so there the reader thread alone reads (``lead()`` returns False).

Shutdown (``close``), bounded at about 600 ms: close stdin, wait briefly, then SIGINT
(100 ms), SIGTERM (400 ms), SIGKILL, each sent to the whole process group. Processes left
in the group after the server itself exited (grandchildren) are killed too.
"""

from __future__ import annotations

import collections
import errno
import logging
import os
import select
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from .._accel import USE_EXTENSIONS, HeldLock, NdjsonSplitter, open_deferred, write_nowait
from ..errors import CommandNotFound, ConnectError, ConnectionClosed, McpError, RequestTimeout
from .._deadline import Deadline
from .base import OnClose, OnMessage, Outgoing

if sys.platform == "win32":  # blocking pipes there; the compiled write is POSIX-only
    from .._speedups_py import write_nowait

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "SAFE_ENV_KEYS", "StdioTransport", "safe_environment"]

log = logging.getLogger("mcp_lite.stdio")
stderr_log = logging.getLogger("mcp_lite.stderr")

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
SAFE_ENV_KEYS = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
        "PROGRAMFILES",
    )
    if sys.platform == "win32"
    else (
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TMPDIR",
        "TZ",
    )
)
# After the last leader left, the reader thread waits this long before it reads again (a
# notification arriving while the connection is idle is delivered at most this late).
_LINGER = 0.2
# On by default with the compiled kernels on POSIX; MCP_LITE_STDIO_LEADER=0 turns it off
# (then the reader thread alone reads, with a blocking read: one more thread hand-off a call).
_LEADING = (
    USE_EXTENSIONS
    and sys.platform != "win32"
    and os.environ.get("MCP_LITE_STDIO_LEADER", "1") != "0"
)
# How long the reader thread, while wanted, waits for bytes before it looks at its state
# again (close() waits up to a second for the pipe).
_HOLD_WAIT = 0.2
_STDERR_TAIL_LINES = 40
_STDERR_TAIL_CHARS = 4000
# One stderr line is kept up to this many bytes; the rest of it is dropped (and counted).
_STDERR_LINE_MAX = 8 * 1024
_STDERR_CHUNK = 16 * 1024
# 64 KiB: large enough for many messages per read, small enough that the buffer comes from
# the allocator's pool rather than an mmap per read (which cost ~40% of a call).
_READ_CHUNK = 64 * 1024
# A blocked write re-checks close() this often (it sleeps in select, never spins).
_WRITE_POLL = 0.25


def safe_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of our environment, then ``extra`` on top.

    Values that look like exported shell functions (``()``...) are left out: they are a
    classic injection vector and no server needs them.
    """
    env = {
        key: value
        for key in SAFE_ENV_KEYS
        if (value := os.environ.get(key)) is not None and not value.startswith("()")
    }
    if extra:
        env.update({str(k): str(val) for k, val in extra.items()})
    return env


class StdioTransport:
    """Runs ``command`` and exchanges NDJSON with it. See the module docstring.

    Args:
        command: the program and its arguments (a list), or one shell-like string split
            with ``shlex`` (no shell is involved).
        env: variables added to the safe environment.
        cwd: working directory of the server.
        max_message_size: the largest frame accepted from the server, in bytes.
        write_timeout: the longest a write may block on a server that stopped reading stdin
            (a request's own deadline, when sooner, bounds it first).
        name: used in log records and error messages.
    """

    def __init__(
        self,
        command: Sequence[str] | str,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        write_timeout: float = 30.0,
        name: str = "",
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ConnectError("stdio server command is empty")
        self.argv = argv
        self.name = name or os.path.basename(argv[0])
        self._env = safe_environment(env)
        self._cwd = cwd
        self._max_message_size = max_message_size
        self._write_timeout = write_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner_pid = os.getpid()
        # Taken through HeldLock (acquire and release in C in the compiled build): a Ctrl-C
        # on a writing or leading main thread can never leave either lock held.
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._closing = False
        self._close_reported = False
        self._on_close: OnClose | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL_LINES)
        self._threads: list[threading.Thread] = []
        self._reader_done = threading.Event()
        self._broken: ConnectionClosed | None = None  # a write tore a frame
        # Leader/follower (see the module docstring): whoever holds _pipe reads stdout.
        self.can_lead = _LEADING
        self._pipe = threading.Lock()
        self._park = threading.Condition(threading.Lock())
        self._leading = False
        self._lead_ended = 0.0
        self._reader_wanted = True
        self._splitter = NdjsonSplitter(max_message_size)
        self._on_message: OnMessage | None = None
        self._written = 0  # bytes of the frame being written (under the write lock)

    # --- facts ------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def dead(self) -> McpError | None:
        """Why this connection is known to be over, before the reader reports it (a server
        already reaped, a torn frame); None when nothing says so. No system call."""
        if self._broken is not None:
            return self._broken
        proc = self._proc
        if proc is None or self._closing or proc.returncode is None:
            return None
        return self._closed_error("MCP server exited")

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr_tail)[-_STDERR_TAIL_CHARS:]

    # --- Transport ----------------------------------------------------------------------------

    def start(
        self, on_message: OnMessage, on_close: OnClose, *, deadline: Deadline | None = None
    ) -> None:
        self._on_close = on_close
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._env,
                cwd=self._cwd,
                start_new_session=sys.platform != "win32",
                close_fds=True,
                bufsize=0,
            )
        except (FileNotFoundError, PermissionError) as exc:
            raise self._not_startable(exc) from exc
        except (NotADirectoryError, OSError) as exc:
            raise ConnectError(f"cannot start MCP server {self.name!r}: {exc}") from exc
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        if sys.platform != "win32":
            os.set_blocking(self._proc.stdin.fileno(), False)
        self._on_message = on_message
        if self.can_lead:
            os.set_blocking(self._proc.stdout.fileno(), False)
            loop = self._read_stdout_shared
        else:
            loop = self._read_stdout
        self._spawn(self._reader, f"mcp-lite-stdio-reader[{self.name}]", loop, on_message)
        self._spawn(self._read_stderr, f"mcp-lite-stdio-stderr[{self.name}]")
        if sys.platform != "win32":
            self._spawn(self._watch_process, f"mcp-lite-stdio-watch[{self.name}]")

    def _not_startable(self, exc: OSError) -> ConnectError:
        """Why the command could not be run, in words: which command, which PATH was
        searched (the server's own environment), or the missing working directory."""
        prefix = f"cannot start MCP server {self.name!r}"
        if self._cwd is not None and not os.path.isdir(self._cwd):
            return ConnectError(f"{prefix}: working directory {str(self._cwd)!r} does not exist")
        command = self.argv[0]
        if isinstance(exc, PermissionError):
            return CommandNotFound(f"{prefix}: {command!r} is not executable (permission denied)")
        if os.sep in command:
            return CommandNotFound(f"{prefix}: command not found: {command!r} (no such file)")
        path = os.get_exec_path(self._env)
        return CommandNotFound(
            f"{prefix}: command not found: {command!r} (searched PATH={os.pathsep.join(path)})"
        )

    def send(self, message: Outgoing) -> None:
        """Write one message, bounded by ``message.deadline`` (and ``write_timeout``).

        Waiting for the write lock counts against the deadline too, so a write stuck on a
        server that stopped reading stdin never holds other callers past their own deadlines.
        A write that times out before its first byte leaves the stream intact (that call
        fails with ``RequestTimeout``); one that times out half-way leaves a torn frame in
        the pipe, so the connection is closed (pending calls fail at once, the Client
        reconnects on the next call).
        """
        proc = self._proc
        if proc is None or proc.stdin is None or self._closing or self._broken is not None:
            raise self._broken or ConnectionClosed(f"MCP server {self.name!r} is not running")
        data = message.data  # (ends in a newline: see Outgoing)
        now = time.monotonic()
        deadline = now + self._write_timeout
        if message.deadline is not None and message.deadline < deadline:
            deadline = message.deadline
        if not USE_EXTENSIONS and threading.current_thread() is threading.main_thread():
            # Pure-Python build, the thread Ctrl-C lands on: no interrupt-proof timed acquire
            # here, so wait (bounded by the deadline) until the lock is free, then take it
            # with a plain ``with`` (interrupt-safe). Another thread may win it in between:
            # then this waits for that write too (rare, and bounded by that write's deadline).
            while self._write_lock.locked():
                if time.monotonic() >= deadline:
                    raise self._write_timed_out(message, "another write is still blocked")
                time.sleep(0.001)
            with self._write_lock:
                self._send_locked(proc, data, deadline, message)
            return
        # HeldLock: the timed acquire and the release are C code (compiled build), so no
        # Ctrl-C can leave the lock held.
        with HeldLock(self._write_lock, deadline - now if deadline > now else 0.0) as got:
            if not got:
                raise self._write_timed_out(message, "another write is still blocked")
            self._send_locked(proc, data, deadline, message)

    def _send_locked(
        self, proc: subprocess.Popen[bytes], data: bytes, deadline: float, message: Outgoing
    ) -> None:
        assert proc.stdin is not None
        try:
            if self._broken is not None or self._closing:
                raise self._broken or ConnectionClosed(f"MCP server {self.name!r} is not running")
            if message.abandoned():
                raise RequestTimeout(
                    f"not sent to MCP server {self.name!r}: its caller already gave up", None
                )
            fd = proc.stdin.fileno()
            written = write_nowait(fd, data)  # the common case: it all fits at once
            if written != len(data):
                self._write_rest(fd, data, written if written > 0 else 0, deadline, message)
        except McpError:  # ours (RequestTimeout is an OSError too): as is
            raise
        except (BrokenPipeError, ConnectionResetError, ValueError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno not in (
                errno.EPIPE,
                errno.EBADF,
                errno.ECONNRESET,
                None,
            ):
                raise
            raise self._closed_error("MCP server stopped reading its input") from exc

    def close(self) -> None:
        with self._state_lock:
            if self._closing:
                return
            self._closing = True
        proc = self._proc
        if proc is None:
            return
        if os.getpid() != self._owner_pid:
            # We are a forked child: the process belongs to our parent. Drop our copies of
            # the pipes and touch nothing else.
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                _quiet_close(stream)
            return
        # A writer blocked on a full pipe notices _closing within _WRITE_POLL; wait for it
        # (briefly) so its fd is never closed under it and reused by another file.
        got = self._write_lock.acquire(timeout=2 * _WRITE_POLL)
        _quiet_close(proc.stdin)
        if got:
            self._write_lock.release()
        _terminate_group(proc)
        with self._park:
            self._park.notify_all()
        # A leader sees EOF once the server is gone; never close the fd under its read.
        piped = self._pipe.acquire(timeout=1.0)
        for stream in (proc.stdout, proc.stderr):
            _quiet_close(stream)
        if piped:
            self._pipe.release()
        self._join_threads(0.5)

    # --- internals --------------------------------------------------------------------------

    def _spawn(self, target: object, name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _join_threads(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in list(self._threads):
            # (a server dying at once can make the reader report before start() has
            # started the other threads: those are not joined)
            if thread is not threading.current_thread() and thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))

    def _write_rest(
        self, fd: int, data: bytes, written: int, deadline: float, message: Outgoing
    ) -> None:
        """The pipe took ``written`` bytes of ``data``: write the rest, within ``deadline``."""
        self._written = written
        try:
            self._write_view(fd, memoryview(data)[written:], data, deadline, message)
        except BaseException:
            # An interrupt (Ctrl-C) between two partial writes leaves a torn frame.
            if not isinstance(sys.exc_info()[1], Exception) and 0 < self._written < len(data):
                self._tear(self._written, len(data))
            raise

    def _write_view(
        self, fd: int, view: memoryview, data: bytes, deadline: float, message: Outgoing
    ) -> None:
        while view:
            written = write_nowait(fd, view)
            if written < 0:  # the pipe is full: wait for room, within the deadline
                remaining = deadline - time.monotonic()
                if self._closing:
                    raise ConnectionClosed(f"the connection to {self.name!r} is closing") from None
                if remaining <= 0:
                    if len(view) < len(data):
                        self._tear(len(data) - len(view), len(data))
                    raise self._write_timed_out(
                        message, "the server is not reading its input"
                    ) from None
                # Sleeps until the pipe has room: no busy loop. Capped so close() is noticed.
                select.select([], [fd], [], min(remaining, _WRITE_POLL))
                continue
            view = view[written:]
            self._written += written

    def _write_timed_out(self, message: Outgoing, why: str) -> RequestTimeout:
        method = message.payload.get("method") or "a response"
        return RequestTimeout(
            f"could not send {method} to MCP server {self.name!r} before its deadline: {why}",
            None,
        )

    def _tear(self, written: int, total: int) -> None:
        """A frame is half in the pipe: nothing after it could be parsed, so the connection
        is over. Report it now (pending calls fail at once) and refuse further writes."""
        error = ConnectionClosed(
            f"MCP server {self.name!r} stopped reading its input in the middle of a message "
            f"({written} of {total} bytes written before the deadline); the stream is "
            "unusable, so the connection was closed"
        )
        self._broken = error
        log.warning("%s", error)
        self._report_close(error)

    def _reader(self, read_loop: Callable[[int, OnMessage], None], on_message: OnMessage) -> None:
        """The reader thread: ``read_loop`` reads stdout until the stream ends; then say how
        it ended (unless we closed it)."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        error: McpError | None = None
        try:
            read_loop(proc.stdout.fileno(), on_message)
        except (OSError, ValueError) as exc:
            if not self._closing:
                error = ConnectionClosed(f"reading from MCP server {self.name!r} failed: {exc}")
        except Exception as exc:  # a bug in routing: report it, never die silently
            log.exception("stdio reader for %r crashed", self.name)
            error = ConnectionClosed(f"internal error reading from {self.name!r}: {exc!r}")
        self._reader_done.set()
        if self._closing:
            return
        self._report_close(error)

    def _read_stdout(self, fd: int, on_message: OnMessage) -> None:
        """The reader thread alone reads: a blocking read, frames to ``on_message``."""
        splitter = NdjsonSplitter(self._max_message_size)
        while True:
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                for last in splitter.flush():
                    on_message(last)
                return
            for frame in splitter.feed(chunk):
                on_message(frame)

    # --- leader/follower ---------------------------------------------------------------------

    def want_reader(self, wanted: bool) -> None:
        """The Connection's say: True when the reader thread must own the pipe now (several
        callers wait, a future is pending, the server talks); False when one caller leads."""
        if not wanted:
            self._reader_wanted = False
        elif not self._reader_wanted:
            with self._park:
                self._reader_wanted = True
                self._park.notify()

    def lead(self, stop: Callable[[], bool], deadline: float) -> bool:
        """Read and route frames on this thread until ``stop()``, ``deadline``, or the
        Connection wants the reader thread back (``want_reader(True)``).

        False (at once) when this build cannot lead or the reader is reading right now:
        the caller then just waits for its answer. Ends early at end of stream or on a
        read error, leaving those to the reader thread to report.
        """
        if not self.can_lead:
            return False
        on_message = self._on_message
        proc = self._proc
        splitter = self._splitter
        with HeldLock(self._pipe, -1.0) as got:
            if not got:
                return False
            try:
                if on_message is None or proc is None or proc.stdout is None or self._closing:
                    return False
                self._leading = True
                fd = proc.stdout.fileno()
                while not (stop() or self._reader_wanted):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._closing:
                        break
                    # The wait is capped so that close() and a moved deadline are noticed.
                    count = splitter.read_into(fd, remaining if remaining < 0.5 else 0.5)
                    splitter.route(on_message)
                    if count < 0:
                        self._reader_wanted = True  # end of stream: the reader reports it
                        break
            except OSError:
                self._reader_wanted = True  # the reader reports the failure
            finally:
                self._leading = False
                self._lead_ended = time.monotonic()
        if self._reader_wanted:
            with self._park:
                self._park.notify()
        return True

    def _read_stdout_shared(self, fd: int, on_message: OnMessage) -> None:
        """The reader thread when callers may lead: wait for data without holding the pipe,
        then read only if nobody leads (see the module docstring)."""
        while self._park_while_led():
            routed = False
            with HeldLock(self._pipe, -1.0) as got:
                if not got:
                    continue  # a leader took the pipe: park until it is done
                # Frames a leader left (it was interrupted) go first, then new bytes.
                # While the reader is wanted (several callers wait, futures pending, the
                # server talks) it keeps the pipe and waits in read_into: one poll and one
                # read per batch, no select and no park round trip. A lone caller that
                # wants to lead finds the pipe taken and waits; its answer is routed here,
                # and then the pipe is let go. (What is already there is read without a
                # wait, with the GIL kept. After routing, the next read waits first, without
                # the GIL: the callers just woken find it free instead of queueing for it.)
                # The callers whose answers are routed here are woken one at a time, each
                # once a thread has let go of the GIL (``route(..., True)``: see ``Gate``);
                # leaving this loop wakes any still queued.
                splitter = self._splitter
                wait = 0.0
                try:
                    while True:
                        count = splitter.read_into(fd, wait)
                        routed = splitter.route(on_message, True) or routed
                        if count < 0:
                            return
                        if self._closing or not self._reader_wanted:
                            break
                        wait = _HOLD_WAIT
                finally:
                    open_deferred()  # no wake-up waits on this thread's next poll
            if not routed:  # wait for bytes without holding the pipe
                select.select([fd], [], [], _LINGER * 25)

    def _park_while_led(self) -> bool:
        """Wait while a caller leads or lingers after leading; False once closing."""
        park = self._park
        with park:
            while not self._closing:
                # (_leading alone could be stale after an interrupt; the lock is not)
                if self._leading and self._pipe.locked():
                    park.wait(_LINGER)
                    continue
                if self._reader_wanted:
                    return True
                idle = time.monotonic() - self._lead_ended
                if idle >= _LINGER:
                    return True
                park.wait(_LINGER - idle)
        return False

    def _watch_process(self) -> None:
        """Report the server's death even when an orphaned grandchild keeps its stdout open
        (the reader then never sees EOF). Blocks in ``wait()``: no polling."""
        proc = self._proc
        assert proc is not None
        proc.wait()
        if self._closing:
            return
        self._reader_done.wait(1.0)  # normally the reader sees EOF and reports first
        if not self._reader_done.is_set():
            log.info("MCP server %r exited but its stdout is still held open", self.name)
            self._report_close(None)

    def _report_close(self, error: McpError | None) -> None:
        proc = self._proc
        assert proc is not None
        if error is None:
            # stdout closed: give the process a moment to exit so we can say how it ended,
            # and the stderr reader a moment to collect its last words.
            try:
                proc.wait(0.5)
            except subprocess.TimeoutExpired:
                pass
            self._join_threads(0.3)
            error = self._closed_error("MCP server closed its output")
        with self._state_lock:
            if self._close_reported or self._closing:
                return
            self._close_reported = True
        if self._on_close is not None:
            self._on_close(error)

    def _closed_error(self, what: str) -> ConnectionClosed:
        code = self.returncode
        if code is not None:
            what = f"MCP server {self.name!r} exited with exit code {code}"
        return ConnectionClosed(what, code, self.stderr_tail())

    def _read_stderr(self) -> None:
        """Drain stderr in chunks; each line is logged and kept in the tail, cut at
        ``_STDERR_LINE_MAX`` bytes (the rest of it is dropped and counted), so a server that
        writes megabytes without a newline costs neither memory nor a syscall per byte."""
        proc = self._proc
        assert proc is not None and proc.stderr is not None
        fd = proc.stderr.fileno()
        line = bytearray()
        dropped = 0
        try:
            while True:
                chunk = os.read(fd, _STDERR_CHUNK)
                if not chunk:
                    break
                *complete, rest = chunk.split(b"\n")
                for piece in complete:
                    room = _STDERR_LINE_MAX - len(line)
                    line += piece[:room]
                    self._stderr_line(line, dropped + max(0, len(piece) - room))
                    line.clear()
                    dropped = 0
                room = _STDERR_LINE_MAX - len(line)
                line += rest[:room]
                dropped += max(0, len(rest) - room)
        except (OSError, ValueError):
            pass
        if line or dropped:
            self._stderr_line(line, dropped)

    def _stderr_line(self, raw: bytes | bytearray, dropped: int) -> None:
        line = raw.decode("utf-8", "replace").rstrip()
        if dropped:
            line += f" [... {dropped} more bytes of this line dropped]"
        if line:
            self._stderr_tail.append(line)
            stderr_log.info("[%s] %s", self.name, line)


def _quiet_close(stream: object) -> None:
    try:
        stream.close()  # type: ignore[attr-defined]
    except Exception:
        pass


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> bool:
    """Send ``sig`` to the server's process group; False when the group is gone."""
    try:
        if sys.platform == "win32":
            proc.send_signal(sig)
        else:
            os.killpg(proc.pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _terminate_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and everything it started, in at most about 600 ms."""
    steps: list[tuple[int | None, float]] = [(None, 0.05)]
    if sys.platform == "win32":
        steps += [(signal.SIGTERM, 0.5)]
    else:
        steps += [(signal.SIGINT, 0.1), (signal.SIGTERM, 0.4)]
    for sig, wait in steps:
        if sig is not None and not _signal_group(proc, sig):
            break
        try:
            proc.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        proc.kill() if sys.platform == "win32" else _signal_group(proc, signal.SIGKILL)
    try:
        proc.wait(1.0)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        log.warning("MCP server pid %s did not die after SIGKILL", proc.pid)
    if sys.platform != "win32":
        # The server is gone; anything still in its group is an orphan it left behind.
        _signal_group(proc, signal.SIGKILL)
