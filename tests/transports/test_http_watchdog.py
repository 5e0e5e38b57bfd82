"""Socket deadlines of the HTTP transports are entries on the one process timer (``_timer``):
a ``Slot`` with a deadline is aborted there, a released slot withdraws its entry, and a
server that drips its body is cut at the deadline on the caller's own thread, with no
timekeeping thread but ``mcp-lite-timer`` started for it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import mcp_lite
from mcp_lite import _timer
from mcp_lite._deadline import Deadline
from mcp_lite._http.slots import Slot
from mcp_lite.errors import RequestTimeout
from mcp_lite.transports.http import HttpTransport

GUARD = 30.0  # a hang guard, never a timing assertion


def timekeepers(started: list[threading.Thread]) -> list[str]:
    """The threads in ``started`` that keep time, other than the one process timer."""
    return [
        thread.name
        for thread in started
        if thread.name != _timer.thread_name
        and (
            isinstance(thread, threading.Timer)
            or any(word in thread.name for word in ("watchdog", "deadline", "timer"))
        )
    ]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[threading.Thread]]:
    """Every thread started while the test runs (a ``threading.Timer`` included)."""
    seen: list[threading.Thread] = []
    start = threading.Thread.start

    def record(self: threading.Thread) -> None:
        seen.append(self)
        start(self)

    monkeypatch.setattr(threading.Thread, "start", record)
    yield seen


def _timer_alive() -> bool:
    return any(t.name == _timer.thread_name for t in threading.enumerate())


def test_a_slot_is_aborted_at_its_deadline_by_the_timer(started: list[threading.Thread]) -> None:
    slot = Slot(Deadline.after(0.1))
    end = time.monotonic() + GUARD
    while not slot.aborted and time.monotonic() < end:
        time.sleep(0.02)
    assert slot.aborted
    slot.release()
    assert timekeepers(started) == []


def test_released_slots_withdraw_their_entries_and_the_timer_thread_ends(
    wait_until: Callable[..., bool],
) -> None:
    before = _timer.live()
    slots = [Slot(Deadline.after(600)) for _ in range(3)]
    assert _timer.live() == before + 3 and _timer_alive()
    for slot in slots:
        slot.release()  # the exchanges finished long before their deadlines
    assert _timer.live() == before
    assert not any(slot.aborted for slot in slots)
    if before == 0:  # nothing else lives: the thread ends (it comes back on demand)
        assert wait_until(lambda: not _timer_alive(), GUARD)
        late = Slot(Deadline.after(600))
        assert _timer_alive()
        late.release()


def test_a_slot_without_a_deadline_puts_nothing_on_the_timer() -> None:
    before = _timer.live()
    slot = Slot(None)
    unlimited = Slot(Deadline.after(None))
    assert _timer.live() == before and slot.remaining() is None
    assert unlimited.deadline is None
    slot.release()
    unlimited.release()


def test_a_disarmed_slot_is_not_aborted() -> None:
    slot = Slot(Deadline.after(0.05))
    slot.disarm()
    probe = Slot(Deadline.after(0.2))  # comes due after the disarmed one would have
    end = time.monotonic() + GUARD
    while not probe.aborted and time.monotonic() < end:
        time.sleep(0.02)
    assert probe.aborted and not slot.aborted
    slot.release()
    probe.release()


@pytest.fixture(params=["tcp", "unix"])
def dripping(request: pytest.FixtureRequest) -> Any:
    """The fault server (its ``drip`` tool sends headers, then a body a byte at a time)."""
    return request.getfixturevalue(
        "unix_fault_server" if request.param == "unix" else "fault_server"
    )


def test_a_dripping_body_ends_at_the_deadline_on_the_callers_thread(
    dripping: Any,
    started: list[threading.Thread],
    monkeypatch: pytest.MonkeyPatch,
    wait_until: Callable[..., bool],
) -> None:
    ran_on: list[threading.Thread] = []
    run = HttpTransport._run_request

    def spy(self: HttpTransport, message: Any, exch: Any) -> None:
        if exch.method == "tools/call":
            ran_on.append(threading.current_thread())
        run(self, message, exch)

    monkeypatch.setattr(HttpTransport, "_run_request", spy)
    with mcp_lite.connect(dripping.url(), protocol_version="2025-11-25", timeout=10) as client:
        begun = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call_tool("drip", timeout=1)
        assert time.monotonic() - begun < GUARD
        assert ran_on == [threading.current_thread()]  # inline: no worker hand-off
        # No other timekeeping thread was started for it, nor lingers from it.
        assert timekeepers([*started, *threading.enumerate()]) == []
        # The socket was shut down at the deadline: the server sees the hang-up.
        assert wait_until(lambda: len(dripping.state.disconnected) == 1, GUARD)
        assert client.call_tool("echo").text == "echo"
