"""The GET stream's reconnect wait: at least the server's SSE ``retry``, capped, so a server
cannot make the wait overflow (``threading.Event.wait`` refuses a timeout past ~2**63 ns) and
kill the thread that re-opens the stream."""

from __future__ import annotations

import threading

from mcp_lite._http.retry import MAX_RECONNECT_MS, reconnect_delay


def test_a_huge_retry_is_capped_and_waitable() -> None:
    for retry in (10**17, 10**18 - 1, MAX_RECONNECT_MS + 1):
        delay = reconnect_delay(retry, 0)
        assert delay == MAX_RECONNECT_MS / 1000.0
        event = threading.Event()
        event.set()
        assert event.wait(delay)  # a waitable number: no OverflowError


def test_the_servers_retry_and_the_backoff_still_apply() -> None:
    assert reconnect_delay(None, 0) == 0.1
    assert reconnect_delay(2000, 0) == 2.0
    assert 0.125 <= reconnect_delay(None, 1) <= 0.25
    assert reconnect_delay(5000, 3) == 5.0
