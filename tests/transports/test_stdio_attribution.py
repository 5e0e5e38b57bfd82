"""Answers that cannot be read fail exactly the call they answer, at once; nothing else
(``fault_server.py bad-answers``). A ``wait`` call stays pending throughout: it is the
"unrelated caller" an id inside params, a server request's id or a careless scan would hit.
Run with both kernel implementations (``MCP_LITE_NO_EXTENSIONS=1`` for the pure twin).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import MessageTooLarge, RemoteProtocolError

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

LIMIT = 1024 * 1024  # the server's oversized lines are 2 MiB


@pytest.fixture
def client(fault_cmd: Callable[..., list[str]]) -> Iterator[mcp_lite.Client]:
    with mcp_lite.connect(fault_cmd("bad-answers"), timeout=60.0, max_message_size=LIMIT) as client:
        yield client


def start_waiting(client: mcp_lite.Client) -> Future[dict[str, Any]]:
    waiting = client.submit("tools/call", {"name": "wait", "arguments": {}}, timeout=120.0)
    # A round trip after it: the server has registered the waiting call.
    assert client.call_tool("echo", {"text": "sync"}).text == "sync"
    return waiting


def answer(client: mcp_lite.Client, kind: str) -> Any:
    # A long timeout: a failure must come from the answer, never from the deadline.
    return client.call_tool("answer", {"kind": kind}, timeout=60.0)


def release(client: mcp_lite.Client, waiting: Future[dict[str, Any]]) -> None:
    client.call_tool("release", {})
    assert waiting.result(30)["content"][0]["text"] == "released"


def test_oversized_answer_with_its_id_last_fails_that_call_only(client: mcp_lite.Client) -> None:
    waiting = start_waiting(client)
    with pytest.raises(MessageTooLarge) as info:
        answer(client, "oversized-id-last")
    assert "max_message_size" in str(info.value) and "tools/call" in str(info.value)
    assert not waiting.done()  # its id sat first in the bytes, inside the result
    release(client, waiting)


@pytest.mark.parametrize("kind", ["oversized-notification", "oversized-request"])
def test_oversized_message_from_the_server_fails_no_call(
    client: mcp_lite.Client, kind: str
) -> None:
    waiting = start_waiting(client)
    # The oversized notification/request carries the waiting call's id; it is dropped.
    assert answer(client, kind).text == "ok"
    assert not waiting.done()
    release(client, waiting)


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("deep", "recursion"),
        ("bad-utf8", "unicode"),
        ("long-number", "number"),
        ("result-not-object", "not an object"),
        ("no-jsonrpc", "jsonrpc"),
    ],
)
def test_unreadable_answer_fails_that_call_at_once_with_a_protocol_error(
    client: mcp_lite.Client, kind: str, why: str
) -> None:
    waiting = start_waiting(client)
    with pytest.raises(RemoteProtocolError) as info:
        answer(client, kind)
    message = str(info.value)
    assert "tools/call" in message and "could not be read" in message and why in message
    assert not waiting.done()
    release(client, waiting)


@pytest.mark.parametrize(
    ("kind", "request_id", "code"),
    [("oversized-request", None, -32600), ("deep-request", "deep-1", -32700)],
)
def test_a_server_request_the_client_cannot_read_is_refused_not_left_waiting(
    fault_cmd: Callable[..., list[str]],
    tmp_path: Path,
    wait_until: Callable[..., bool],
    kind: str,
    request_id: str | None,
    code: int,
) -> None:
    record = tmp_path / "answers.jsonl"
    with mcp_lite.connect(
        fault_cmd("bad-answers", record), timeout=60.0, max_message_size=LIMIT
    ) as client:
        waiting = start_waiting(client)
        assert answer(client, kind).text == "ok"

        def refusals() -> list[dict[str, Any]]:
            if not record.exists():
                return []
            lines = record.read_text().splitlines()
            return [r for r in map(json.loads, lines) if "error" in r]

        assert wait_until(lambda: len(refusals()) == 1, timeout=30)
        refusal = refusals()[0]
        # the oversized request carried the waiting call's id: refused, the call untouched
        expected_id = request_id if request_id is not None else refusal["id"]
        assert refusal["id"] == expected_id and refusal["error"]["code"] == code
        assert not waiting.done()
        release(client, waiting)


def test_plain_noise_is_logged_and_skipped(
    client: mcp_lite.Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_lite.client")
    waiting = start_waiting(client)
    assert answer(client, "noise").text == "ok"
    assert not waiting.done()
    assert any("dropped invalid message" in r.getMessage() for r in caplog.records)
    release(client, waiting)
