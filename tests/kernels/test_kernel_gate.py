"""Gate: what a blocking call waits on, and the stdio reader's deferred wake-ups.

Both kernels: a gate is closed until ``open()``, then stays open; a waiter is woken; signal
handlers run during a wait (one that raises ends it). The compiled kernel alone defers the
opens a reader makes while routing with ``defer_wakes`` and hands them on one at a time, each
when a thread lets go of the GIL to wait; the pure twin opens at once.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import ModuleType

import pytest

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX pipes and signals")


class Interrupted(Exception):
    pass


def waiting_thread(gate: object, results: list[bool], timeout: float = 10.0) -> threading.Thread:
    thread = threading.Thread(target=lambda: results.append(gate.wait(timeout)))  # type: ignore[attr-defined]
    thread.start()
    return thread


def blocked(thread: threading.Thread) -> bool:
    """Still waiting a moment later (a slow machine only makes this more likely, so a
    test that expects a thread to be woken cannot pass by luck)."""
    thread.join(0.2)
    return thread.is_alive()


def route_opening(speedups: ModuleType, pipe: tuple[int, int], gates: list[object]) -> None:
    """A reader's routing: one frame per gate, each frame opening its gate."""
    r, w = pipe
    splitter = speedups.NdjsonSplitter()
    os.write(w, b"".join(b'{"n":%d}\n' % i for i in range(len(gates))))
    assert splitter.read_into(r, 5.0) == len(gates)
    splitter.route(lambda frame: gates[int(frame[5:-1])].open(), True)  # type: ignore[attr-defined]


def test_a_gate_is_closed_until_opened_then_stays_open(speedups: ModuleType) -> None:
    gate = speedups.Gate()
    assert gate.wait(0.0) is False
    assert gate.wait(0.01) is False
    assert gate.is_open() is False
    gate.open()
    assert gate.is_open() is True
    assert gate.wait(0.0) is True
    assert gate.wait(5.0) is True  # every later wait sees it open
    gate.open()  # a second open changes nothing
    assert gate.wait(-1) is True


@pytest.mark.parametrize("timeout", [10.0, -1])
def test_open_wakes_a_waiting_thread(speedups: ModuleType, timeout: float) -> None:
    gate = speedups.Gate()
    results: list[bool] = []
    thread = waiting_thread(gate, results, timeout)
    assert blocked(thread)
    gate.open()
    thread.join(10)
    assert not thread.is_alive() and results == [True]


def run_with_alarm(handler: Callable[[int, object], None], fn: Callable[[], bool]) -> bool:
    old = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_a_signal_handler_that_raises_ends_the_wait(speedups: ModuleType) -> None:
    def interrupt(signum: int, frame: object) -> None:
        raise Interrupted()

    gate = speedups.Gate()
    with pytest.raises(Interrupted):
        run_with_alarm(interrupt, lambda: gate.wait(30.0))
    assert gate.is_open() is False


def test_a_signal_handler_that_returns_lets_the_wait_go_on(speedups: ModuleType) -> None:
    seen: list[int] = []
    gate = speedups.Gate()
    opener = threading.Timer(0.5, gate.open)
    opener.start()
    try:
        assert run_with_alarm(lambda signum, frame: seen.append(signum), lambda: gate.wait(30.0))
    finally:
        opener.cancel()
    assert seen == [signal.SIGALRM]  # ran during the wait, which went on until the open


def test_the_pure_twin_opens_at_once_even_when_asked_to_defer(
    pure: ModuleType, pipe: tuple[int, int]
) -> None:
    gates = [pure.Gate()]
    results: list[bool] = []
    thread = waiting_thread(gates[0], results)
    route_opening(pure, pipe, gates)
    thread.join(10)
    assert results == [True]
    pure.open_deferred()  # nothing queued: a no-op


def test_routing_with_defer_wakes_queues_the_wake_ups(
    compiled: ModuleType, pipe: tuple[int, int]
) -> None:
    gates = [compiled.Gate(), compiled.Gate()]
    results: list[bool] = []
    threads = [waiting_thread(gate, results) for gate in gates]
    route_opening(compiled, pipe, gates)
    assert all(gate.is_open() for gate in gates)  # completed...
    assert blocked(threads[0]) and blocked(threads[1])  # ...but nobody woken yet
    compiled.open_deferred()
    for thread in threads:
        thread.join(10)
    assert results == [True, True]


def test_a_reader_wait_hands_on_one_wake_up_at_a_time(
    compiled: ModuleType, pipe: tuple[int, int]
) -> None:
    r, _ = pipe
    gates = [compiled.Gate(), compiled.Gate()]
    results: list[bool] = []
    first = waiting_thread(gates[0], results)
    second = waiting_thread(gates[1], results)
    route_opening(compiled, pipe, gates)
    # The next wait of the reader (nothing to read) wakes the first, and only it; with one
    # still queued, that wait is cut short (the guard against a caller that never blocks).
    assert compiled.NdjsonSplitter().read_into(r, 30.0) == 0
    first.join(10)
    assert not first.is_alive() and blocked(second)
    assert compiled.NdjsonSplitter().read_into(r, 0.01) == 0
    second.join(10)
    assert not second.is_alive() and results == [True, True]


def test_a_thread_about_to_wait_hands_on_one_wake_up(
    compiled: ModuleType, pipe: tuple[int, int]
) -> None:
    gates = [compiled.Gate()]
    results: list[bool] = []
    thread = waiting_thread(gates[0], results)
    route_opening(compiled, pipe, gates)
    assert blocked(thread)
    assert compiled.Gate().wait(0.01) is False  # this wait lets go of the GIL: wake one
    thread.join(10)
    assert not thread.is_alive() and results == [True]


def test_deferring_is_per_thread(compiled: ModuleType, pipe: tuple[int, int]) -> None:
    """While a reader routes with defer_wakes, an open on another thread is immediate."""
    other = compiled.Gate()
    results: list[bool] = []
    waiter = waiting_thread(other, results)
    woken: list[bool] = []

    def on_message(frame: bytes) -> None:
        opener = threading.Thread(target=other.open)
        opener.start()
        opener.join(10)
        waiter.join(10)  # woken while this thread still routes
        woken.append(not waiter.is_alive())

    r, w = pipe
    splitter = compiled.NdjsonSplitter()
    os.write(w, b'{"n":0}\n')
    splitter.read_into(r, 5.0)
    splitter.route(on_message, True)
    assert woken == [True] and results == [True]
