"""The Client's one retry of a call the server never received: its errors name the phase
("retrying tools/call") and carry the first failure, the reason it retried."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import ConnectionClosed, RequestTimeout


def _server() -> mcp_lite.Server:
    server = mcp_lite.Server("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return server


def _unsent(message: str) -> ConnectionClosed:
    exc = ConnectionClosed(message, 3, "last words")
    exc.unsent = True  # type: ignore[attr-defined]  # as the connection marks a write that failed
    return exc


def test_a_retry_whose_write_fails_too_names_the_phase_and_keeps_the_exit_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failures = [_unsent("MCP server stopped reading its input"), _unsent("gone again")]

    def failing_call(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise failures.pop(0)

    with mcp_lite.connect(_server()) as client:
        monkeypatch.setattr(client, "_call", failing_call)
        with pytest.raises(ConnectionClosed) as caught:
            client.call_tool("add", {"a": 1, "b": 2}, timeout=5)
    assert str(caught.value).startswith("retrying tools/call: gone again")
    assert caught.value.exit_code == 3 and caught.value.stderr_tail == "last words"
    assert isinstance(caught.value.__cause__, ConnectionClosed)
    assert not failures


def test_a_retry_with_no_time_left_says_why_it_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_failing_call(client: mcp_lite.Client) -> Any:
        def call(conn: Any, deadline: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
            deadline.at = 0.0  # the first try used the whole deadline up
            raise _unsent("MCP server stopped reading its input")

        return call

    with mcp_lite.connect(_server()) as client:
        monkeypatch.setattr(client, "_call", slow_failing_call(client))
        with pytest.raises(RequestTimeout) as caught:
            client.call_tool("add", {"a": 1, "b": 2}, timeout=5)
    message = str(caught.value)
    assert message.startswith("retrying tools/call: no time was left for it")
    assert "stopped reading its input" in message and "exit code 3" in message
    assert isinstance(caught.value.__cause__, ConnectionClosed)
