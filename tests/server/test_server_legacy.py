"""The handshake era (2024-11-05 … 2025-11-25), driven through ``ServerConnection``."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from mcp_lite.errors import InvalidParams
from mcp_lite.protocol import versions as pv
from mcp_lite.server import Context, Server


def make_server(**kwargs: Any) -> Server:
    s = Server("calc", version="1.2.3", instructions="Be nice.", **kwargs)

    @s.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @s.tool()
    def boom() -> str:
        raise RuntimeError("kaboom")

    @s.tool()
    def strict() -> str:
        raise InvalidParams("strict says no", data={"why": "test"})

    @s.resource("file:///demo/readme.txt", description="Read me")
    def readme() -> str:
        return "hello"

    @s.resource("note://{name}")
    def note(name: str) -> str:
        return f"note:{name}"

    @s.prompt()
    def summarize(text: str) -> str:
        """Summarize a text."""
        return f"Summarize: {text}"

    @s.completion()
    def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
        return [v for v in ("alpha", "beta", "alps") if v.startswith(argument["value"])]

    return s


@pytest.fixture
def peer(peers: Any) -> Any:
    p = peers(make_server())
    p.initialize()
    return p


# --- lifecycle -------------------------------------------------------------------------


@pytest.mark.parametrize("version", pv.HANDSHAKE_VERSIONS)
def test_initialize_echoes_a_supported_version(peers: Any, version: str) -> None:
    result = peers(make_server()).initialize(version)
    assert result == {
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "logging": {},
            "completions": {},
        },
        "serverInfo": {"name": "calc", "version": "1.2.3"},
        "instructions": "Be nice.",
    }


def test_initialize_counter_offers_the_newest_it_has(peers: Any) -> None:
    assert peers(make_server()).initialize("2099-01-01")["protocolVersion"] == pv.V2025_11_25
    legacy = Server("old", versions=(pv.V2025_06_18, pv.V2024_11_05))
    assert peers(legacy).initialize("2099-01-01")["protocolVersion"] == pv.V2025_06_18


def test_capabilities_only_for_registered_kinds(peers: Any) -> None:
    caps = peers(Server("empty")).initialize()["capabilities"]
    assert caps == {"logging": {}, "completions": {}}


def test_requests_before_initialize(peers: Any) -> None:
    p = peers(make_server())
    assert p.request("ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert p.request("tools/list")["error"]["code"] == -32600
    assert p.request("no/such")["error"]["code"] == -32601
    # A modern-keyed request to a legacy-only server is a legacy request: rejected too.
    legacy = peers(Server("old", versions=(pv.V2025_06_18,)))
    meta = {pv.META_PROTOCOL_VERSION: pv.V2026_07_28, pv.META_CLIENT_CAPABILITIES: {}}
    assert legacy.request("tools/list", {"_meta": meta})["error"]["code"] == -32600
    assert legacy.request("server/discover", {"_meta": meta})["error"]["code"] == -32601


def test_malformed_messages(peer: Any) -> None:
    peer.send("{not json")
    assert peer.next()["error"]["code"] == -32700
    peer.send({"id": 5, "method": "ping"})  # no "jsonrpc"
    assert peer.next()["error"]["code"] == -32600
    peer.send({"jsonrpc": "2.0", "id": None, "method": "ping"})
    assert peer.next() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid Request: bad id or method"},
    }
    assert peer.request("ping", params=[1])["error"]["code"] == -32602  # type: ignore[arg-type]
    peer.send([])
    assert peer.next()["error"]["code"] == -32600
    assert peer.request("ping", rid="s-1")["result"] == {}


def test_ping_and_unknown_method(peer: Any) -> None:
    assert peer.result("ping") == {}
    err = peer.request("tools/frobnicate")["error"]
    assert err["code"] == -32601 and "tools/frobnicate" in err["message"]
    # Stateless-era methods do not exist in this era.
    assert peer.request("subscriptions/listen", {"notifications": {}})["error"]["code"] == -32601


# --- tools -----------------------------------------------------------------------------


def test_tools_list_and_call(peer: Any) -> None:
    names = [t["name"] for t in peer.result("tools/list")["tools"]]
    assert names == ["add", "boom", "strict"]
    assert peer.result("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}) == {
        "content": [{"type": "text", "text": "5"}],
        "structuredContent": {"result": 5},
        "isError": False,
    }


def test_tool_errors(peer: Any) -> None:
    err = peer.request("tools/call", {"name": "nope", "arguments": {}})["error"]
    assert err["code"] == -32602 and "nope" in err["message"]
    assert peer.result("tools/call", {"name": "boom"}) == {
        "content": [{"type": "text", "text": "kaboom"}],
        "isError": True,
    }
    invalid = peer.result("tools/call", {"name": "add", "arguments": {"a": 1}})
    assert invalid["isError"] is True and "b" in invalid["content"][0]["text"]
    assert (
        peer.request("tools/call", {"name": "add", "arguments": [1, 2]})["error"]["code"] == -32602
    )
    # An RpcError raised by a tool is a JSON-RPC error, not a tool error.
    assert peer.request("tools/call", {"name": "strict"})["error"] == {
        "code": -32602,
        "message": "strict says no",
        "data": {"why": "test"},
    }


# --- resources, prompts, completion ------------------------------------------------------


def test_resources(peer: Any) -> None:
    assert peer.result("resources/list") == {
        "resources": [
            {"uri": "file:///demo/readme.txt", "name": "readme", "description": "Read me"}
        ]
    }
    assert peer.result("resources/templates/list") == {
        "resourceTemplates": [{"uriTemplate": "note://{name}", "name": "note"}]
    }
    assert peer.result("resources/read", {"uri": "file:///demo/readme.txt"}) == {
        "contents": [{"uri": "file:///demo/readme.txt", "mimeType": "text/plain", "text": "hello"}]
    }
    assert (
        peer.result("resources/read", {"uri": "note://a%2Fb"})["contents"][0]["text"] == "note:a/b"
    )
    err = peer.request("resources/read", {"uri": "file:///missing"})["error"]
    assert err["code"] == -32002 and err["data"] == {"uri": "file:///missing"}


def test_resource_subscription(peer: Any, peers: Any) -> None:
    server = peer.conn.server
    other = peers(server)
    other.initialize()
    assert peer.result("resources/subscribe", {"uri": "note://x"}) == {}
    server.notify_resource_updated("note://x")
    server.notify_resource_updated("note://y")
    assert peer.next() == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "note://x"},
    }
    peer.assert_quiet()
    other.assert_quiet(0.01)  # not subscribed
    assert peer.result("resources/unsubscribe", {"uri": "note://x"}) == {}
    server.notify_resource_updated("note://x")
    peer.assert_quiet()


def test_list_changed_goes_to_every_initialized_connection(peer: Any, peers: Any) -> None:
    server = peer.conn.server
    fresh = peers(server)  # not initialized: hears nothing
    server.notify_tools_changed()
    server.notify_prompts_changed()
    server.notify_resources_changed()
    methods = [peer.next()["method"] for _ in range(3)]
    assert methods == [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
    ]
    fresh.assert_quiet()


def test_prompts(peer: Any) -> None:
    assert peer.result("prompts/list") == {
        "prompts": [
            {
                "name": "summarize",
                "description": "Summarize a text.",
                "arguments": [{"name": "text", "required": True}],
            }
        ]
    }
    assert peer.result("prompts/get", {"name": "summarize", "arguments": {"text": "x"}}) == {
        "description": "Summarize a text.",
        "messages": [{"role": "user", "content": {"type": "text", "text": "Summarize: x"}}],
    }
    assert peer.request("prompts/get", {"name": "nope"})["error"]["code"] == -32602
    missing = peer.request("prompts/get", {"name": "summarize"})["error"]
    assert missing["code"] == -32602 and "text" in missing["message"]


def test_completion(peer: Any) -> None:
    got = peer.result(
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "summarize"},
            "argument": {"name": "text", "value": "al"},
        },
    )
    assert got == {"completion": {"values": ["alpha", "alps"], "total": 2, "hasMore": False}}
    assert peer.request("completion/complete", {"ref": "x"})["error"]["code"] == -32602


def test_pagination(peers: Any) -> None:
    s = Server("many", page_size=2)
    for i in range(5):
        s.tool(name=f"t{i}")(lambda: None)
    p = peers(s)
    p.initialize()
    seen, cursor, pages = [], None, 0
    while True:
        page = p.result("tools/list", {"cursor": cursor} if cursor is not None else {})
        pages += 1
        seen += [t["name"] for t in page["tools"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            break
        assert isinstance(cursor, str)
    assert seen == ["t0", "t1", "t2", "t3", "t4"] and pages == 3
    assert p.request("tools/list", {"cursor": "garbage!"})["error"]["code"] == -32602
    # A cursor of one list is not valid for another.
    first = p.result("tools/list")["nextCursor"]
    assert p.request("prompts/list", {"cursor": first})["error"]["code"] == -32602


# --- batches, cancellation, progress, logging ---------------------------------------------


def test_batch_is_answered_as_a_list(peer: Any) -> None:
    peer.send(
        [
            {"jsonrpc": "2.0", "id": "a", "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": "b",
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
            },
            {"jsonrpc": "2.0", "id": "c", "method": "nope"},
            42,
        ]
    )
    answer = peer.next()
    assert isinstance(answer, list)
    by_id = {m.get("id"): m for m in answer}
    assert set(by_id) == {"a", "b", "c", None}
    assert by_id["a"]["result"] == {}
    assert by_id["b"]["result"]["structuredContent"] == {"result": 2}
    assert by_id["c"]["error"]["code"] == -32601
    assert by_id[None]["error"]["code"] == -32600
    peer.send([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
    peer.assert_quiet()  # only notifications: nothing to answer


def slow_server() -> tuple[Server, threading.Event, list[bool]]:
    s = Server("slow")
    started = threading.Event()
    outcome: list[bool] = []

    @s.tool()
    def wait(ctx: Context) -> str:
        started.set()
        outcome.append(ctx.cancelled.wait(5))
        return "done"

    @s.tool()
    def steps(n: int, ctx: Context) -> str:
        for i in range(1, n + 1):
            ctx.report_progress(i, total=n, message=f"step {i}")
        return "ok"

    @s.tool()
    def chatty(ctx: Context) -> str:
        for level in ("debug", "info", "warning", "error"):
            ctx.log(level, {"at": level}, logger="chat")
        return "ok"

    return s, started, outcome


def test_cancellation_sets_the_event_and_suppresses_the_response(peers: Any) -> None:
    s, started, outcome = slow_server()
    p = peers(s)
    p.initialize()
    p.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "wait"}})
    assert started.wait(5)
    p.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 9, "reason": "user"},
        }
    )
    deadline = time.monotonic() + 5
    while not outcome and time.monotonic() < deadline:
        time.sleep(0.01)
    assert outcome == [True]
    p.assert_quiet(0.3)
    # Unknown ids are ignored; the connection still works.
    p.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 777}})
    assert p.result("ping") == {}


def test_progress_only_with_a_token(peers: Any) -> None:
    s, _, _ = slow_server()
    p = peers(s)
    p.initialize()
    assert (
        p.result("tools/call", {"name": "steps", "arguments": {"n": 2}})["content"][0]["text"]
        == "ok"
    )
    p.assert_quiet(0.05)
    p.result(
        "tools/call", {"name": "steps", "arguments": {"n": 2}, "_meta": {"progressToken": "tok"}}
    )
    notes = [p.notification("notifications/progress")["params"] for _ in range(2)]
    assert notes == [
        {"progressToken": "tok", "progress": 1, "total": 2, "message": "step 1"},
        {"progressToken": "tok", "progress": 2, "total": 2, "message": "step 2"},
    ]


def test_logging_level_filter(peers: Any) -> None:
    s, _, _ = slow_server()
    p = peers(s)
    p.initialize()
    p.result("tools/call", {"name": "chatty"})
    assert [p.notification("notifications/message")["params"]["level"] for _ in range(4)] == [
        "debug",
        "info",
        "warning",
        "error",
    ]  # before setLevel: everything
    assert p.result("logging/setLevel", {"level": "warning"}) == {}
    p.result("tools/call", {"name": "chatty"})
    got = [p.notification("notifications/message")["params"] for _ in range(2)]
    assert got == [
        {"level": "warning", "data": {"at": "warning"}, "logger": "chat"},
        {"level": "error", "data": {"at": "error"}, "logger": "chat"},
    ]
    p.assert_quiet(0.05)
    assert p.request("logging/setLevel", {"level": "loud"})["error"]["code"] == -32602


# --- server → client requests --------------------------------------------------------------


def asking_server(**kwargs: Any) -> Server:
    s = Server("asker", **kwargs)

    @s.tool()
    def ask(ctx: Context) -> dict[str, Any]:
        answer = ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return {"answer": answer}

    @s.tool()
    def think(ctx: Context) -> str:
        return str(ctx.sample("2+2?", max_tokens=5, temperature=0)["content"]["text"])

    @s.tool()
    def roots(ctx: Context) -> list[str]:
        return [r["uri"] for r in ctx.list_roots()]

    @s.tool()
    def visit(ctx: Context) -> str:
        return str(ctx.elicit_url("Log in", "https://example.com/login", "el-1")["action"])

    return s


def test_elicitation_round_trip(peers: Any) -> None:
    p = peers(asking_server())
    p.initialize(pv.V2025_06_18, caps={"elicitation": {}})
    p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}})
    req = p.wait_for(lambda m: m.get("method") == "elicitation/create")
    assert req["params"] == {
        "message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    }  # no "mode" before 2025-11-25
    p.send(
        {
            "jsonrpc": "2.0",
            "id": req["id"],
            "result": {"action": "accept", "content": {"name": "Ann"}},
        }
    )
    assert p.response(1)["result"]["structuredContent"] == {
        "answer": {"action": "accept", "content": {"name": "Ann"}}
    }


def test_sampling_roots_and_url_elicitation(peers: Any) -> None:
    p = peers(asking_server())
    p.initialize(pv.V2025_11_25, caps={"sampling": {}, "roots": {}, "elicitation": {"url": {}}})
    p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "think"}})
    req = p.wait_for(lambda m: m.get("method") == "sampling/createMessage")
    assert req["params"] == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
        "maxTokens": 5,
        "temperature": 0,
    }
    p.send(
        {
            "jsonrpc": "2.0",
            "id": req["id"],
            "result": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"},
        }
    )
    assert p.response(1)["result"]["content"][0]["text"] == "4"

    p.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "roots"}})
    req = p.wait_for(lambda m: m.get("method") == "roots/list")
    p.send({"jsonrpc": "2.0", "id": req["id"], "result": {"roots": [{"uri": "file:///a"}]}})
    assert p.response(2)["result"]["structuredContent"] == {"result": ["file:///a"]}

    p.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "visit"}})
    req = p.wait_for(lambda m: m.get("method") == "elicitation/create")
    assert req["params"] == {
        "mode": "url",
        "message": "Log in",
        "url": "https://example.com/login",
        "elicitationId": "el-1",
    }
    p.send({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "decline"}})
    assert p.response(3)["result"]["content"][0]["text"] == "decline"


def test_client_errors_and_missing_capabilities_are_tool_errors(peers: Any) -> None:
    p = peers(asking_server())
    p.initialize(caps={"elicitation": {}})
    res = p.result("tools/call", {"name": "think"})  # no sampling capability: nothing sent
    assert res["isError"] is True and "sampling" in res["content"][0]["text"]
    res = p.result("tools/call", {"name": "visit"})  # {} means form mode only
    assert res["isError"] is True and "elicitation" in res["content"][0]["text"]
    p.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ask"}})
    req = p.wait_for(lambda m: m.get("method") == "elicitation/create")
    assert req["params"]["mode"] == "form"  # 2025-11-25 names the mode
    p.send({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -1, "message": "user said no"}})
    res = p.response(5)["result"]
    assert res["isError"] is True and "user said no" in res["content"][0]["text"]


def test_client_request_timeout_sends_cancel(peers: Any) -> None:
    p = peers(asking_server(client_request_timeout=0.2))
    p.initialize(caps={"elicitation": {}})
    p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}})
    req = p.wait_for(lambda m: m.get("method") == "elicitation/create")
    cancel = p.notification("notifications/cancelled")
    assert cancel["params"]["requestId"] == req["id"]
    res = p.response(1)["result"]
    assert res["isError"] is True and "no answer" in res["content"][0]["text"]


def test_close_fails_pending_client_requests_and_is_idempotent(peers: Any) -> None:
    p = peers(asking_server())
    p.initialize(caps={"elicitation": {}})
    p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}})
    p.wait_for(lambda m: m.get("method") == "elicitation/create")
    start = time.monotonic()
    p.conn.close()
    p.conn.close()
    assert time.monotonic() - start < 1.5
    res = p.response(1)["result"]  # the in-flight call finished within the grace period
    assert res["isError"] is True and "closed" in res["content"][0]["text"]
    assert p.conn.closed
    p.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    p.assert_quiet(0.1)  # nothing is sent after close


def test_a_handler_crash_never_kills_the_connection(peers: Any) -> None:
    s = Server("x")

    @s.resource("bad://r")
    def bad() -> str:
        raise OSError("disk on fire")

    p = peers(s)
    p.initialize()
    err = p.request("resources/read", {"uri": "bad://r"})["error"]
    assert err["code"] == -32603 and "disk on fire" in err["message"]
    assert p.result("ping") == {}
