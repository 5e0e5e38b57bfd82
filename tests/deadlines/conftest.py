"""Fixtures of the deadline matrix: the leak check, per cell and per module.

Run the matrix on both kernel builds: ``MCP_LITE_NO_EXTENSIONS=1`` for the pure twin.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from leaks import cell_threads

from mcp_lite.transports import _reaper


def _fds() -> set[str]:
    """Open fds, less the stdio watcher's pipe: it opens at the process's first stdio spawn
    (which may be in the test) and stays open by design."""
    watcher = _reaper._write_fd
    return set(os.listdir("/proc/self/fd")) - ({str(watcher)} if watcher is not None else set())


@pytest.fixture(scope="module", autouse=True)
def idle_threads_end() -> Iterator[None]:
    """After the module: every ``mcp-lite`` thread has ended (the idle-exiting ones too)."""
    yield
    deadline = time.monotonic() + 10.0
    while left := [t.name for t in threading.enumerate() if t.name.startswith("mcp-lite")]:
        if time.monotonic() > deadline:
            pytest.fail(f"mcp-lite threads still running after the module: {left}")
        time.sleep(0.05)


@pytest.fixture
def no_leaks(no_leftover_processes: Callable[[], None]) -> Iterator[None]:
    """After the test (which closes what it opened): no new thread, fd or child process
    (each gets a few seconds to finish ending; a leak never does)."""
    threads = set(threading.enumerate())
    fds = _fds()
    yield
    deadline = time.monotonic() + 5.0
    while True:
        extra_threads = cell_threads(threads)
        extra_fds = sorted(_fds() - fds)
        if not extra_threads and not extra_fds:
            break
        if time.monotonic() > deadline:
            details = {fd: _fd_target(fd) for fd in extra_fds}
            pytest.fail(f"left behind: threads {extra_threads}, fds {details}")
        time.sleep(0.05)
    no_leftover_processes()


def _fd_target(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "?"
