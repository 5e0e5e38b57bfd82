"""NdjsonSplitter.lead: the stdio leader's read-and-route loop, both kernels.

Each test asserts what was routed and why the loop ended (its return value, and that it
stopped where it must): the stop check, the owner's flags, the deadline, end of stream.
"""

from __future__ import annotations

import os
import time
from types import ModuleType

import pytest

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX pipes")


class Owner:
    """What lead() reads of the transport: its two flags."""

    def __init__(self) -> None:
        self._reader_wanted = False
        self._closing = False


def test_routes_until_stop_says_so(speedups: ModuleType, pipe: tuple[int, int]) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    got: list[object] = []

    def route(frame: object) -> None:
        got.append(frame)
        if frame == b'{"b":2}':  # the next read brings the answer, and one more frame
            os.write(w, b'{"stop":1}\n{"after":1}\n')
        if frame == b'{"after":1}':
            os.write(w, b'{"unread":1}\n')

    os.write(w, b'{"a":1}\n{"b":2}\n')
    assert s.lead(r, lambda: b'{"stop":1}' in got, time.monotonic() + 10, route, Owner()) == 0
    # Everything a read brought is routed; nothing is read after stop() said so.
    assert got == [b'{"a":1}', b'{"b":2}', b'{"stop":1}', b'{"after":1}']
    assert s.read_into(r, 0.0) == 1 and s.pop_frame() == b'{"unread":1}'


def test_stops_at_once_when_stop_is_already_true(
    speedups: ModuleType, pipe: tuple[int, int]
) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    os.write(w, b'{"a":1}\n')
    got: list[object] = []
    assert s.lead(r, lambda: True, time.monotonic() + 10, got.append, Owner()) == 0
    assert got == []  # not read: the next holder of the pipe gets it
    assert s.read_into(r, 0.0) == 1


@pytest.mark.parametrize("flag", ["_reader_wanted", "_closing"])
def test_owner_flags_end_the_lead(speedups: ModuleType, pipe: tuple[int, int], flag: str) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    owner = Owner()
    got: list[object] = []

    def route(frame: object) -> None:
        got.append(frame)
        os.write(w, b'{"later":1}\n')  # more is coming...
        setattr(owner, flag, True)  # ...but e.g. server traffic: the reader thread takes over

    os.write(w, b'{"a":1}\n')
    assert s.lead(r, lambda: False, time.monotonic() + 10, route, owner) == 0
    assert got == [b'{"a":1}']  # the flag was seen before the next read
    assert s.read_into(r, 0.0) == 1 and s.pop_frame() == b'{"later":1}'


def test_deadline_ends_the_lead(speedups: ModuleType, pipe: tuple[int, int]) -> None:
    r, _ = pipe
    s = speedups.NdjsonSplitter()
    got: list[object] = []
    assert s.lead(r, lambda: False, time.monotonic() + 0.05, got.append, Owner()) == 0
    assert got == []
    # A deadline already past: no read at all.
    assert s.lead(r, lambda: False, time.monotonic() - 1.0, got.append, Owner()) == 0


def test_cap_bounds_each_wait_so_stop_is_seen_without_bytes(
    speedups: ModuleType, pipe: tuple[int, int]
) -> None:
    """A quiet pipe and a far deadline: each wait ends after ``cap`` and ``stop()`` is asked
    again (how a caller's ``cancel_event`` is seen), until it says so; nothing is routed."""
    r, w = pipe
    s = speedups.NdjsonSplitter()
    asked: list[int] = []

    def stop() -> bool:  # true on its fifth look (e.g. the cancel_event was set meanwhile)
        asked.append(1)
        return len(asked) == 5

    got: list[object] = []
    assert s.lead(r, stop, time.monotonic() + 600, got.append, Owner(), 0.005) == 0
    assert len(asked) == 5 and got == []
    # What came meanwhile is still routed first, and the cap is a keyword too.
    os.write(w, b'{"a":1}\n')
    asked.clear()
    assert s.lead(r, stop, time.monotonic() + 600, got.append, Owner(), cap=0.005) == 0
    assert len(asked) == 5 and got == [b'{"a":1}']
    # Until a deadline 0.5 s away: without the cap one wait would span it (two looks).
    looks: list[int] = []
    assert (
        s.lead(r, lambda: looks.append(1), time.monotonic() + 0.5, got.append, Owner(), 0.005) == 0
    )
    assert len(looks) > 2


def test_end_of_stream_routes_the_rest_and_returns_minus_one(
    speedups: ModuleType, pipe: tuple[int, int]
) -> None:
    r, w = pipe
    s = speedups.NdjsonSplitter()
    got: list[object] = []
    os.write(w, b'{"a":1}\n{"tail":1}')
    os.close(w)
    assert s.lead(r, lambda: False, time.monotonic() + 10, got.append, Owner()) == -1
    assert got == [b'{"a":1}', b'{"tail":1}']


def test_read_errors_and_routing_errors_propagate(speedups: ModuleType) -> None:
    s = speedups.NdjsonSplitter()
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    with pytest.raises(OSError):
        s.lead(r, lambda: False, time.monotonic() + 1, lambda frame: None, Owner())
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)
        os.write(w, b'{"a":1}\n{"b":2}\n')

        def boom(frame: object) -> None:
            raise KeyError(frame)

        with pytest.raises(KeyError):
            s.lead(r, lambda: False, time.monotonic() + 1, boom, Owner())
        assert s.pop_frame() == b'{"b":2}'  # the frame after it stays for the next route
    finally:
        os.close(r)
        os.close(w)
