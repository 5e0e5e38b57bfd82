"""NdjsonSplitter.read_into / pop_frame: the stdio read-and-split step, both kernels."""

from __future__ import annotations

import os
import threading
import time
from types import ModuleType

import pytest

from mcp_lite.errors import MessageTooLarge

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX pipes")


def drain(s: object) -> list[object]:
    out = []
    while (frame := s.pop_frame()) is not None:  # type: ignore[attr-defined]
        out.append(frame)
    return out


def test_nothing_to_read_returns_zero_without_waiting(
    speedups: ModuleType, pipe: tuple[int, int]
) -> None:
    s = speedups.NdjsonSplitter()
    assert s.read_into(pipe[0], 0.0) == 0
    assert s.read_into(pipe[0], 0.01) == 0  # waits, then gives up
    assert s.pop_frame() is None


def test_frames_are_kept_until_popped_and_partial_lines_wait(
    speedups: ModuleType, pipe: tuple[int, int]
) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    os.write(w, b'{"a":1}\n\n{"b":2}\r\n{"c"')
    assert s.read_into(r, 5.0) == 2
    assert s.pop_frame() == b'{"a":1}'
    os.write(w, b":3}\n")
    assert s.read_into(r, 5.0) == 2  # the one left plus the one completed
    assert drain(s) == [b'{"b":2}', b'{"c":3}']
    assert s.buffered == 0


def test_end_of_stream_flushes_the_last_line(speedups: ModuleType, pipe: tuple[int, int]) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    os.write(w, b'{"a":1}\n{"tail":1}')
    os.close(w)
    counts = []
    while True:
        count = s.read_into(r, 5.0)
        counts.append(count)
        if count < 0:
            break
    assert drain(s) == [b'{"a":1}', b'{"tail":1}']
    assert s.read_into(r, 0.0) == -1  # still the end


def test_oversized_line_is_reported_in_order(speedups: ModuleType, pipe: tuple[int, int]) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter(16)
    os.write(w, b'{"a":1}\n' + b"x" * 40 + b'\n{"b":2}\n')
    while s.read_into(r, 1.0) < 3:
        pass
    got = drain(s)
    assert got[0] == b'{"a":1}' and got[2] == b'{"b":2}'
    assert isinstance(got[1], MessageTooLarge)


def test_waits_for_data_that_comes_later(speedups: ModuleType, pipe: tuple[int, int]) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    threading.Timer(0.05, lambda: os.write(w, b'{"late":1}\n')).start()
    deadline = time.monotonic() + 10
    while s.read_into(r, 1.0) == 0 and time.monotonic() < deadline:
        pass
    assert drain(s) == [b'{"late":1}']


@pytest.mark.parametrize("timeout", [float("inf"), 1e300, 3e6])
def test_an_unbounded_wait_waits_as_the_kernel_does(
    speedups: ModuleType, pipe: tuple[int, int], timeout: float
) -> None:
    """No limit (inf, or more than poll can time) waits like a long finite wait, in both
    builds: the twin used to raise OverflowError from select (issue 36)."""
    r, w = pipe
    s = speedups.NdjsonSplitter()
    os.write(w, b'{"now":1}\n')
    assert s.read_into(r, timeout) == 1  # ready: no wait
    later = threading.Thread(target=os.write, args=(w, b'{"later":1}\n'))
    later.start()
    assert s.read_into(r, timeout) == 2  # (waited, if the bytes were not there yet)
    later.join(10)
    assert drain(s) == [b'{"now":1}', b'{"later":1}']
    os.close(w)
    assert s.read_into(r, timeout) == -1
    assert s.read_watching(r, timeout, -1, -1, -1) == -1


def test_a_bad_fd_raises_oserror(speedups: ModuleType) -> None:
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    with pytest.raises(OSError):
        speedups.NdjsonSplitter().read_into(r, 0.0)


def test_large_stream_in_many_reads(speedups: ModuleType, pipe: tuple[int, int]) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    lines = [b'{"i":%d,"pad":"%s"}' % (i, b"p" * (i % 300)) for i in range(2000)]
    data = b"\n".join(lines) + b"\n"
    writer = threading.Thread(target=lambda: (os.write(w, data), os.close(w)))
    writer.start()
    got: list[object] = []
    while True:
        count = s.read_into(r, 5.0)
        got += drain(s)
        if count < 0:
            break
    writer.join(10)
    assert got == lines


@pytest.mark.parametrize("timeout", [-1.0, 0.0, 0.5])
def test_held_lock_takes_and_releases(speedups: ModuleType, timeout: float) -> None:
    lock = threading.Lock()
    with speedups.HeldLock(lock, timeout) as got:
        assert got and lock.locked()
    assert not lock.locked()
    with pytest.raises(ZeroDivisionError), speedups.HeldLock(lock, timeout) as got:
        assert got
        1 / 0  # noqa: B018
    assert not lock.locked()


def test_held_lock_not_taken_is_not_released(speedups: ModuleType) -> None:
    lock = threading.Lock()
    lock.acquire()
    with speedups.HeldLock(lock, -1.0) as got:
        assert not got
    assert lock.locked()  # still the other holder's
    start = time.monotonic()
    with speedups.HeldLock(lock, 0.05) as got:
        assert not got
    assert time.monotonic() - start >= 0.04
    lock.release()


# --- write_nowait: the stdio write step -----------------------------------------------------


def test_write_nowait_writes_what_fits_then_says_full(
    speedups: ModuleType, pipe: tuple[int, int]
) -> None:
    r, w = pipe
    os.set_blocking(w, False)
    assert speedups.write_nowait(w, b"abc\n") == 4
    assert os.read(r, 10) == b"abc\n"
    big = memoryview(b"x" * (4 << 20))  # larger than any pipe buffer
    put = speedups.write_nowait(w, big)
    assert 0 < put < len(big)
    assert speedups.write_nowait(w, big[put:]) == -1  # full: nothing written, no wait
    got = 0
    while True:
        try:
            got += len(os.read(r, 1 << 20))
        except BlockingIOError:
            break
    assert got == put


def test_write_nowait_to_a_closed_reader_raises_broken_pipe(
    speedups: ModuleType, pipe: tuple[int, int]
) -> None:
    r, w = pipe
    os.set_blocking(w, False)
    os.close(r)
    with pytest.raises(BrokenPipeError):
        speedups.write_nowait(w, b"{}\n")


def test_read_into_reads_waiting_bytes_and_still_waits_when_none(
    speedups: ModuleType, pipe: tuple[int, int]
) -> None:
    # Bytes already there are read at once (the compiled kernel keeps the GIL for that);
    # with none there it waits without the GIL: the timer thread needs the GIL to write
    # the line this read waits for (were it held, the read would end empty after 5 s).
    r, w = pipe
    s = speedups.NdjsonSplitter()
    os.write(w, b'{"a":1}\n')
    assert s.read_into(r, 0.0) == 1
    assert drain(s) == [b'{"a":1}']
    threading.Timer(0.1, lambda: os.write(w, b'{"b":2}\n')).start()
    assert s.read_into(r, 5.0) == 1
    assert drain(s) == [b'{"b":2}']


def test_route_hands_frames_in_order_and_keeps_the_rest_after_an_exception(
    speedups: ModuleType, pipe: tuple[int, int]
) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    assert s.route(lambda frame: None) is False  # nothing read yet
    os.write(w, b"1\n2\n3\n")
    assert s.read_into(r, 5.0) == 3
    seen: list[object] = []

    def fail_on_two(frame: object) -> None:
        seen.append(frame)
        if frame == b"2":
            raise KeyboardInterrupt  # as a Ctrl-C inside the routing of one frame

    with pytest.raises(KeyboardInterrupt):
        s.route(fail_on_two)
    assert seen == [b"1", b"2"]  # the frame it was routing is taken, not routed twice
    assert s.route(seen.append) is True
    assert seen == [b"1", b"2", b"3"]
    assert s.route(seen.append) is False and s.pop_frame() is None
