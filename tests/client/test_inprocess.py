"""Client against mcp_lite's own Server, in-process, in both protocol eras."""

from __future__ import annotations

import threading
import time

import pytest

import mcp_lite
from mcp_lite import Context, Server
from mcp_lite.errors import ConnectionClosed, InvalidParams, LocalProtocolError, RequestTimeout


def make_server() -> tuple[Server, dict]:
    seen: dict = {"cancelled": threading.Event()}
    server = Server("calc", instructions="use add")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def fail() -> str:
        raise RuntimeError("kaput")

    @server.tool()
    def interview(ctx: Context) -> str:
        name = ctx.elicit("name?", {"type": "object", "properties": {"v": {"type": "string"}}})
        age = ctx.elicit("age?", {"type": "object", "properties": {"v": {"type": "string"}}})
        return f"{name['content']['v']} is {age['content']['v']}"

    @server.tool()
    def think(ctx: Context) -> str:
        answer = ctx.sample([{"role": "user", "content": {"type": "text", "text": "2+2"}}], 10)
        return answer["content"]["text"]

    @server.tool()
    def where(ctx: Context) -> str:
        return ",".join(root["uri"] for root in ctx.list_roots())

    @server.tool()
    def block(ctx: Context) -> str:
        if ctx.cancelled.wait(10):
            seen["cancelled"].set()
        return "unblocked"

    @server.tool()
    def ticker(steps: int, ctx: Context) -> str:
        for i in range(steps):
            time.sleep(0.05)
            ctx.report_progress(i + 1, steps, f"step {i + 1}")
        return "ticked"

    @server.tool()
    def chatter(ctx: Context) -> str:
        ctx.log("debug", "quiet")
        ctx.log("error", "loud")
        return "said"

    @server.resource("demo://readme", mime_type="text/plain")
    def readme() -> str:
        return "read me"

    @server.resource("demo://notes/{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @server.prompt()
    def greet(who: str) -> str:
        return f"Hello {who}"

    return server, seen


def answers(**overrides):
    handlers = {
        "elicitation_handler": lambda p: {"action": "accept", "content": {"v": p.message[:-1]}},
        "sampling_handler": lambda p: {
            "role": "assistant",
            "model": "m",
            "stopReason": "endTurn",
            "content": {"type": "text", "text": "4"},
        },
        "roots": ["file:///data", "/tmp/x"],
    }
    handlers.update(overrides)
    return handlers


def test_tools_resources_prompts_in_every_era(era):
    server, _ = make_server()
    with mcp_lite.connect(server, protocol_version=era, **answers()) as client:
        assert client.protocol_version == era
        assert client.server_info.name == "calc"
        assert client.instructions == "use add"
        tools = {t.name: t for t in client.list_tools()}
        assert tools["add"].description == "Add two numbers."
        assert tools["add"].input_schema["properties"]["a"]["type"] == "integer"
        res = client.call_tool("add", {"a": 2, "b": 40})
        assert res.structured_content == {"result": 42} and not res.is_error
        failed = client.call_tool("fail")
        assert failed.is_error and "kaput" in failed.text
        with pytest.raises(mcp_lite.ToolError, match="kaput"):
            failed.raise_for_error()
        with pytest.raises(InvalidParams):
            client.call_tool("no-such-tool")
        assert [r.uri for r in client.list_resources()] == ["demo://readme"]
        assert client.read_resource("demo://readme").text == "read me"
        assert client.list_resource_templates()[0].uri_template == "demo://notes/{name}"
        assert client.read_resource("demo://notes/x").text == "note x"
        assert client.list_prompts()[0].name == "greet"
        assert client.get_prompt("greet", {"who": "Ann"}).messages[0].content.text == "Hello Ann"


def test_server_requests_answered_by_handlers_in_every_era(era):
    """Legacy: server-to-client requests; 2026-07-28: input_required rounds (MRTR)."""
    server, _ = make_server()
    with mcp_lite.connect(server, protocol_version=era, **answers()) as client:
        assert client.call_tool("interview").text == "name is age"
        assert client.call_tool("think").text == "4"
        assert client.call_tool("where").text == "file:///data,file:///tmp/x"


def test_a_handler_that_raises_reaches_the_server_as_an_error(era):
    server, _ = make_server()

    def broken(params):
        raise ValueError("user said no")

    with mcp_lite.connect(server, protocol_version=era, **answers(elicitation_handler=broken)) as c:
        if era == "2026-07-28":
            # No request to answer with an error: the call itself fails, saying why.
            with pytest.raises(mcp_lite.McpError, match="user said no"):
                c.call_tool("interview")
        else:
            result = c.call_tool("interview")
            assert result.is_error and "user said no" in result.text
        assert c.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}


def test_timeout_raises_and_tells_the_server(era):
    server, seen = make_server()
    with mcp_lite.connect(server, protocol_version=era) as client:
        with pytest.raises(RequestTimeout) as err:
            client.call_tool("block", timeout=0.3)
        assert isinstance(err.value, TimeoutError) and "tools/call" in str(err.value)
        assert seen["cancelled"].wait(5), "the server never saw notifications/cancelled"
        assert client.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}


def test_progress_reaches_the_callback_in_order(era):
    server, _ = make_server()
    events = []
    with mcp_lite.connect(server, protocol_version=era) as client:
        client.call_tool("ticker", {"steps": 4}, on_progress=events.append)
    assert [(p.progress, p.total, p.message) for p in events] == [
        (1, 4, "step 1"),
        (2, 4, "step 2"),
        (3, 4, "step 3"),
        (4, 4, "step 4"),
    ]


def test_progress_resets_the_timeout_up_to_the_total_cap():
    server, _ = make_server()
    with mcp_lite.connect(server, reset_timeout_on_progress=True, max_total_timeout=30) as client:
        # 40 steps of 50 ms: 2 s in all, twice the 1 s timeout that each progress restarts.
        assert client.call_tool("ticker", {"steps": 40}, timeout=1.0).text == "ticked"
    capped = mcp_lite.connect(server, reset_timeout_on_progress=True, max_total_timeout=0.3)
    with capped, pytest.raises(RequestTimeout, match="total deadline"):
        capped.call_tool("ticker", {"steps": 40}, timeout=0.25)


def test_log_messages_follow_the_level(era):
    server, _ = make_server()
    got = []
    done = threading.Event()

    def on_log(params):
        got.append((params.level, params.data))
        done.set()

    with mcp_lite.connect(server, protocol_version=era, log_handler=on_log) as client:
        client.set_log_level("warning")
        client.call_tool("chatter")
        assert done.wait(5)
    assert got == [("error", "loud")]


def test_ping_works_in_both_eras():
    server, _ = make_server()
    with mcp_lite.connect(server, protocol_version="2025-11-25") as client:
        client.ping()
    with mcp_lite.connect(server) as client:
        assert client.protocol_version == "2026-07-28"
        client.ping()  # a server/discover round trip, since 2026-07-28 has no ping
        client.ping()  # again: never served from the result cache
        # the method itself still does not exist in this revision
        with pytest.raises(LocalProtocolError, match="removed"):
            client.request("ping")


def test_sixteen_threads_share_one_client_and_each_gets_its_own_answer():
    server, _ = make_server()
    wrong: list = []
    with mcp_lite.connect(server) as client:

        def worker(n: int) -> None:
            for i in range(200):
                got = client.call_tool("add", {"a": n, "b": i}).structured_content["result"]
                if got != n + i:
                    wrong.append((n, i, got))

        threads = [threading.Thread(target=worker, args=(n * 1000,)) for n in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
    assert wrong == []


def test_submit_fans_out_with_futures():
    server, _ = make_server()
    with mcp_lite.connect(server) as client:
        futures = [
            client.submit("tools/call", {"name": "add", "arguments": {"a": i, "b": i}})
            for i in range(50)
        ]
        assert [f.result(10)["structuredContent"]["result"] for f in futures] == [
            2 * i for i in range(50)
        ]


def test_closed_client_fails_clearly_and_close_is_idempotent():
    server, _ = make_server()
    client = mcp_lite.connect(server)
    client.close()
    client.close()
    with pytest.raises(ConnectionClosed, match="closed"):
        client.list_tools()


def test_pending_calls_fail_at_once_when_the_client_closes():
    server, _ = make_server()
    client = mcp_lite.connect(server)
    future = client.submit("tools/call", {"name": "block", "arguments": {}})
    client.close()
    with pytest.raises(ConnectionClosed):
        future.result(5)


def test_resource_updates_reach_the_notification_handler(era):
    server, _ = make_server()
    seen = []
    arrived, acknowledged = threading.Event(), threading.Event()

    def on_note(method, params):
        seen.append(method)
        if method == "notifications/resources/updated":
            arrived.set()
        if method == "notifications/subscriptions/acknowledged":
            acknowledged.set()

    with mcp_lite.connect(server, protocol_version=era, notification_handler=on_note) as client:
        client.subscribe_resource("demo://readme")
        if era == "2026-07-28":  # a listen stream: wait until the server has it
            assert acknowledged.wait(5), seen
        server.notify_resource_updated("demo://readme")
        assert arrived.wait(5), seen
