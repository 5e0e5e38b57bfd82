"""Cancellation that reaches the server, in both protocol eras.

The peer is ``tests/peers/slow_server.py`` (an ``mcp_lite.Server`` over stdio): its ``wait``
tool records ``started`` and, when ``notifications/cancelled`` arrives, ``cancelled`` with
the request id. Every way of cancelling must free the caller with a clear error, tell the
server (seen in the record), and leave the connection usable.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite import RequestCancelled

SERVER = str(Path(__file__).resolve().parents[1] / "peers" / "slow_server.py")
ERAS = ["2025-11-25", "2026-07-28"]
WAIT = 20.0  # generous: the machine may be loaded


def _records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait_for(path: Path, key: str, count: int = 1) -> list[Any]:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        found = [r[key] for r in _records(path) if key in r]
        if len(found) >= count:
            return found
        time.sleep(0.02)
    raise AssertionError(f"the server never recorded {key!r}: {_records(path)}")


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "record.jsonl"


def _connect(record: Path, era: str) -> mcp_lite.Client:
    return mcp_lite.connect([sys.executable, SERVER, str(record)], protocol_version=era)


def _still_usable(client: mcp_lite.Client) -> None:
    assert client.call_tool("echo", {"text": "after"}, timeout=WAIT).text == "after"


def test_cancel_event_frees_the_caller_and_tells_the_server(record: Path, era: str) -> None:
    with _connect(record, era) as client:
        cancel = threading.Event()
        outcome: list[BaseException | object] = []

        def run() -> None:
            try:
                outcome.append(client.call_tool("wait", {"seconds": 60}, cancel_event=cancel))
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        started = _wait_for(record, "started")
        cancel.set()
        thread.join(WAIT)
        assert not thread.is_alive()
        assert isinstance(outcome[0], RequestCancelled), outcome
        assert _wait_for(record, "cancelled") == started
        _still_usable(client)


def _watch_the_lead(client: mcp_lite.Client) -> tuple[list[bool], set[int]]:
    """Record each ``lead()`` (what it returned) and the threads that routed frames while
    leading: the reader thread took its ``on_message`` at start, so only a leader calls the
    transport's attribute, wrapped here."""
    transport = client._conn.transport  # type: ignore[union-attr]
    leads: list[bool] = []
    routed_by: set[int] = set()
    lead, on_message = transport.lead, transport._on_message

    def watched_lead(*args: Any) -> bool:
        led: bool = lead(*args)
        leads.append(led)
        return led

    def watched_on_message(frame: Any) -> None:
        routed_by.add(threading.get_ident())
        on_message(frame)

    transport.lead = watched_lead
    transport._on_message = watched_on_message
    return leads, routed_by


def test_a_leading_call_with_a_cancel_event_is_cancelled_and_tells_the_server(
    record: Path, era: str
) -> None:
    """A lone blocking call with a ``cancel_event`` reads its own answer (it leads: no
    hand-off from the reader thread), and a ``set()`` from another thread still frees it
    with ``RequestCancelled`` and tells the server."""
    with _connect(record, era) as client:
        can_lead = client._conn.transport.can_lead  # type: ignore[union-attr]
        leads, routed_by = _watch_the_lead(client)
        me = threading.get_ident()
        # Answered: the answer was routed by the caller itself. (The reader thread may
        # still hold the pipe just after connect: then the call does not lead, so a few.)
        for attempt in range(20):
            leads.clear()
            routed_by.clear()
            answer = client.request(
                "tools/call",
                {"name": "echo", "arguments": {"text": f"led{attempt}"}},
                timeout=WAIT,
                cancel_event=threading.Event(),
            )
            assert answer["content"][0]["text"] == f"led{attempt}"
            if leads == [True]:
                break
        if can_lead:  # (compiled build, POSIX)
            assert leads == [True] and routed_by == {me}
        else:
            assert routed_by == set()
        # Cancelled from another thread while it leads (right after a call that led: the
        # reader thread lingers parked, so this one leads too; retried should it not).
        led_and_cancelled = False
        for attempt in range(1, 6):
            leads.clear()
            cancel = threading.Event()

            def set_when_started(count: int = attempt, cancel: threading.Event = cancel) -> None:
                _wait_for(record, "started", count)
                cancel.set()

            setter = threading.Thread(target=set_when_started)
            setter.start()
            with pytest.raises(RequestCancelled):
                client.request(
                    "tools/call",
                    {"name": "wait", "arguments": {"seconds": 60}},
                    timeout=WAIT * 3,
                    cancel_event=cancel,
                )
            setter.join(WAIT)
            started = _wait_for(record, "started", attempt)
            assert _wait_for(record, "cancelled", attempt) == started
            if leads == [True]:
                led_and_cancelled = True
                break
        assert led_and_cancelled == can_lead, leads
        _still_usable(client)


def test_request_with_a_set_cancel_event_is_never_sent(record: Path, era: str) -> None:
    with _connect(record, era) as client:
        cancel = threading.Event()
        cancel.set()
        with pytest.raises(RequestCancelled):
            client.request(
                "tools/call", {"name": "wait", "arguments": {"seconds": 60}}, cancel_event=cancel
            )
        _still_usable(client)
        assert _records(record) == []


def test_future_cancel_tells_the_server(record: Path, era: str) -> None:
    with _connect(record, era) as client:
        future = client.submit("tools/call", {"name": "wait", "arguments": {"seconds": 60}})
        started = _wait_for(record, "started")
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(0)
        assert _wait_for(record, "cancelled") == started
        _still_usable(client)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_a_blocking_call_tells_the_server(record: Path, era: str) -> None:
    assert threading.current_thread() is threading.main_thread()
    # Python's own Ctrl-C handler, even when this run was started with SIGINT ignored (a
    # background job of a non-interactive shell inherits SIG_IGN).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_during_a_blocking_call(record, era)
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_during_a_blocking_call(record: Path, era: str) -> None:
    with _connect(record, era) as client:
        main = threading.main_thread().ident
        assert main is not None

        def interrupt() -> None:
            _wait_for(record, "started")
            signal.pthread_kill(main, signal.SIGINT)  # a real SIGINT, as Ctrl-C sends

        killer = threading.Thread(target=interrupt)
        killer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                client.call_tool("wait", {"seconds": 60}, timeout=WAIT * 2)
        finally:
            killer.join(WAIT)
        assert _wait_for(record, "cancelled") == _wait_for(record, "started")
        _still_usable(client)


def test_hub_call_tool_cancel_event_and_submit_cancel(record: Path, era: str) -> None:
    config = {"mcpServers": {"slow": {"command": sys.executable, "args": [SERVER, str(record)]}}}
    with mcp_lite.Hub(config, client_options={"protocol_version": era}) as hub:
        cancel = threading.Event()
        outcome: list[BaseException | object] = []

        def run() -> None:
            try:
                outcome.append(
                    hub.call_tool("mcp__slow__wait", {"seconds": 60}, cancel_event=cancel)
                )
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        first = _wait_for(record, "started")
        cancel.set()
        thread.join(WAIT)
        assert not thread.is_alive()
        assert isinstance(outcome[0], RequestCancelled), outcome
        assert _wait_for(record, "cancelled") == first

        future = hub.submit("mcp__slow__wait", {"seconds": 60})
        both = _wait_for(record, "started", 2)
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(0)
        assert _wait_for(record, "cancelled", 2) == both

        done = hub.submit("mcp__slow__echo", {"text": "fine"})
        assert done.result(WAIT).text == "fine"
