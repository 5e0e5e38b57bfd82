"""Starting and stopping a stdio server's process: the allow-listed environment it gets,
the signals that stop its whole process group (about 600 ms of escalation at most), and
the fds the connection's thread waits on (a pidfd, a wake-up eventfd or pipe)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping

from .._deadline import Deadline

__all__ = ["SAFE_ENV_KEYS", "safe_environment"]

log = logging.getLogger("mcp_lite.stdio")

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


# What wakes the thread: one 8-byte count for an eventfd (any byte would do for a pipe).
_WAKE = (1).to_bytes(8, sys.byteorder)


def _wake_pipe() -> tuple[int, int]:
    """The wake-up pipe's (read, write) ends, both non-blocking: one eventfd where there is
    one (a Hub of many servers keeps one fd a connection fewer), else a pipe."""
    eventfd = getattr(os, "eventfd", None)
    if eventfd is not None:
        try:
            fd = int(eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC))
            return fd, fd
        except OSError:
            pass
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    return read_end, write_end


def _open_pidfd(pid: int) -> int:
    """A pidfd for ``pid`` (Linux 5.3+), readable once it exits; -1 where there is none."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return -1
    try:
        return int(pidfd_open(pid))
    except OSError:
        return -1


def _quiet_close_fd(fd: int) -> None:
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass


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


def _terminate_group(proc: subprocess.Popen[bytes], deadline: Deadline) -> None:
    """Stop the server and everything it started: about 600 ms of escalation at most, and
    the wait after SIGKILL is bounded by ``deadline``."""
    steps: list[tuple[int | None, float]] = [(None, 0.05)]
    if sys.platform == "win32":
        steps += [(signal.SIGTERM, 0.5)]
    else:
        steps += [(signal.SIGINT, 0.1), (signal.SIGTERM, 0.4)]
    for sig, wait in steps:
        # (a server reaped meanwhile, by the connection's thread, has its group over)
        if sig is not None and (proc.returncode is not None or not _signal_group(proc, sig)):
            break
        try:
            proc.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        if proc.returncode is None:
            proc.kill() if sys.platform == "win32" else _signal_group(proc, signal.SIGKILL)
    try:
        proc.wait(deadline.bound(1.0))
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        log.warning("MCP server pid %s did not die after SIGKILL", proc.pid)
    # (what it left in its group: StdioTransport._end_group)
