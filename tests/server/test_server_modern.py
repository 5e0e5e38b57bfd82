"""The stateless era (2026-07-28): per-request ``_meta``, discover, MRTR, subscriptions."""

from __future__ import annotations

import base64
import threading
from typing import Any

import pytest
from server_harness import modern_meta

from mcp_lite.protocol import versions as pv
from mcp_lite.server import Context, Server

SUB = pv.META_SUBSCRIPTION_ID


def make_server(**kwargs: Any) -> Server:
    s = Server("modern", version="2.0", instructions="Use wisely.", **kwargs)

    @s.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @s.tool()
    def signup(ctx: Context) -> dict[str, Any]:
        """Two questions, then one model call: three rounds."""
        name = ctx.elicit(
            "Name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        )
        if name["action"] != "accept":
            return {"status": name["action"]}
        age = ctx.elicit("Age?", {"type": "object", "properties": {"age": {"type": "integer"}}})
        poem = ctx.sample(f"A poem for {name['content']['name']}", max_tokens=20)
        return {
            "name": name["content"]["name"],
            "age": age["content"]["age"],
            "poem": poem["content"]["text"],
        }

    @s.tool()
    def where(ctx: Context) -> list[str]:
        return [r["uri"] for r in ctx.list_roots()]

    @s.tool()
    def chatty(ctx: Context) -> str:
        for level in ("debug", "info", "error"):
            ctx.log(level, level)
        ctx.report_progress(1, 1)
        return "ok"

    @s.resource("demo://r")
    def r() -> str:
        return "R"

    @s.resource("demo://secret/{name}")
    def secret(name: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Unlock {name}?", {"type": "object", "properties": {}})
        return "opened" if answer["action"] == "accept" else "locked"

    @s.prompt()
    def hello(who: str) -> str:
        return f"Hello {who}"

    return s


@pytest.fixture
def peer(peers: Any) -> Any:
    return peers(make_server())


def test_discover(peer: Any) -> None:
    res = peer.modern("server/discover")
    assert res["result"] == {
        "resultType": "complete",
        "supportedVersions": list(pv.SUPPORTED_VERSIONS),
        "capabilities": {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "logging": {},
            "completions": {},
        },
        "instructions": "Use wisely.",
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {pv.META_SERVER_INFO: {"name": "modern", "version": "2.0"}},
    }


def test_no_initialize_needed_and_result_fields(peer: Any) -> None:
    listed = peer.modern("tools/list")["result"]
    assert [t["name"] for t in listed["tools"]] == ["add", "signup", "where", "chatty"]
    assert (listed["resultType"], listed["ttlMs"], listed["cacheScope"]) == (
        "complete",
        0,
        "private",
    )
    called = peer.modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})["result"]
    assert called == {
        "content": [{"type": "text", "text": "3"}],
        "structuredContent": {"result": 3},
        "isError": False,
        "resultType": "complete",
    }  # not cacheable: no ttlMs
    read = peer.modern("resources/read", {"uri": "demo://r"})["result"]
    assert read["contents"][0]["text"] == "R" and read["ttlMs"] == 0
    for method in ("resources/list", "resources/templates/list", "prompts/list"):
        assert peer.modern(method)["result"]["cacheScope"] == "private"
    got = peer.modern("prompts/get", {"name": "hello", "arguments": {"who": "x"}})["result"]
    assert got["resultType"] == "complete" and "ttlMs" not in got


def test_era_errors(peer: Any) -> None:
    err = peer.request(
        "tools/list",
        {"_meta": {pv.META_PROTOCOL_VERSION: "2030-01-01", pv.META_CLIENT_CAPABILITIES: {}}},
    )["error"]
    assert err["code"] == -32022
    assert err["data"] == {"supported": list(pv.SUPPORTED_VERSIONS), "requested": "2030-01-01"}
    for method in ("ping", "logging/setLevel", "resources/subscribe", "initialize"):
        assert peer.modern(method, {"level": "info", "uri": "x"})["error"]["code"] == -32601
    missing = peer.request("tools/list", {"_meta": {pv.META_PROTOCOL_VERSION: pv.V2026_07_28}})
    assert missing["error"]["code"] == -32602
    assert peer.modern("resources/read", {"uri": "demo://nope"})["error"]["code"] == -32602
    assert peer.modern("tools/list", **{pv.META_LOG_LEVEL: "loud"})["error"]["code"] == -32602


def test_modern_only_server(peers: Any) -> None:
    p = peers(make_server(versions=(pv.V2026_07_28,)))
    init = p.request(
        "initialize",
        {
            "protocolVersion": pv.V2025_06_18,
            "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"},
        },
    )["error"]
    assert init["code"] == -32022 and init["data"]["supported"] == [pv.V2026_07_28]
    assert pv.V2026_07_28 in init["message"]
    assert p.request("tools/list")["error"]["code"] == -32602  # no _meta
    assert p.request("ping")["error"]["code"] == -32601
    assert p.modern("server/discover")["result"]["supportedVersions"] == [pv.V2026_07_28]


def test_dual_era_on_one_connection(peer: Any) -> None:
    peer.initialize()
    assert peer.result("ping") == {}
    assert peer.modern("tools/list")["result"]["resultType"] == "complete"
    assert "resultType" not in peer.result("tools/list")


def run_mrtr(
    peer: Any,
    method: str,
    params: dict[str, Any],
    caps: dict[str, Any],
    answers: list[dict[str, Any]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Play the client's side of MRTR: answer each round from ``answers``, in order."""
    asked: list[dict[str, Any]] = []
    retry: dict[str, Any] = {}
    for _ in range(len(answers) + 1):
        res = peer.modern(method, {**params, **retry}, caps=caps)["result"]
        if res["resultType"] == "complete":
            return res, asked
        assert res["resultType"] == "input_required"
        ((key, request),) = res["inputRequests"].items()
        asked.append(request)
        retry = {
            "inputResponses": {key: answers[len(asked) - 1]},
            "requestState": res["requestState"],
        }
    raise AssertionError("too many rounds")


def test_mrtr_multi_round(peer: Any) -> None:
    caps = {"elicitation": {}, "sampling": {}}
    answers = [
        {"action": "accept", "content": {"name": "Ann"}},
        {"action": "accept", "content": {"age": 7}},
        {"role": "assistant", "content": {"type": "text", "text": "roses"}, "model": "m"},
    ]
    res, asked = run_mrtr(peer, "tools/call", {"name": "signup"}, caps, answers)
    assert res["structuredContent"] == {"name": "Ann", "age": 7, "poem": "roses"}
    assert [a["method"] for a in asked] == [
        "elicitation/create",
        "elicitation/create",
        "sampling/createMessage",
    ]
    assert asked[0]["params"] == {
        "mode": "form",
        "message": "Name?",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    }
    assert asked[2]["params"]["maxTokens"] == 20
    # A decline ends it after one round.
    res, asked = run_mrtr(peer, "tools/call", {"name": "signup"}, caps, [{"action": "decline"}])
    assert res["structuredContent"] == {"status": "decline"} and len(asked) == 1


def test_mrtr_on_resources_and_roots(peer: Any) -> None:
    res, asked = run_mrtr(
        peer,
        "resources/read",
        {"uri": "demo://secret/box"},
        {"elicitation": {}},
        [{"action": "accept", "content": {}}],
    )
    assert res["contents"][0]["text"] == "opened" and asked[0]["params"]["message"] == "Unlock box?"
    res, asked = run_mrtr(
        peer, "tools/call", {"name": "where"}, {"roots": {}}, [{"roots": [{"uri": "file:///w"}]}]
    )
    assert res["structuredContent"] == {"result": ["file:///w"]}
    assert asked == [{"method": "roots/list", "params": {}}]


def test_mrtr_keys_are_input_n_and_inputs_are_accepted_without_state(peer: Any) -> None:
    first = peer.modern("tools/call", {"name": "signup"}, caps={"elicitation": {}})["result"]
    assert list(first["inputRequests"]) == ["input_0"]
    direct = peer.modern(
        "tools/call",
        {
            "name": "signup",
            "inputResponses": {"input_0": {"action": "accept", "content": {"name": "B"}}},
        },
        caps={"elicitation": {}},
    )["result"]
    assert list(direct["inputRequests"]) == ["input_1"]


def test_mrtr_missing_capability(peer: Any) -> None:
    err = peer.modern("tools/call", {"name": "signup"}, caps={})["error"]
    assert err["code"] == -32021
    assert err["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    res = peer.modern(
        "tools/call",
        {
            "name": "signup",
            "inputResponses": {
                "input_0": {"action": "accept", "content": {"name": "x"}},
                "input_1": {"action": "accept", "content": {"age": 1}},
            },
        },
        caps={"elicitation": {}},
    )
    assert res["error"] == {
        "code": -32021,
        "message": "this request needs the client capability 'sampling'",
        "data": {"requiredCapabilities": {"sampling": {}}},
    }


def test_request_state_is_validated(peer: Any, peers: Any) -> None:
    caps = {"elicitation": {}}
    state = peer.modern("tools/call", {"name": "signup"}, caps=caps)["result"]["requestState"]
    raw = bytearray(base64.urlsafe_b64decode(state))
    raw[-3] ^= 1  # tamper with the payload
    forged = base64.urlsafe_b64encode(bytes(raw)).decode()
    for bad in (forged, "not base64 at all", 12):
        err = peer.modern("tools/call", {"name": "signup", "requestState": bad}, caps=caps)["error"]
        assert err["code"] == -32602 and "requestState" in err["message"]
    # State minted for one request is refused on another.
    other = peer.modern("tools/call", {"name": "where", "requestState": state}, caps={"roots": {}})
    assert other["error"]["code"] == -32602
    # And by another Server object: each has its own key.
    other_server = peers(make_server())
    err = other_server.modern("tools/call", {"name": "signup", "requestState": state}, caps=caps)
    assert err["error"]["code"] == -32602
    assert (
        peer.modern("tools/call", {"name": "signup", "inputResponses": []}, caps=caps)["error"][
            "code"
        ]
        == -32602
    )


def test_logging_needs_the_meta_level(peer: Any) -> None:
    peer.modern("tools/call", {"name": "chatty"})
    peer.assert_quiet(0.05)  # no logLevel, no progress token: nothing
    res = peer.modern(
        "tools/call", {"name": "chatty"}, **{pv.META_LOG_LEVEL: "info", "progressToken": 5}
    )
    assert res["result"]["content"][0]["text"] == "ok"
    got = [peer.next() for _ in range(3)]
    assert [m["params"].get("level") for m in got] == ["info", "error", None]
    assert got[2]["params"] == {"progressToken": 5, "progress": 1, "total": 1}


def ack_params(agreed: dict[str, Any], rid: Any) -> dict[str, Any]:
    return {"_meta": {SUB: rid}, "notifications": agreed}


def listen(peer: Any, rid: Any, notifications: dict[str, Any]) -> None:
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "subscriptions/listen",
            "params": {"_meta": modern_meta(), "notifications": notifications},
        }
    )


def test_listen_ack_notifications_and_cancel(peer: Any) -> None:
    server = peer.conn.server
    listen(
        peer,
        "L1",
        {
            "toolsListChanged": True,
            "resourceSubscriptions": ["demo://r"],
            "promptsListChanged": False,
            "bogus": True,
        },
    )
    ack = peer.next()
    assert ack == {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": ack_params(
            {"toolsListChanged": True, "resourceSubscriptions": ["demo://r"]}, "L1"
        ),
    }
    listen(peer, 2, {"promptsListChanged": True})
    assert peer.next()["params"] == ack_params({"promptsListChanged": True}, 2)
    server.notify_tools_changed()
    server.notify_prompts_changed()
    server.notify_resources_changed()  # nobody asked
    server.notify_resource_updated("demo://r")
    server.notify_resource_updated("demo://other")
    assert peer.next() == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {SUB: "L1"}},
    }
    assert peer.next()["params"] == {"_meta": {SUB: 2}}
    assert peer.next() == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"_meta": {SUB: "L1"}, "uri": "demo://r"},
    }
    peer.assert_quiet()
    # The client cancels L1: no response, no more notifications for it.
    peer.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "L1"}}
    )
    server.notify_tools_changed()
    server.notify_prompts_changed()
    assert peer.next()["params"] == {"_meta": {SUB: 2}}
    peer.assert_quiet()
    # Closing the connection ends listen 2 gracefully: a result, then notifications/cancelled.
    peer.conn.close()
    assert peer.next() == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {"resultType": "complete", "_meta": {SUB: 2}},
    }
    assert peer.next()["params"]["requestId"] == 2


def test_listen_only_agrees_to_what_the_server_has(peers: Any) -> None:
    p = peers(Server("bare"))
    listen(p, 1, {"toolsListChanged": True, "resourceSubscriptions": ["x://y"]})
    assert p.next()["params"] == ack_params({}, 1)
    bad = p.request(
        "subscriptions/listen",
        rid=2,
        params={
            "_meta": {pv.META_PROTOCOL_VERSION: "1999-01-01", pv.META_CLIENT_CAPABILITIES: {}},
            "notifications": {},
        },
    )
    assert bad["error"]["code"] == -32022
    bad = p.request(
        "subscriptions/listen", rid=3, params={"_meta": modern_meta(), "notifications": 3}
    )
    assert bad["error"]["code"] == -32602
    dup = p.request(
        "subscriptions/listen", rid=1, params={"_meta": modern_meta(), "notifications": {}}
    )
    assert dup["error"]["code"] == -32600  # id 1 is still open


def test_cancel_a_modern_call(peers: Any) -> None:
    s = Server("c")
    started = threading.Event()

    @s.tool()
    def wait(ctx: Context) -> str:
        started.set()
        ctx.cancelled.wait(5)
        return "late"

    p = peers(s)
    p.send(
        {
            "jsonrpc": "2.0",
            "id": "w",
            "method": "tools/call",
            "params": {"name": "wait", "_meta": modern_meta()},
        }
    )
    assert started.wait(5)
    p.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "w"}})
    p.assert_quiet(0.3)
