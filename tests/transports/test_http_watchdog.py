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
