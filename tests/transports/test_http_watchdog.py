"""The socket watchdog of the HTTP transport keeps no thread once nothing is left to watch."""

from __future__ import annotations

import time

from mcp_lite._http.abort import Slot, Watchdog


def _alive(dog: Watchdog) -> bool:
    thread = dog._thread
    return thread is not None and thread.is_alive()


def test_the_watchdog_thread_ends_when_every_slot_is_released() -> None:
    dog = Watchdog()
    slots = [Slot(deadline=time.monotonic() + 600) for _ in range(3)]
    for slot in slots:
        dog.watch(slot)
    assert _alive(dog)
    for slot in slots:
        slot.release()  # the exchanges finished long before their deadlines
    dog.watch(Slot(deadline=time.monotonic() - 1))  # an already due one wakes the thread
    end = time.monotonic() + 30
    while _alive(dog) and time.monotonic() < end:
        time.sleep(0.05)
    assert not _alive(dog)
    # ... and it comes back when there is something to watch again.
    late = Slot(deadline=time.monotonic() + 600)
    dog.watch(late)
    assert _alive(dog)
    late.release()


def test_a_due_slot_is_still_aborted() -> None:
    dog = Watchdog()
    slot = Slot(deadline=time.monotonic() + 0.1)
    dog.watch(slot)
    end = time.monotonic() + 30
    while not slot.aborted and time.monotonic() < end:
        time.sleep(0.02)
    assert slot.aborted


def _ends_within(dog: Watchdog, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while _alive(dog) and time.monotonic() < end:
        time.sleep(0.02)
    return not _alive(dog)


def test_a_slot_released_just_after_its_transport_closed_lets_the_thread_end() -> None:
    """A transport's close() says so (``closed()``) while a worker is still finishing an
    exchange it aborted: that slot is released a moment later. The thread, asleep until the
    slot's far deadline, must still end soon (it ended only at that deadline, up to a
    minute later, and a test counting library threads saw it left over)."""
    dog = Watchdog()
    finishing = Slot(deadline=time.monotonic() + 600)
    dog.watch(finishing)
    time.sleep(0.1)  # the thread is asleep until that deadline
    dog.closed()
    time.sleep(0.1)
    finishing.release()  # (no call tells the watchdog)
    assert _ends_within(dog, 1.5)


def test_a_close_does_not_stop_the_watch_of_another_transports_slots() -> None:
    dog = Watchdog()
    other = Slot(deadline=time.monotonic() + 0.6)
    dog.watch(other)
    dog.closed()  # some other transport closed
    time.sleep(0.3)
    assert _alive(dog) and not other.aborted
    end = time.monotonic() + 30
    while not other.aborted and time.monotonic() < end:
        time.sleep(0.02)
    assert other.aborted  # at its deadline, as if nothing had closed
    other.release()
