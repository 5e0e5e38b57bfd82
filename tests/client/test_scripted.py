"""Client behaviour against a scripted server: misbehaviour that real servers rarely show."""

from __future__ import annotations

import threading
import time

import pytest

from mcp_lite.errors import ConnectionClosed, MessageTooLarge, RemoteProtocolError


def test_every_page_is_fetched(scripted_client, reply):
    def answer(msg):
        cursor = msg.get("params", {}).get("cursor")
        page = {None: ("p1", ["a", "b"]), "p1": ("p2", ["c"]), "p2": (None, ["d"])}[cursor]
        value = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in page[1]]}
        if page[0]:
            value["nextCursor"] = page[0]
        return reply(msg, value)

    client, _ = scripted_client(answer)
    assert [t.name for t in client.list_tools()] == ["a", "b", "c", "d"]


def test_a_repeated_cursor_is_an_error_not_a_loop(scripted_client, reply):
    client, transport = scripted_client(lambda msg: reply(msg, {"tools": [], "nextCursor": "same"}))
    with pytest.raises(RemoteProtocolError, match="repeated cursor"):
        client.list_tools()
    assert sum(1 for m in transport.sent if m.get("method") == "tools/list") == 2


def test_page_cap(scripted_client, reply):
    counter = iter(range(10**6))
    client, _ = scripted_client(
        lambda msg: reply(msg, {"tools": [], "nextCursor": str(next(counter))}), max_pages=5
    )
    with pytest.raises(RemoteProtocolError, match="more than 5 pages"):
        client.list_tools()


def test_unknown_ids_and_junk_are_dropped_and_the_call_still_succeeds(scripted_client, reply):
    def answer(msg):
        if msg.get("method") != "tools/call":
            return []
        return [
            b"this is not json",
            b'{"jsonrpc":"2.0","id":999,"result":{}}',
            [],
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}},
            *reply(msg, {"content": [{"type": "text", "text": "ok"}]}),
        ]

    client, _ = scripted_client(answer)
    assert client.call_tool("x").text == "ok"


def test_oversized_answer_fails_only_its_own_call(scripted_client, reply):
    def answer(msg):
        if msg.get("params", {}).get("name") == "big":
            head = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[' % msg["id"]
            return [MessageTooLarge("too big", 100, head)]
        return reply(msg, {"content": [{"type": "text", "text": "small"}]}) if msg.get("id") else []

    client, _ = scripted_client(answer)
    with pytest.raises(MessageTooLarge, match="max_message_size=100"):
        client.call_tool("big")
    assert client.call_tool("small").text == "small"


def test_transport_death_fails_pending_calls_at_once_then_reconnects(scripted_client, reply):
    calls = []

    def answer(msg):
        if msg.get("method") == "tools/call":
            calls.append(msg)
            return [] if len(calls) == 1 else reply(msg, {"content": []})
        return []

    client, transport = scripted_client(answer)
    future = client.submit("tools/call", {"name": "slow", "arguments": {}})
    transport.die(ConnectionClosed("server vanished", 9, "last words"))
    with pytest.raises(ConnectionClosed) as err:
        future.result(5)
    assert err.value.exit_code == 9 and "last words" in str(err.value)
    # The next call opens a new connection (a new transport from the factory).
    assert client.call_tool("again").is_error is False
    assert len(calls) == 2


def test_unknown_result_type_is_a_protocol_error_in_2026(scripted_client, reply):
    def answer(msg):
        if msg.get("method") == "server/discover":
            return reply(msg, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})
        return reply(msg, {"resultType": "sometimes", "content": []})

    client, _ = scripted_client(answer, handshake=False)
    assert client.protocol_version == "2026-07-28"
    with pytest.raises(RemoteProtocolError, match="resultType"):
        client.call_tool("x")


def test_endless_input_rounds_are_cut_off(scripted_client, reply):
    def answer(msg):
        if msg.get("method") == "server/discover":
            return reply(msg, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})
        return reply(
            msg,
            {
                "resultType": "input_required",
                "requestState": "s",
                "inputRequests": {"k": {"method": "roots/list"}},
            },
        )

    client, transport = scripted_client(answer, handshake=False, roots=["file:///x"])
    with pytest.raises(RemoteProtocolError, match="more than 16 times"):
        client.call_tool("x")
    retries = [m for m in transport.sent if m.get("method") == "tools/call"]
    assert len({m["id"] for m in retries}) == len(retries) == 17  # a new id every round
    assert all(m["params"]["requestState"] == "s" for m in retries[1:])
    assert retries[1]["params"]["inputResponses"] == {"k": {"roots": [{"uri": "file:///x"}]}}


def test_server_ping_is_answered(scripted_client, reply):
    got = threading.Event()
    box = {}

    def answer(msg):
        if msg.get("method") == "tools/call":
            return [{"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}]
        if msg.get("id") == "srv-1":
            box["answer"] = msg
            got.set()
        return []

    client, _ = scripted_client(answer)
    client.submit("tools/call", {"name": "x"})
    assert got.wait(5)
    assert box["answer"] == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}


def test_tools_with_invalid_header_annotations_are_left_out_in_2026(scripted_client, reply):
    good = {
        "name": "good",
        "inputSchema": {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        },
    }
    bad = {
        "name": "bad",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "number", "x-mcp-header": "N"}},
        },
    }

    def answer(msg):
        if msg.get("method") == "server/discover":
            return reply(msg, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})
        return reply(msg, {"tools": [good, bad]})

    client, _ = scripted_client(answer, handshake=False)
    assert [t.name for t in client.list_tools()] == ["good"]


def test_a_broken_answer_stream_is_reissued_with_a_new_id_in_2026(scripted_client, reply):
    from mcp_lite.transports.base import SendFailed

    calls = []

    def answer(msg):
        if msg.get("method") == "server/discover":
            return reply(msg, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})
        calls.append(msg["id"])
        if len(calls) == 1:
            return [SendFailed(msg["id"], ConnectionClosed("stream dropped"))]
        return reply(msg, {"content": [{"type": "text", "text": "second try"}]})

    client, _ = scripted_client(answer, handshake=False)
    assert client.call_tool("x").text == "second try"
    assert len(calls) == 2 and calls[0] != calls[1]


def test_a_broken_stream_is_not_retried_in_the_handshake_era(scripted_client, reply):
    from mcp_lite.transports.base import SendFailed

    calls = []

    def answer(msg):
        calls.append(msg)
        return [SendFailed(msg["id"], ConnectionClosed("stream dropped"))]

    client, _ = scripted_client(answer)
    with pytest.raises(ConnectionClosed, match="stream dropped"):
        client.call_tool("x")
    assert len(calls) == 1


def test_structured_content_is_checked_against_the_output_schema(scripted_client, reply):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    def answer(msg):
        if msg.get("method") == "tools/list":
            return reply(
                msg,
                {
                    "tools": [
                        {"name": "count", "inputSchema": {"type": "object"}, "outputSchema": schema}
                    ]
                },
            )
        n = msg["params"]["arguments"]["n"]
        return reply(msg, {"content": [], "structuredContent": {"n": n}})

    client, _ = scripted_client(answer)
    assert client.call_tool("count", {"n": "not a number"}).structured_content  # not listed yet
    client.list_tools()
    assert client.call_tool("count", {"n": 3}).structured_content == {"n": 3}
    with pytest.raises(RemoteProtocolError, match="outputSchema"):
        client.call_tool("count", {"n": "not a number"})


def test_a_handshake_server_is_not_probed_again_on_reconnect(scripted_client, reply):
    client, link = scripted_client(lambda msg: reply(msg, {"content": []}) if "id" in msg else [])
    link.die(ConnectionClosed("gone"))
    client.call_tool("x")
    methods = [m.get("method") for m in link.sent]
    assert methods.count("server/discover") == 1 and methods.count("initialize") == 2


def test_fresh_2026_list_results_come_from_the_cache_until_list_changed(scripted_client, reply):
    lists = []

    def answer(msg):
        if msg.get("method") == "server/discover":
            return reply(msg, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})
        if msg.get("method") == "tools/list":
            lists.append(msg["id"])
            return reply(
                msg,
                {
                    "tools": [{"name": f"t{len(lists)}", "inputSchema": {}}],
                    "ttlMs": 60000,
                    "cacheScope": "private",
                },
            )
        return [
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
            *reply(msg, {"content": []}),
        ]

    client, _ = scripted_client(answer, handshake=False)
    assert [t.name for t in client.list_tools()] == ["t1"]
    assert [t.name for t in client.list_tools()] == ["t1"] and len(lists) == 1
    client.call_tool("x")  # the server says its tools changed
    assert [t.name for t in client.list_tools()] == ["t2"] and len(lists) == 2
    uncached, _ = scripted_client(answer, handshake=False, cache_results=False)
    uncached.list_tools()
    uncached.list_tools()
    assert len(lists) == 4


def test_odd_notifications_are_dropped_without_killing_the_connection(scripted_client, reply):
    logs = []

    def answer(msg):
        if msg.get("method") != "tools/call":
            return []
        return [
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {}}},
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"_meta": 5}},
            *reply(msg, {"content": [{"type": "text", "text": "still here"}]}),
        ]

    client, _ = scripted_client(answer, log_handler=logs.append)
    assert client.call_tool("x").text == "still here"
    assert client.call_tool("x").text == "still here"
    assert client.connected


def _listening_server(reply, on_listen):
    """A 2026-07-28 server with resources whose answer to ``subscriptions/listen`` is
    ``on_listen(message)`` (the frames it sends: no result, the stream stays open)."""

    def answer(msg):
        if msg.get("method") == "server/discover":
            caps = {"resources": {"subscribe": True}}
            return reply(msg, {"supportedVersions": ["2026-07-28"], "capabilities": caps})
        if msg.get("method") == "subscriptions/listen":
            return on_listen(msg)
        return reply(msg, {})

    return answer


def _ack(sid, agreed):
    meta = {"io.modelcontextprotocol/subscriptionId": sid}
    params = {"_meta": meta, "notifications": agreed}
    return {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": params,
    }


def test_a_2026_subscription_returns_once_its_stream_is_acknowledged(
    scripted_client, reply, caplog
):
    def on_listen(msg):
        uris = msg["params"]["notifications"]["resourceSubscriptions"]
        return [_ack(msg["id"], {"resourceSubscriptions": [u for u in uris if u != "mem://no"]})]

    client, link = scripted_client(_listening_server(reply, on_listen), handshake=False)
    client.subscribe_resource("mem://a", timeout=5)
    with caplog.at_level("WARNING", logger="mcp_lite.client"):
        client.subscribe_resource("mem://no", timeout=5)  # agreed to less: told, not fatal
    assert "did not agree to subscriptions to mem://no" in caplog.text
    listens = [m for m in link.sent if m.get("method") == "subscriptions/listen"]
    assert [m["params"]["notifications"]["resourceSubscriptions"] for m in listens] == [
        ["mem://a"],
        ["mem://a", "mem://no"],
    ]


@pytest.mark.parametrize("acks", [[], ["someone else's"]], ids=["no ack", "another's ack"])
def test_a_2026_subscription_never_acknowledged_fails_at_the_deadline(scripted_client, reply, acks):
    from mcp_lite.errors import RequestTimeout

    server = _listening_server(reply, lambda msg: [_ack(sid, {}) for sid in acks])
    client, _ = scripted_client(server, handshake=False)
    start = time.monotonic()
    with pytest.raises(RequestTimeout, match="subscribing.*did not acknowledge"):
        client.subscribe_resource("mem://a", timeout=0.5)
    assert time.monotonic() - start < 3 * 0.5 + 1.0
    assert client.call_tool("x").is_error is False  # the connection is fine


def test_a_2026_listen_refused_before_its_ack_fails_the_subscription(scripted_client, reply):
    from mcp_lite.errors import RpcError

    def on_listen(msg):
        error = {"code": -32601, "message": "no subscriptions here"}
        return [{"jsonrpc": "2.0", "id": msg["id"], "error": error}]

    client, _ = scripted_client(_listening_server(reply, on_listen), handshake=False)
    start = time.monotonic()
    with pytest.raises(RpcError, match="no subscriptions here"):
        client.subscribe_resource("mem://a", timeout=30)
    assert time.monotonic() - start < 5  # at once, not at the deadline
