"""NdjsonSplitter.read_watching: the stdio thread's one poll for stdout and its watched fds
(stderr, the pidfd, the wake-up pipe), both kernels."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from types import ModuleType

import pytest

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX pipes")


@pytest.fixture
def watched() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    os.set_blocking(r, False)
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


def test_nothing_ready_waits_then_reports_nothing(
    speedups: ModuleType, pipe: tuple[int, int], watched: tuple[int, int]
) -> None:
    s = speedups.NdjsonSplitter()
    started = time.monotonic()
    assert s.read_watching(pipe[0], 0.05, watched[0], -1, -1) == 0
    assert time.monotonic() - started >= 0.04
    assert s.woke == 0
    assert s.read_watching(pipe[0], 0.0, -1, -1, -1) == 0  # no wait at all
    assert s.pop_frame() is None


def test_a_watched_fd_wakes_it_and_stdout_is_left_unread(
    speedups: ModuleType, pipe: tuple[int, int], watched: tuple[int, int]
) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    os.write(watched[1], b"x")
    assert s.read_watching(r, 5.0, -1, watched[0], -1) == 0
    assert s.woke == 2  # the second watched fd
    os.write(w, b'{"a":1}\n')
    assert s.read_watching(-1, 0.0, -1, watched[0], -1) == 0  # fd -1: watch only
    assert s.woke == 2 and s.pop_frame() is None
    assert s.read_into(r, 0.0) == 1  # the frame was never read by the watch-only call
    assert s.pop_frame() == b'{"a":1}'


def test_stdout_and_a_watched_fd_ready_together_are_both_seen(
    speedups: ModuleType, pipe: tuple[int, int], watched: tuple[int, int]
) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    os.write(w, b'{"a":1}\n{"b"')
    os.write(watched[1], b"x")
    assert s.read_watching(r, 5.0, -1, -1, watched[0]) == 1
    assert s.woke == 4
    assert s.pop_frame() == b'{"a":1}'
    assert s.buffered == 4  # the partial line waits for the rest


def test_end_of_stdout_and_a_closed_watched_fd(
    speedups: ModuleType, pipe: tuple[int, int], watched: tuple[int, int]
) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    os.write(w, b'{"tail":1}')
    os.close(w)
    os.close(watched[1])  # a watched fd at its end counts as ready
    assert s.read_watching(r, 5.0, watched[0], -1, -1) == 0  # a partial line so far
    assert s.woke == 1
    assert s.read_watching(r, 5.0, watched[0], -1, -1) == -1  # end of stream: flushed
    assert s.pop_frame() == b'{"tail":1}'
