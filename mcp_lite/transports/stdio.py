"""The stdio transport: a server subprocess speaking newline-delimited JSON on its pipes, one
thread per connection polling stdout, stderr, the exit and a wake-up fd, and a blocking caller
that may read its own answer (``lead``). Process start and stop helpers: ``_stdio_process``;
stderr's lines: ``_stdio_stderr``; how it works: ``docs/explanation/inside-the-connection.md``.
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
import weakref
from collections.abc import Callable, Mapping, Sequence

from .. import _fork
from .._accel import USE_EXTENSIONS, HeldLock, NdjsonSplitter, open_deferred, write_nowait
from .._deadline import Deadline
from ..errors import CommandNotFound, ConnectError, ConnectionClosed, McpError, RequestTimeout
from . import _escaped, _reaper
from ._stdio_process import (
    _WAKE,
    SAFE_ENV_KEYS,
    _open_pidfd,
    _quiet_close,
    _quiet_close_fd,
    _signal_group,
    _terminate_group,
    _wake_pipe,
    safe_environment,
)
from ._stdio_stderr import _STDERR_LINE_MAX as _STDERR_LINE_MAX  # (tests read it here)
from ._stdio_stderr import _StderrLines
from .base import OnClose, OnMessage, Outgoing, TransportBase

if sys.platform == "win32":  # blocking pipes there; the compiled write is POSIX-only
    from .._speedups_py import write_nowait

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "SAFE_ENV_KEYS", "StdioTransport", "safe_environment"]

log = logging.getLogger("mcp_lite.stdio")
stderr_log = logging.getLogger("mcp_lite.stderr")

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
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
# The thread's longest wait while idle (it wakes earlier for any of its fds).
_IDLE_WAIT = 5.0
# The server exited but stdout is still open (a grandchild holds it): reported after this.
_HELD_OPEN_GRACE = 1.0
# After stdout ended: how long to wait for stderr's last words, and for the exit code.
_LAST_WORDS = 0.3
_EXIT_WAIT = 0.5
# Without a pidfd, how often the thread asks waitpid whether the server is gone.
_EXIT_POLL = 1.0
# The pidfd said the server exited but another thread held its wait lock: look again after.
_REAP_RETRY = 0.01
_STDERR_TAIL_LINES = 40
_STDERR_TAIL_CHARS = 4000
_STDERR_CHUNK = 16 * 1024
# 64 KiB: large enough for many messages per read, small enough that the buffer comes from
# the allocator's pool rather than an mmap per read (which cost ~40% of a call).
_READ_CHUNK = 64 * 1024
# A blocked write re-checks close() this often (it sleeps in select, never spins).
_WRITE_POLL = 0.25
# close() as a whole, the ~600 ms escalation included, ends within this (seconds).
_CLOSE_LIMIT = 1.2

# Started transports of this process: the after-fork reset drops the child's copies.
_live: weakref.WeakSet[StdioTransport] = weakref.WeakSet()


class StdioTransport(TransportBase):
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
        self._generation = _fork.generation()  # a forked child sees another value
        # Taken through HeldLock (acquire and release in C in the compiled build): a Ctrl-C
        # on a writing or leading main thread can never leave either lock held.
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._closing = False
        self._close_reported = False
        self._group_over = False  # the server reaped, its leftovers killed, the group forgotten
        self._on_close: OnClose | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL_LINES)
        self._threads: list[threading.Thread] = []
        # Set once stderr has been read to its end (or its reader stopped): an error made
        # on a caller's thread waits for it, bounded, so that it quotes the last words.
        self._stderr_ended = threading.Event()
        # The one thread's extra fds (POSIX): the process's pidfd (-1: none) and the wake-up
        # pipe's two ends (one eventfd on Linux); released once, under _fd_lock, by the
        # thread when it ends. (One
        # list: past 29 attributes CPython stops sharing an instance's keys and every
        # attribute read on the call path gets slower.)
        self._fds = [-1, -1, -1]
        self._fd_lock = threading.Lock()
        self._parked = False  # the thread waits without stdout: wake it to hand it back
        self._broken: ConnectionClosed | None = None  # a write tore a frame
        # Leader/follower (see the module docstring): whoever holds _pipe reads stdout.
        self.can_lead = _LEADING
        self._pipe = threading.Lock()
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
        """Spawn the server (start waits for nothing else: the handshake is the session's).
        Past ``deadline``, nothing is started."""
        if deadline is not None:
            deadline.check("connecting", f"MCP server {self.name!r} was not started")
        self._on_close = on_close
        self._generation = _fork.generation()
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
            _reaper.watch(self._proc.pid)  # its group: pgid == pid (a session of its own)
            _live.add(self)
            os.set_blocking(self._proc.stdin.fileno(), False)
        self._on_message = on_message
        if sys.platform == "win32":
            self._spawn(self._reader, f"mcp-lite-stdio-reader[{self.name}]", on_message)
            self._spawn(self._read_stderr, f"mcp-lite-stdio-stderr[{self.name}]")
            return
        os.set_blocking(self._proc.stdout.fileno(), False)
        os.set_blocking(self._proc.stderr.fileno(), False)
        self._fds = [_open_pidfd(self._proc.pid), *_wake_pipe()]
        self._spawn(self._run, f"mcp-lite-stdio[{self.name}]", on_message)

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
        limit = message.deadline  # the caller's, capped by write_timeout
        deadline = (
            Deadline.after(self._write_timeout)
            if limit is None
            else limit.earlier(self._write_timeout)
        )
        if not USE_EXTENSIONS and threading.current_thread() is threading.main_thread():
            # Pure-Python build, the thread Ctrl-C lands on: no interrupt-proof timed acquire
            # here, so wait (bounded by the deadline) until the lock is free, then take it
            # with a plain ``with`` (interrupt-safe). Another thread may win it in between:
            # then this waits for that write too (rare, and bounded by that write's deadline).
            while self._write_lock.locked():
                if deadline.expired():
                    raise self._write_timed_out(message, "another write is still blocked")
                time.sleep(0.001)
            with self._write_lock:
                self._send_locked(proc, data, deadline, message)
            return
        # HeldLock: the timed acquire and the release are C code (compiled build), so no
        # Ctrl-C can leave the lock held.
        with HeldLock(self._write_lock, deadline.remaining()) as got:
            if not got:
                raise self._write_timed_out(message, "another write is still blocked")
            self._send_locked(proc, data, deadline, message)

    def _send_locked(
        self, proc: subprocess.Popen[bytes], data: bytes, deadline: Deadline, message: Outgoing
    ) -> None:
        """``send``'s write, holding the write lock."""
        assert proc.stdin is not None
        try:
            if self._broken is not None or self._closing:
                raise self._broken or ConnectionClosed(f"MCP server {self.name!r} is not running")
            if message.abandoned():
                raise self._given_up()
            fd = proc.stdin.fileno()
            written = write_nowait(fd, data)  # the common case: it all fits at once
            if written != len(data):
                self._write_rest(fd, data, written if written > 0 else 0, deadline, message)
        except McpError:  # ours (RequestTimeout is an OSError too): as is
            raise
        except (BrokenPipeError, ConnectionResetError, ValueError, OSError) as exc:
            error = self._write_failed(exc, deadline)
            if error is exc:
                raise
            raise error from exc

    def _given_up(self) -> RequestTimeout:
        return RequestTimeout(
            f"not sent to MCP server {self.name!r}: its caller already gave up", None
        )

    def _write_failed(self, exc: Exception, deadline: Deadline) -> Exception:
        """A write failed: the server stopped reading (a closed pipe) in words; an
        unexpected OSError as it is."""
        if isinstance(exc, OSError) and exc.errno not in (
            errno.EPIPE,
            errno.EBADF,
            errno.ECONNRESET,
            None,
        ):
            return exc
        self._last_words(deadline)
        return self._closed_error("MCP server stopped reading its input")

    def _last_words(self, deadline: Deadline) -> None:
        """On a caller's thread, about to quote the stderr tail of a server that is gone or
        going: wait (up to ``_LAST_WORDS`` in all, within ``deadline``) until the
        connection's thread has read stderr to its end, then for the exit code. A server
        that exits at once is often seen so by a write first, before its thread got to the
        words that say why."""
        if threading.current_thread() in self._threads:
            return
        end = time.monotonic() + deadline.bound(_LAST_WORDS)
        if not self._stderr_ended.is_set() and end > time.monotonic():
            self._stderr_ended.wait(end - time.monotonic())
        # ... and its exit code. Popen.poll() answers None while another thread holds the
        # process's wait lock (the connection's thread in its waitpid check), so a gone
        # server could be quoted without its code: wait for it within the same budget.
        proc = self._proc
        if proc is not None and proc.returncode is None and self._stderr_ended.is_set():
            left = end - time.monotonic()
            if left > 0:
                try:
                    proc.wait(left)
                except subprocess.TimeoutExpired:
                    pass  # alive with stderr closed: quoted without a code

    def close(self) -> None:
        """Stop the server and its group; idempotent; ends within ``_CLOSE_LIMIT``."""
        if self._generation != _fork.generation():
            self._drop_inherited()  # (the after-fork reset did it already; no lock here)
            return
        with self._state_lock:
            if self._closing:
                return
            self._closing = True
        proc = self._proc
        if proc is None:
            return
        deadline = Deadline.after(_CLOSE_LIMIT)
        # Its descendants outside its group (setsid), found while it still runs: at end of
        # input it may exit and leave them to init, out of reach (Linux; see _escaped).
        escaped = None
        if sys.platform != "win32" and proc.returncode is None:
            escaped = _escaped.Escaped(proc.pid, proc.pid)
        # stdin first: a well-behaved server exits at end of input. A writer blocked on a
        # full pipe notices _closing within _WRITE_POLL; its fd is never closed under it
        # (it could be reused by another file), so then stdin waits until after the kill.
        stdin_closed = self._close_stdin(proc, 0.05)
        _terminate_group(proc, deadline)
        if escaped is not None:
            escaped.kill()
        if sys.platform != "win32":
            self._end_group(proc, deadline)
        if not stdin_closed:
            self._close_stdin(proc, deadline.bound(2 * _WRITE_POLL))
        self._wake()
        # The thread ends before its fds are closed (one closed under its poll could be
        # reused by another file), and a leader sees EOF once the server is gone.
        self._join_threads(deadline.bound(0.5))
        piped = self._pipe.acquire(timeout=deadline.bound(1.0))
        for stream in (proc.stdout, proc.stderr):
            _quiet_close(stream)
        if piped:
            self._pipe.release()
        if not any(thread.is_alive() for thread in self._threads):
            self._release_fds()  # (the thread does it as it ends; this covers no thread)

    def _close_stdin(self, proc: subprocess.Popen[bytes], wait: float) -> bool:
        if not self._write_lock.acquire(timeout=wait):
            return False
        try:
            _quiet_close(proc.stdin)
        finally:
            self._write_lock.release()
        return True

    def _drop_inherited(self) -> None:
        """In a forked child: the server, its pipes and the threads are the parent's. Drop
        our copies of the pipes, never write to them, take no lock (another thread may
        have held one at fork time), signal nothing."""
        self._closing = True
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._pipe = threading.Lock()
        self._fd_lock = threading.Lock()
        self._threads = []
        proc = self._proc
        if proc is not None:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                _quiet_close(stream)
        fds, self._fds = self._fds, [-1, -1, -1]
        for fd in set(fds):
            _quiet_close_fd(fd)

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
        self, fd: int, data: bytes, written: int, deadline: Deadline, message: Outgoing
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
        self, fd: int, view: memoryview, data: bytes, deadline: Deadline, message: Outgoing
    ) -> None:
        while view:
            written = write_nowait(fd, view)
            if written < 0:  # the pipe is full: wait for room, within the deadline
                remaining = deadline.remaining()
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

    def _reader(self, on_message: OnMessage) -> None:
        """The reader thread (Windows): read stdout until the stream ends; then say how it
        ended (unless we closed it)."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        error: McpError | None = None
        try:
            self._read_stdout(proc.stdout.fileno(), on_message)
        except (OSError, ValueError) as exc:
            if not self._closing:
                error = ConnectionClosed(f"reading from MCP server {self.name!r} failed: {exc}")
        except Exception as exc:  # a bug in routing: report it, never die silently
            log.exception("stdio reader for %r crashed", self.name)
            error = ConnectionClosed(f"internal error reading from {self.name!r}: {exc!r}")
        if self._closing:
            return
        self._report_close(error)

    def _read_stdout(self, fd: int, on_message: OnMessage) -> None:
        """The reader thread alone reads (Windows): a blocking read, frames to
        ``on_message``."""
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
            self._reader_wanted = True
            if self._parked:  # (the thread sets _parked, then looks at _reader_wanted)
                self._wake()

    def lead(self, stop: Callable[[], bool], deadline: Deadline, cap: float = 0.5) -> bool:
        """Read and route frames on this thread until ``stop()``, ``deadline``, or the
        Connection wants the reader thread back (``want_reader(True)``). ``stop()`` is
        looked at after each read, and a read waits at most ``cap`` seconds (a caller's
        ``cancel_event`` is seen that soon: nothing wakes a thread in poll for it).

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
                # Read and route until stop(), the deadline, want_reader(True) or close():
                # one kernel call (its waits are capped so that close() is noticed).
                fd = proc.stdout.fileno()
                if splitter.lead(fd, stop, deadline.at, on_message, self, cap) < 0:
                    self._reader_wanted = True  # end of stream: the reader reports it
            except OSError:
                self._reader_wanted = True  # the reader reports the failure
            finally:
                self._leading = False
                self._lead_ended = time.monotonic()
        if self._reader_wanted and self._parked:
            self._wake()
        return True

    # --- the one thread (POSIX) ------------------------------------------------------------

    def _run(self, on_message: OnMessage) -> None:
        """The connection's thread: serve stdout, stderr and the exit until all have ended
        or close() (see the module docstring); say how the stream ended, unless we closed
        it. Its pidfd and wake-up pipe are released as it ends."""
        error: McpError | None = None
        try:
            error = self._serve(on_message)
        except (OSError, ValueError) as exc:
            if not self._closing:
                error = ConnectionClosed(f"reading from MCP server {self.name!r} failed: {exc}")
        except Exception as exc:  # a bug in routing: report it, never die silently
            log.exception("stdio thread for %r crashed", self.name)
            error = ConnectionClosed(f"internal error reading from {self.name!r}: {exc!r}")
        finally:
            self._stderr_ended.set()  # (whatever it read of stderr is in the tail now)
            self._release_fds()
        proc = self._proc
        if proc is not None and proc.returncode is not None and not self._closing:
            self._end_group(proc)  # (reaped by another thread's wait: the loop saw no exit)
        if error is not None and not self._closing:
            self._report_close(error)

    def _serve(self, on_message: OnMessage) -> McpError | None:
        """The thread's loop. Returns an error still to report (a read failed), else None
        (how the stream ended is reported from here)."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        out = proc.stdout.fileno()
        watch = _Watched(self, proc.stderr.fileno(), self._fds[0], self._fds[1])
        splitter = self._splitter
        reported = False
        ended_at = 0.0  # when stdout ended
        next_check = 0.0  # no pidfd: the next waitpid check
        while not self._closing:
            now = time.monotonic()
            # 1. what is over: the exit, stdout held open after it, stdout's end
            if not watch.exit_at and (watch.exited or (not watch.has_pidfd and now >= next_check)):
                next_check = now + _EXIT_POLL
                if watch.exited or _exited(proc.pid):
                    # its last words are in the pipe now: into the tail before poll()
                    # publishes the exit, which dead() on a caller's thread quotes at once
                    watch.drain_stderr()
                if proc.poll() is not None:
                    watch.exited = False
                    self._end_group(proc)
                    watch.exit_at = now
                # else, after the pidfd said so: poll() answers None while another thread
                # holds the process's wait lock; watch.exited stays set, to look again soon
            wait = _IDLE_WAIT
            if not reported:
                if watch.out_open and watch.exit_at:
                    left = watch.exit_at + _HELD_OPEN_GRACE - now
                    if left <= 0:
                        log.info(
                            "MCP server %r exited but its stdout is still held open", self.name
                        )
                        reported = True
                        self._report_close(self._closed_error("MCP server closed its output"))
                    else:
                        wait = left
                elif not watch.out_open:
                    since = now - ended_at
                    if since < _LAST_WORDS and watch.err >= 0:
                        wait = _LAST_WORDS - since  # stderr's last words
                    elif proc.returncode is None and since < _EXIT_WAIT and watch.pidfd >= 0:
                        wait = _EXIT_WAIT - since  # the exit, through the pidfd
                    else:
                        if proc.returncode is None and since < _EXIT_WAIT:
                            _reap_within(proc, watch, _EXIT_WAIT - since)  # no pidfd
                        reported = True
                        self._report_close(self._closed_error("MCP server closed its output"))
            if (
                not watch.out_open
                and watch.err < 0
                and (proc.returncode is not None or not watch.has_pidfd)
            ):
                return None  # everything has ended
            if watch.exited and not watch.exit_at:
                wait = min(wait, _REAP_RETRY)
            elif not watch.exit_at and watch.pidfd < 0:
                wait = min(wait, _EXIT_POLL)  # (no pidfd: the waitpid check)
            # 2. stdout, unless a caller leads or has just led
            if watch.out_open and not self._closing:
                step = 2
                if self._led_for() <= 0:
                    with HeldLock(self._pipe, -1.0) as got:
                        if got:
                            step = self._own_stdout(out, splitter, on_message, watch)
                    if step < 0:
                        watch.out_open = False
                        ended_at = time.monotonic()
                    if step <= 0:  # read (0), or at its end (-1): look again
                        continue
                # Parked: _parked first, then the flags (want_reader and lead() set theirs,
                # then look at _parked to wake us).
                self._parked = True
                try:
                    if step == 1:  # quiet, and nobody waits: wait for bytes, unheld
                        if not self._reader_wanted:
                            watch.wait(out, min(wait, _IDLE_WAIT))
                    else:  # a caller leads or has just led: stdout is not ours
                        held = self._led_for()
                        if held > 0:
                            watch.wait(-1, min(wait, held))
                finally:
                    self._parked = False
                continue
            watch.wait(-1, wait)
        return None

    def _led_for(self) -> float:
        """0 when the thread may take stdout now; else how long to wait first (a caller
        leads, or lingers after leading)."""
        # (_leading alone could be stale after an interrupt; the lock is not)
        if self._leading and self._pipe.locked():
            return _LINGER
        if self._reader_wanted:
            return 0.0
        idle = time.monotonic() - self._lead_ended
        return 0.0 if idle >= _LINGER else _LINGER - idle

    def _own_stdout(
        self, fd: int, splitter: NdjsonSplitter, on_message: OnMessage, watch: _Watched
    ) -> int:
        """Holding the pipe: read and route stdout. While the reader is wanted (several
        callers wait, futures pending, the server talks) it keeps the pipe and waits in
        one poll for stdout and the watched fds: one poll and one read per batch, no park
        round trip; a watched fd or a quiet pipe hands back to the loop. Returns -1 at the
        end of stdout, 1 when nothing came and nobody waits, else 0."""
        # Frames a leader left (it was interrupted) go first, then new bytes. What is
        # already there is read without a wait, with the GIL kept. After routing, the next
        # read waits first, without the GIL: the callers just woken find it free instead of
        # queueing for it. They are woken one at a time, each once a thread has let go of
        # the GIL (``route(..., True)``: see ``Gate``); leaving wakes any still queued.
        routed = False
        try:
            count = splitter.read_into(fd, 0.0)
            while True:
                routed = splitter.route(on_message, True) or routed
                if count < 0:
                    return -1
                if self._closing or not self._reader_wanted:
                    break
                count = splitter.read_watching(fd, _HOLD_WAIT, watch.err, watch.pidfd, watch.wake)
                if splitter.woke:
                    splitter.route(on_message, True)
                    watch.handle(splitter.woke)
                    if count < 0:
                        return -1
                    break
                if count == 0:  # quiet (or a partial frame): let the loop look around
                    break
        finally:
            open_deferred()  # no wake-up waits on this thread's next poll
        # Nothing came and nobody waits: the loop waits for bytes without holding the pipe
        # (a caller that comes to lead takes it meanwhile).
        return 1 if not routed and not self._reader_wanted else 0

    def _end_group(self, proc: subprocess.Popen[bytes], deadline: Deadline | None = None) -> None:
        """The server is reaped (it exited, crashed or was stopped by close()): kill what it
        left in its group at once, as close() does, and forget the group. Once: from then on
        the id is free and may soon be another process group's, never to be signalled."""
        with self._state_lock:
            if self._group_over:
                return
            self._group_over = True
        _signal_group(proc, signal.SIGKILL)  # (ProcessLookupError: it was empty)
        _reaper.forget(proc.pid, deadline)

    def _wake(self) -> None:
        """Wake the thread from its poll (a byte on the wake-up pipe). Under _fd_lock, so
        the pipe is never closed (and its number reused) under the write; HeldLock, as a
        leading main thread may be interrupted here."""
        with HeldLock(self._fd_lock, 1.0) as got:
            if got and self._fds[2] >= 0:
                try:
                    os.write(self._fds[2], _WAKE)
                except OSError:  # full (it is awake anyway) or gone
                    pass

    def _release_fds(self) -> None:
        with HeldLock(self._fd_lock, 1.0):
            fds, self._fds = self._fds, [-1, -1, -1]
        for fd in set(fds):
            _quiet_close_fd(fd)

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
        """The stderr thread (Windows): drain stderr in chunks (see ``_StderrLines``)."""
        proc = self._proc
        assert proc is not None and proc.stderr is not None
        fd = proc.stderr.fileno()
        lines = _StderrLines(self)
        try:
            while chunk := os.read(fd, _STDERR_CHUNK):
                lines.feed(chunk)
        except (OSError, ValueError):
            pass
        lines.end()

    def _stderr_line(self, raw: bytes | bytearray, dropped: int, shown: bool) -> None:
        """A line of stderr has ended: log it and keep it in the tail (``shown``: the
        tail's last entry is this line as read so far, replaced now)."""
        line = raw.decode("utf-8", "replace").rstrip()
        if dropped:
            line += f" [... {dropped} more bytes of this line dropped]"
        if shown:
            self._stderr_tail[-1] = line  # (one step: a reader sees it once, old or new)
        elif line:
            self._stderr_tail.append(line)
        if line:
            stderr_log.info("[%s] %s", self.name, line)


_REAP_POLL = 0.005  # the bounded wait for an exit with no pidfd (Popen.wait polls alike)
_DRAIN_CHUNKS = 16  # stderr read at an exit without waiting: the tail keeps less anyway


def _exited(pid: int) -> bool:
    """True when the process has exited (or was reaped elsewhere), without reaping it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True
    except (AttributeError, OSError):  # no waitid here: poll() alone decides
        return False


def _reap_within(proc: subprocess.Popen[bytes], watch: _Watched, seconds: float) -> None:
    """Wait up to ``seconds`` for the exit (as ``Popen.wait`` would, polling), read its last
    words from stderr, then reap it: the exit is published with them in the tail."""
    end = time.monotonic() + seconds
    while not _exited(proc.pid) and time.monotonic() < end:
        time.sleep(_REAP_POLL)
    watch.drain_stderr()
    proc.poll()


class _Watched:
    """What the one thread waits on besides reading stdout: stderr (``err``, -1 once it
    ended), the process's pidfd (-1: none, or its exit was seen) and the wake-up pipe."""

    def __init__(self, transport: StdioTransport, err: int, pidfd: int, wake: int) -> None:
        self.err, self.pidfd, self.wake = err, pidfd, wake
        self.has_pidfd = pidfd >= 0
        self.out_open = True
        self.exited = False  # the pidfd says the server exited (not reaped yet)
        self.exit_at = 0.0  # when the thread saw it reaped
        self.lines = _StderrLines(transport)

    def handle(self, woke: int) -> None:
        """Act on the watched fds that were ready (bits 1 err, 2 pidfd, 4 wake)."""
        if woke & 1:
            try:
                chunk = os.read(self.err, _STDERR_CHUNK)
            except (BlockingIOError, InterruptedError):
                chunk = None
            except OSError:
                chunk = b""
            if chunk is not None:
                if chunk:
                    self.lines.feed(chunk)
                else:
                    self.err = -1
                    self.lines.end()
        if woke & 2:
            self.exited = True
            self.pidfd = -1  # (it stays readable: never poll it again)
        if woke & 4:
            try:
                while os.read(self.wake, 512):
                    pass
            except OSError:
                pass

    def drain_stderr(self) -> None:
        """Read what stderr holds now, without waiting (at most ``_DRAIN_CHUNKS`` reads)."""
        for _ in range(_DRAIN_CHUNKS):
            if self.err < 0:
                return
            try:
                chunk = os.read(self.err, _STDERR_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.err = -1
                self.lines.end()
                return
            self.lines.feed(chunk)

    def wait(self, out: int, timeout: float) -> None:
        """Wait up to ``timeout`` s for the watched fds, and for ``out`` to be readable (if
        >= 0; it is not read here), then act on the watched ones."""
        poller = select.poll()
        for fd in (out, self.err, self.pidfd, self.wake):
            if fd >= 0:
                poller.register(fd, select.POLLIN)
        ready = dict(poller.poll(int(timeout * 1000) + 1 if timeout > 0 else 0))
        woke = (
            (1 if ready.get(self.err) else 0)
            | (2 if ready.get(self.pidfd) else 0)
            | (4 if ready.get(self.wake) else 0)
        )
        if woke:
            self.handle(woke)


@_fork.on_child
def _after_fork() -> None:
    for transport in list(_live):
        transport._drop_inherited()
    _live.clear()
