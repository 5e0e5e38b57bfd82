"""Event hooks on Client and Hub (mcp_lite.events) against the demo server over stdio."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite.errors import ConfigError, ConnectionClosed, RequestTimeout, RpcError
from mcp_lite.events import Event

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo_server.py")
KINDS = ("request", "response", "notification", "reconnect", "error")


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self.lock:
            self.events.append(event)

    def hooks(self) -> dict[str, list[Recorder]]:
        return {kind: [self] for kind in KINDS}

    def of(self, kind: str, method: str | None = None) -> list[Event]:
        with self.lock:
            return [e for e in self.events if e.kind == kind and (method is None or e.method == method)]


def test_request_response_and_notification_events() -> None:
    rec = Recorder()
    with mcp_lite.connect([sys.executable, DEMO], event_hooks=rec.hooks()) as client:
        assert client.call_tool("add", {"a": 2, "b": 3}).text == "5"
        client.call_tool("countdown", {"n": 2}, on_progress=lambda p: None)
    [sent] = rec.of("request", "tools/call")[:1]
    assert sent.server == client.name
    assert sent.params is not None and sent.params["name"] == "add"
    responses = rec.of("response", "tools/call")
    assert [r.request_id for r in responses] == [r.request_id for r in rec.of("request", "tools/call")]
    assert responses[0].result is not None and responses[0].result["content"][0]["text"] == "5"
    assert all(r.duration is not None and r.duration >= 0 for r in responses)
    progress = rec.of("notification", "notifications/progress")
    assert len(progress) >= 2 and progress[0].params is not None
    assert rec.of("error") == []


def test_a_server_error_is_a_response_and_an_error_event() -> None:
    rec = Recorder()
    with (
        mcp_lite.connect([sys.executable, DEMO], event_hooks=rec.hooks()) as client,
        pytest.raises(RpcError),
    ):
        client.call_tool("no_such_tool", {})
    [response] = rec.of("response", "tools/call")
    [error] = rec.of("error", "tools/call")
    assert isinstance(response.error, RpcError) and response.result is None
    assert error.error is response.error and error.request_id == response.request_id


def test_a_timeout_is_an_error_event() -> None:
    rec = Recorder()
    with (
        mcp_lite.connect([sys.executable, DEMO], event_hooks={"error": [rec]}) as client,
        pytest.raises(RequestTimeout),
    ):
        client.call_tool("countdown", {"n": 30}, timeout=0.3)
    [error] = rec.of("error", "tools/call")
    assert isinstance(error.error, RequestTimeout)
    assert error.duration is not None and error.duration >= 0.3


def test_a_dead_server_gives_error_then_reconnect_events() -> None:
    rec = Recorder()
    with mcp_lite.connect([sys.executable, DEMO], event_hooks=rec.hooks()) as client:
        client.call_tool("add", {"a": 1, "b": 1})
        pid = client.transport.pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGKILL)
        deadline = threading.Event()
        for _ in range(200):
            if not client.connected:
                break
            deadline.wait(0.05)
        assert client.call_tool("add", {"a": 2, "b": 2}).text == "4"
    [lost] = [e for e in rec.of("error") if e.method is None]
    assert isinstance(lost.error, ConnectionClosed)
    [reconnect] = rec.of("reconnect")
    assert isinstance(reconnect.error, ConnectionClosed)


def test_a_hook_that_raises_is_logged_and_never_breaks_the_call(caplog) -> None:
    def boom(event: Event) -> None:
        raise ValueError("hook bug")

    rec = Recorder()
    hooks = {kind: [boom, rec] for kind in KINDS}
    with (
        caplog.at_level(logging.ERROR, logger="mcp_lite.events"),
        mcp_lite.connect([sys.executable, DEMO], event_hooks=hooks) as client,
    ):
        assert client.call_tool("add", {"a": 2, "b": 5}).text == "7"
    assert rec.of("response", "tools/call"), "the hook after the failing one still ran"
    assert any("hook bug" in r.getMessage() or r.exc_info for r in caplog.records)


def test_invalid_hooks_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown kind"):
        mcp_lite.connect([sys.executable, DEMO], event_hooks={"responses": [print]})
    with pytest.raises(ConfigError, match="not callable"):
        mcp_lite.connect([sys.executable, DEMO], event_hooks={"request": ["print"]})


def test_no_hook_no_observer() -> None:
    with mcp_lite.connect([sys.executable, DEMO]) as client:
        client.call_tool("add", {"a": 1, "b": 2})
        assert client._conn is not None and client._conn.events is None


def test_hub_hooks_name_the_server_and_see_reconnects(tmp_path) -> None:
    rec = Recorder()
    hub = mcp_lite.Hub(
        {"mcpServers": {"demo": {"command": sys.executable, "args": [DEMO]}}},
        event_hooks=rec.hooks(),
        auth_cache_path=tmp_path / "needs-auth.json",
    )
    with hub:
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 2}).text == "3"
        client = hub.client("demo")
        os.kill(client.transport.pid, signal.SIGKILL)  # type: ignore[union-attr]
        for _ in range(200):
            if not client.connected:
                break
            threading.Event().wait(0.05)
        # The Hub finds the client dead and connects a new one.
        assert hub.call_tool("mcp__demo__add", {"a": 2, "b": 2}).text == "4"
    calls = rec.of("request", "tools/call")
    assert calls and {e.server for e in calls} == {"demo"}
    [reconnect] = rec.of("reconnect")
    assert reconnect.server == "demo" and isinstance(reconnect.error, ConnectionClosed)
