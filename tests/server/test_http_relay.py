"""``Relay``: messages before a response are written as they come, never blocking the thread
that relays them; a client that stops reading breaks the relay past its bound."""

from __future__ import annotations

import socket
import threading
import time

from mcp_lite.server.http import relay as _http_relay
from mcp_lite.server.http.relay import Relay


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.settimeout(5)  # as a handler's socket: a timeout, so a non-blocking descriptor
    b.settimeout(5)
    return a, b


def test_the_first_message_carries_the_head_and_each_goes_out_at_once() -> None:
    a, b = _pair()
    with a, b:
        cancel = threading.Event()
        relay = Relay(a, lambda: b"HEAD\r\n\r\n", True, cancel)
        relay({"n": 1})
        assert relay.started
        got = b.recv(65536)
        assert got.startswith(b"HEAD\r\n\r\n")
        assert got.endswith(b'event: message\ndata: {"n": 1}\n\n\r\n')
        relay({"n": 2})
        assert b.recv(65536) == relay.frame({"n": 2})
        assert relay.finish() == b""
        relay({"n": 3})  # after finish: dropped
        b.setblocking(False)
        try:
            assert b.recv(10) == b""
        except BlockingIOError:
            pass
        assert not cancel.is_set()


def test_a_client_that_stops_reading_breaks_only_its_relay(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(_http_relay, "MAX_PENDING", 64 * 1024)
    a, b = _pair()
    with a, b:
        cancel = threading.Event()
        relay = Relay(a, lambda: b"", False, cancel)
        big = {"pad": "x" * 4000}
        sent = 0
        done = threading.Event()

        def flood() -> None:
            nonlocal sent
            while not relay.broken and sent < 10_000:
                relay(big)
                sent += 1
            done.set()

        t = threading.Thread(target=flood)
        t.start()
        assert done.wait(20)  # never blocked on the full socket
        t.join()
        assert relay.broken and cancel.is_set()
        assert len(relay.finish()) <= 64 * 1024


def test_a_client_gone_breaks_the_relay() -> None:
    a, b = _pair()
    with a:
        b.close()
        cancel = threading.Event()
        relay = Relay(a, lambda: b"H", False, cancel)
        relay({"n": 1})
        assert relay.broken and cancel.is_set()


def test_a_silent_stream_gets_a_keepalive_once_started() -> None:
    a, b = _pair()
    with a, b:
        relay = Relay(a, lambda: b"H", True, threading.Event())
        relay.keepalive(time.monotonic() + 3600)  # not started: nothing (no head either)
        relay({"n": 1})
        b.recv(65536)
        relay.keepalive(time.monotonic())  # just written: nothing
        relay.keepalive(time.monotonic() + _http_relay.KEEPALIVE_S + 1)
        assert b.recv(65536) == b"3\r\n:\n\n\r\n"
        b.setblocking(False)
        try:
            extra = b.recv(10)
        except BlockingIOError:
            extra = b""
        assert extra == b""


def test_the_hangup_watch_sets_the_event_of_a_peer_that_hangs_up() -> None:
    from mcp_lite.server.http.hangup import HangupWatch

    watch = HangupWatch()
    if not watch.available:
        return
    a, b = _pair()
    c, d = _pair()
    try:
        gone, stays = threading.Event(), threading.Event()
        assert watch.watch(a, gone) and watch.watch(c, stays)
        d.sendall(b"data is not a hangup")
        b.close()
        assert gone.wait(10)
        assert not stays.is_set()
        watch.unwatch(a)
        watch.unwatch(c)
    finally:
        watch.close()
        for s in (a, c, d):
            s.close()
    assert not watch.watch(a, threading.Event())  # closed: the caller polls itself


def test_a_blocking_socket_is_left_blocking_and_its_messages_wait() -> None:
    a, b = socket.socketpair()
    with a, b:
        relay = Relay(a, lambda: b"H", False, threading.Event())
        relay({"n": 1})
        assert a.getblocking() and a.gettimeout() is None
        assert relay.finish() == b"H" + relay.frame({"n": 1})
