"""The reaper: stdio servers die with the process that owns their client, by any death. Each
owning process has one small watcher process (``/bin/sh``, started at the first stdio spawn,
ended once no server is left), joined to the owner by a pipe whose write end only the owner
holds and told ``+pgid``/``-pgid`` as servers start and end; when the pipe ends (the owner is
gone, however it ended) it stops every group still registered. Why this design, and what it
cannot guarantee: ``docs/explanation/inside-the-connection.md``.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading
import time

from .. import _fork
from .._deadline import Deadline

__all__ = ["MARKER", "forget", "watch"]

log = logging.getLogger("mcp_lite.stdio")

# An argv element of every watcher: tests and operators tell it from a leaked server by this.
MARKER = "mcp-lite-reaper"
# Between SIGTERM and SIGKILL (a server such as ``docker run`` gets to stop what it runs).
_GRACE = 0.5
_SUPPORTED = sys.platform != "win32" and hasattr(os, "posix_spawn")

# The watcher's whole program (POSIX sh). It keeps the registered groups in a
# space-separated list and never takes a group <= 1 (kill -TERM -1 would reach every process).
_PROGRAM = f"""\
cd /
groups=' '
while read -r line; do
    group=${{line#?}}
    case $group in ''|*[!0-9]*|0|1) continue ;; esac
    case $line in
        +*) groups="$groups$group " ;;
        -*) case $groups in *" $group "*) groups="${{groups%% $group *}} ${{groups#* $group }}" ;; esac ;;
    esac
done
case $groups in *[0-9]*) ;; *) exit 0 ;; esac
for group in $groups; do kill -TERM "-$group"; done
sleep {_GRACE}
for group in $groups; do kill -KILL "-$group"; done
"""
_SHELL = "/bin/sh"
# How long the last forget() waits for the watcher to exit when no caller's deadline bounds
# it (it exits within a millisecond: it has nothing left to do); one still running then is
# collected at the next spawn or forget.
_EXIT_WAIT = 0.5

_lock = threading.Lock()
_write_fd: int | None = None  # the owner's end of the pipe; None while no watcher runs
_pipe_id: tuple[int, int] | None = None  # its (st_dev, st_ino): the fd number may be reused
_watcher: int | None = None  # its pid (our child)
_retired: list[int] = []  # watchers that ended or were told to end, not yet reaped
_groups: set[int] = set()  # registered with the watcher, not yet forgotten
_unavailable = False  # no watcher could start here: said once


def watch(pgid: int) -> None:
    """Register a server's process group: it is killed if this process dies first."""
    if not _SUPPORTED or pgid <= 1:
        return
    with _lock:
        _groups.add(pgid)
        _tell(b"+%d\n" % pgid)


def forget(pgid: int, deadline: Deadline | None = None) -> None:
    """The group is over (the server reaped, what it left killed): never signal it again.

    The last group forgotten ends the watcher; it is reaped here, waiting for it within
    ``deadline`` (else ``_EXIT_WAIT``)."""
    if not _SUPPORTED:
        return
    with _lock:
        if pgid not in _groups:
            return
        _groups.discard(pgid)
        # (a line not delivered stays in the watcher's view: keep it running, the pipe open)
        ending = _end_idle() if _tell(b"-%d\n" % pgid) else None
    if ending is not None:
        _collect(ending, _EXIT_WAIT if deadline is None else deadline.bound(_EXIT_WAIT))


def watcher_pid() -> int | None:
    """The pid of this process's watcher, None while none runs (for tests)."""
    return _watcher


def _tell(line: bytes) -> bool:
    """Write one line to the watcher (under ``_lock``), starting one first when needed.

    The write never blocks (the pipe is non-blocking; a line is far below ``PIPE_BUF``, so it
    goes in whole or not at all). A watcher found dead, or a pipe found closed by someone
    else, is replaced and the new watcher told every live group. False when the line (or
    the registrations that replace it) could not be delivered.
    """
    if _write_fd is not None and not _pipe_is_ours():
        log.warning(
            "mcp_lite: the stdio server watcher's pipe was closed by the application "
            "(fds closed after fork or when daemonizing?); starting a new watcher"
        )
        _lose_pipe()
    if _write_fd is None:
        if not _groups:
            return True
        if not _start():
            return False
        line = _registrations()
    assert _write_fd is not None
    try:
        os.write(_write_fd, line)
        return True
    except BlockingIOError:
        log.warning("mcp_lite: the server watcher is not reading; a registration was dropped")
        return False
    except OSError as exc:
        if exc.errno != errno.EPIPE:  # never fail a connect for the watcher's sake
            log.warning("mcp_lite: the stdio server watcher could not be told: %s", exc)
            return False
    # The watcher died (someone killed it): start another one and tell it everything.
    log.warning("mcp_lite: the stdio server watcher exited; starting a new one")
    _lose_pipe(close=True)
    if not _groups:
        return True
    if not _start():
        return False
    assert _write_fd is not None
    try:
        os.write(_write_fd, _registrations())
    except OSError as exc:
        log.warning("mcp_lite: the new server watcher could not be told: %s", exc)
        return False
    return True


def _registrations() -> bytes:
    return b"".join(b"+%d\n" % group for group in sorted(_groups))


def _pipe_is_ours() -> bool:
    """Our write end is still at ``_write_fd``: an application that closed all its fds may
    have opened another file under that number since (its log: never ours to write)."""
    if _write_fd is None:
        return False
    try:
        stat = os.fstat(_write_fd)
    except OSError:
        return False
    return (stat.st_dev, stat.st_ino) == _pipe_id


def _lose_pipe(close: bool = False) -> None:
    """Stop using the pipe (closing it only when ``close``: it is still ours) and retire its
    watcher, which has seen the pipe's end or will (it is reaped later)."""
    global _write_fd, _pipe_id, _watcher
    if close and _write_fd is not None:
        try:
            os.close(_write_fd)
        except OSError:
            pass
    _write_fd = _pipe_id = None
    if _watcher is not None:
        _retired.append(_watcher)
        _watcher = None
    _reap_retired()


def _end_idle() -> int | None:
    """No group left (under ``_lock``): close the pipe, so the watcher exits, and return its
    pid for ``_collect``; None when there is nothing to end."""
    global _write_fd, _pipe_id, _watcher
    if _groups or _write_fd is None or not _pipe_is_ours():
        return None
    try:
        os.close(_write_fd)
    except OSError:
        pass
    _write_fd = _pipe_id = None
    pid, _watcher = _watcher, None
    return pid


def _collect(pid: int, within: float) -> None:
    """Reap a watcher told to exit (not under ``_lock``), waiting up to ``within`` s;
    one still running then is left to ``_reap_retired``."""
    end = time.monotonic() + within
    pause = 0.0005
    while not _reaped(pid):
        left = end - time.monotonic()
        if left <= 0:
            with _lock:
                _retired.append(pid)
            return
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.02)


def _reaped(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:  # (the application reaped it: a wait loop of its own)
        return True


def _reap_retired() -> None:
    """Collect the watchers that have ended since (under ``_lock``; never waits)."""
    _retired[:] = [pid for pid in _retired if not _reaped(pid)]


def _start() -> bool:
    """Start this process's watcher (under ``_lock``); do not wait for it. False if none
    could start (then a server outlives this process if it is killed)."""
    global _write_fd, _pipe_id, _watcher, _unavailable
    if _unavailable:
        return False
    _reap_retired()
    read_fd, write_fd = os.pipe()  # both O_CLOEXEC: nothing else ever inherits them
    try:
        _watcher = os.posix_spawn(
            _SHELL,
            [_SHELL, "-c", _PROGRAM, MARKER, str(os.getpid())],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read_fd, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
            ],
            setsid=True,
        )
    except (OSError, NotImplementedError) as exc:  # (setsid: a libc without it)
        os.close(write_fd)
        _unavailable = True
        log.warning("mcp_lite: the stdio server watcher could not start: %s", exc)
        return False
    finally:
        os.close(read_fd)
    os.set_blocking(write_fd, False)
    stat = os.fstat(write_fd)
    _write_fd, _pipe_id = write_fd, (stat.st_dev, stat.st_ino)
    return True


@_fork.on_child
def _after_fork() -> None:
    """A forked child: the watcher and the groups are the parent's. Close our copy of the
    pipe (else the parent's death would go unseen while we live; only if that fd is still
    the pipe); our own spawns start our own watcher."""
    global _lock, _write_fd, _pipe_id, _watcher
    _lock = threading.Lock()  # another thread may have held it at fork time
    if _pipe_is_ours():
        assert _write_fd is not None
        try:
            os.close(_write_fd)
        except OSError:
            pass
    _write_fd = _pipe_id = _watcher = None  # (the parent's child, not ours)
    _retired.clear()
    _groups.clear()
