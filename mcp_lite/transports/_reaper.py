"""The reaper: stdio servers die with the process that owns their client, by any death.

``close()``, ``atexit`` and the garbage collector stop a stdio server when its owner ends
normally. None of them runs when the owner is SIGKILLed (the OOM killer, a Celery hard time
limit), or leaves with ``os._exit`` (Celery's prefork pool does): the server, in its own
session, would run on under init. So each owning process has one small watcher process:

- started lazily at the first stdio spawn (``watch``), never waited for: one
  ``os.posix_spawn`` of ``/bin/sh -c <program> mcp-lite-reaper <owner pid>`` (about half a
  millisecond in the owner, once per process; about 1 MB of memory; nothing per call). A
  shell, not ``sys.executable``: it starts in a millisecond (no interpreter competing with
  the server's start for the CPU) and exists where ``sys.executable`` is no Python (uWSGI,
  frozen apps). No ``Popen`` object: none warns at exit that the watcher still runs (it
  must);
- joined to the owner by a pipe whose write end only the owner holds: ``O_CLOEXEC`` (no
  server or other program inherits it), and closed in a forked child by the after-fork reset
  (a child gets a watcher of its own at its own first spawn);
- told ``+pgid`` when a server starts and ``-pgid`` once it is reaped with its whole group
  (``forget``); it never kills a group that is no longer registered, so a reused pid or
  process group id is never a stranger's;
- when the pipe ends (the owner is gone, however it ended: the kernel closes its fds) it
  sends SIGTERM to every group still registered, SIGKILL ``_GRACE`` later to those still
  there, and exits. It runs in its own session (a Ctrl-C or a signal to the owner's process
  group does not reach it), from ``/``, stdin the pipe, stdout and stderr ``/dev/null``, and
  no other fd but those the application itself marked inheritable (Python's are not).

The pipe buffers what the owner wrote, so a watcher still starting when its owner dies
reads the registrations, then the end of the pipe, and does its job all the same. One
window is left: the owner killed between the server's ``exec`` and its ``+pgid`` (a few
microseconds). A fork made outside Python (no after-fork hooks) keeps the write end open;
the watcher then acts when the last holder is gone.

``PR_SET_PDEATHSIG`` is not used: on Linux it fires when the *thread* that spawned the
server exits (a Hub connects from worker threads), and it reaches only the server, not what
the server started. The pipe watcher works the same on Linux, macOS and the BSDs. Windows
has no process groups of this kind: there ``watch`` and ``forget`` do nothing and a server
outlives an owner that is killed.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading

from .. import _fork

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

_lock = threading.Lock()
_write_fd: int | None = None  # the owner's end of the pipe; None until the first spawn
_watcher: int | None = None  # its pid (our child)
_groups: set[int] = set()  # registered with the watcher, not yet forgotten
_unavailable = False  # no watcher could start here: said once


def watch(pgid: int) -> None:
    """Register a server's process group: it is killed if this process dies first."""
    if not _SUPPORTED or pgid <= 1:
        return
    with _lock:
        _groups.add(pgid)
        _tell(b"+%d\n" % pgid)


def forget(pgid: int) -> None:
    """The group was reaped (or is known to be empty): never signal it again."""
    if not _SUPPORTED:
        return
    with _lock:
        if pgid in _groups:
            _groups.discard(pgid)
            _tell(b"-%d\n" % pgid)


def watcher_pid() -> int | None:
    """The pid of this process's watcher, None before the first stdio spawn (for tests)."""
    return _watcher


def _tell(line: bytes) -> None:
    """Write one line to the watcher (under ``_lock``), starting one first when needed.

    The write never blocks (the pipe is non-blocking; a line is far below ``PIPE_BUF``, so it
    goes in whole or not at all). A watcher found dead is replaced and told every live group.
    """
    global _write_fd
    if _write_fd is None and not _start():
        return
    assert _write_fd is not None
    try:
        os.write(_write_fd, line)
        return
    except BlockingIOError:
        log.warning("mcp_lite: the server watcher is not reading; a registration was dropped")
        return
    except OSError as exc:
        if exc.errno != errno.EPIPE:  # never fail a connect for the watcher's sake
            log.warning("mcp_lite: the stdio server watcher could not be told: %s", exc)
            return
    # The watcher died (someone killed it): start another one and tell it everything.
    log.warning("mcp_lite: the stdio server watcher exited; starting a new one")
    _drop_pipe()
    _reap_watcher()
    if _start():
        assert _write_fd is not None
        try:
            os.write(_write_fd, b"".join(b"+%d\n" % group for group in _groups))
        except OSError as exc:
            log.warning("mcp_lite: the new server watcher could not be told: %s", exc)


def _start() -> bool:
    """Start this process's watcher (under ``_lock``); do not wait for it. False if none
    could start (then a server outlives this process if it is killed)."""
    global _write_fd, _watcher, _unavailable
    if _unavailable:
        return False
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
    _write_fd = write_fd
    return True


def _reap_watcher() -> None:
    """A watcher found dead is our child: collect it (no zombie)."""
    global _watcher
    if _watcher is not None:
        try:
            os.waitpid(_watcher, os.WNOHANG)
        except ChildProcessError:
            pass
        _watcher = None


def _drop_pipe() -> None:
    global _write_fd
    if _write_fd is not None:
        try:
            os.close(_write_fd)
        except OSError:
            pass
        _write_fd = None


@_fork.on_child
def _after_fork() -> None:
    """A forked child: the watcher and the groups are the parent's. Close our copy of the
    pipe (else the parent's death would go unseen while we live); our own spawns start our
    own watcher."""
    global _lock, _watcher
    _lock = threading.Lock()  # another thread may have held it at fork time
    _drop_pipe()
    _watcher = None  # the parent's child, not ours
    _groups.clear()
