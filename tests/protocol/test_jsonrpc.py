"""The JSON-RPC layer: building messages and sorting incoming frames; no I/O."""

from __future__ import annotations

import pytest

from mcp_lite.errors import InvalidParams, MethodNotFound, RpcError
from mcp_lite.protocol import jsonrpc as j


def test_builders_shape_messages():
    assert j.make_request(1, "tools/list", None) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
    }
    assert j.make_notification("n", {"a": 1}) == {
        "jsonrpc": "2.0",
        "method": "n",
        "params": {"a": 1},
    }
    assert j.make_result("x", {}) == {"jsonrpc": "2.0", "id": "x", "result": {}}
    assert j.make_error(3, MethodNotFound("nope")) == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32601, "message": "nope"},
    }


def test_response_request_notification_are_told_apart():
    events = j.parse_frame(
        b'[{"jsonrpc":"2.0","id":1,"result":{"x":1}},'
        b'{"jsonrpc":"2.0","id":"s1","method":"ping"},'
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}},'
        b'{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}]'
    )
    assert events[0] == j.Response(1, {"x": 1})
    assert events[1] == j.Request("s1", "ping", {})
    assert events[2] == j.Notification("notifications/progress", {"progress": 1})
    assert isinstance(events[3], j.ErrorResponse) and isinstance(events[3].error, InvalidParams)
    assert events[3].error.code == -32602 and events[3].error.message == "bad"


@pytest.mark.parametrize(
    "frame, reason",
    [
        (b"not json", "invalid JSON"),
        (b"[]", "empty batch"),
        (b"42", "not a JSON object"),
        (b'{"id":1,"result":{}}', "jsonrpc"),
        (b'{"jsonrpc":"2.0","id":null,"result":{}}', "response id"),
        (b'{"jsonrpc":"2.0","id":true,"method":"x"}', "request id"),
        (b'{"jsonrpc":"2.0","id":1,"result":[1]}', "result is not an object"),
        (b'{"jsonrpc":"2.0","method":"x","params":[1]}', "params"),
        (b'{"jsonrpc":"2.0","id":1}', "neither"),
    ],
)
def test_garbage_becomes_invalid_never_an_exception(frame, reason):
    [event] = j.parse_frame(frame)
    assert isinstance(event, j.Invalid)
    assert reason in event.reason


def test_batches_can_be_refused():
    [event] = j.parse_frame(b'[{"jsonrpc":"2.0","method":"x"}]', allow_batch=False)
    assert isinstance(event, j.Invalid)


def test_error_without_id_is_kept_2025_11_25():
    [event] = j.parse_frame(b'{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}')
    assert isinstance(event, j.ErrorResponse) and event.id is None
    assert event.error.code == -32700


def test_malformed_error_member_still_gives_an_rpc_error():
    [event] = j.parse_frame(b'{"jsonrpc":"2.0","id":1,"error":"boom"}')
    assert isinstance(event, j.ErrorResponse) and isinstance(event.error, RpcError)
    assert "malformed" in event.error.message


def test_pending_table_registers_unique_ids_and_tolerates_string_echo():
    table: j.PendingTable[str] = j.PendingTable()
    ids = [table.register(f"entry {i}") for i in range(100)]
    assert len(set(ids)) == 100 and len(table) == 100
    assert table.pop(str(ids[6])) == "entry 6"  # an integer id echoed back as a string
    assert table.pop(ids[6]) is None and table.pop(None) is None
    assert table.get(ids[0]) == "entry 0" and ids[1] in table
    drained = table.drain()
    assert len(drained) == 99 and "entry 0" in drained and len(table) == 0
