"""What a new user meets first: a misspelt option, a server that dies at start-up, the
SDK's camelCase names, tool definitions and a future of a tool call on one Client."""

from __future__ import annotations

import dataclasses
import pickle
import sys
import threading
import time
from concurrent.futures import CancelledError, Future

import pytest

import mcp_lite
from mcp_lite import Context, Server
from mcp_lite.errors import (
    ConfigError,
    ConnectError,
    ConnectionClosed,
    RemoteProtocolError,
    RequestTimeout,
    ServerExitedAtStart,
    UnknownOption,
)
from mcp_lite.protocol import types
from mcp_lite.protocol.results import CallToolResult
from mcp_lite.protocol.tools import Tool


@dataclasses.dataclass
class Point:
    x: int


def make_server() -> tuple[Server, dict]:
    seen: dict = {"cancelled": threading.Event(), "started": threading.Event()}
    server = Server("geo")

    @server.tool()
    def where(x: int) -> Point:
        """Where x is."""
        return Point(x)

    @server.tool()
    def liar() -> Point:
        return {"content": [{"type": "text", "text": "x"}], "structuredContent": {"x": "no"}}

    @server.tool(name="dotted.name")
    def dotted() -> str:
        return "dot"

    @server.tool()
    def block(ctx: Context) -> str:
        seen["started"].set()
        if ctx.cancelled.wait(10):
            seen["cancelled"].set()
        return "unblocked"

    @server.tool()
    def ticker(ctx: Context) -> str:
        for i in range(3):
            ctx.report_progress(i + 1, 3)
        return "ticked"

    return server, seen


@pytest.fixture(params=["auto", "2025-11-25"], ids=["2026-07-28", "handshake"])
def client(request):
    server, seen = make_server()
    with mcp_lite.connect(server, timeout=5, protocol_version=request.param) as c:
        c.seen = seen
        yield c


# --- 1. a misspelt option ----------------------------------------------------------------------


def test_connect_names_a_misspelt_option_before_starting_anything(tmp_path):
    marker = tmp_path / "started"
    target = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    with pytest.raises(UnknownOption) as caught:
        mcp_lite.connect(target, timout=2)
    message = str(caught.value)
    assert "connect() got an unknown option 'timout' (did you mean 'timeout'?)" in message
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ConfigError)
    assert not marker.exists()  # refused before the server was started
    with pytest.raises(TypeError, match="unknown option 'zzzz'"):
        mcp_lite.connect(target, zzzz=1)


def test_unknown_option_pickles_and_client_keeps_pythons_type_error():
    clone = pickle.loads(pickle.dumps(UnknownOption("connect() got an unknown option 'x'")))
    assert type(clone) is UnknownOption and "'x'" in str(clone)
    with pytest.raises(TypeError, match="timout"):
        mcp_lite.Client([sys.executable, "-c", "0"], timout=2)


def test_help_of_connect_points_at_every_option():
    assert "help(Client)" in (mcp_lite.connect.__doc__ or "")
    doc = mcp_lite.Client.__doc__ or ""
    import inspect

    for param in inspect.signature(mcp_lite.Client.__init__).parameters.values():
        if param.kind is param.KEYWORD_ONLY:
            assert f"{param.name}:" in doc, param.name


# --- 2. a server that dies during start-up ------------------------------------------------------


DIES = "import sys; sys.stderr.write('no config file\\n'); sys.exit(3)"


def test_a_server_dying_at_start_up_is_a_connect_error():
    started = time.monotonic()
    with pytest.raises(ConnectError) as caught:
        mcp_lite.connect([sys.executable, "-c", DIES], timeout=2)
    assert time.monotonic() - started < 3
    err = caught.value
    assert isinstance(err, ServerExitedAtStart) and isinstance(err, ConnectionClosed)
    assert err.exit_code == 3 and "no config file" in err.stderr_tail
    assert str(err).startswith("connecting: ") and "exit code 3" in str(err)
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is ServerExitedAtStart and clone.exit_code == 3


def test_old_code_catching_connection_closed_still_catches_it():
    try:
        mcp_lite.connect([sys.executable, "-c", DIES], timeout=2)
    except ConnectionClosed as exc:  # what it was before
        assert exc.exit_code == 3
    else:
        pytest.fail("connect() did not fail")


def test_a_reconnect_to_a_server_that_now_dies_is_a_connect_error(tmp_path):
    flag = tmp_path / "die"
    script = (
        "import os, sys\n"
        f"if os.path.exists({str(flag)!r}): sys.exit(4)\n"
        "from mcp_lite import Server\n"
        "s = Server('once')\n"
        "s.tool()(lambda: 'ok')\n"
        "s.run_stdio()\n"
    )
    path = tmp_path / "srv.py"
    path.write_text(script)
    with mcp_lite.connect([sys.executable, str(path)], timeout=5) as c:
        c.ping()
        flag.write_text("")
        c.transport.close()  # the server is gone; the next call starts a new one
        deadline = time.monotonic() + 5
        while c.connected and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(ServerExitedAtStart) as caught:
            c.ping()
        assert caught.value.exit_code == 4


# --- 3. the SDK's camelCase names --------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "camel", "snake"),
    [
        (CallToolResult.model_validate({"content": [], "isError": True}), "isError", "is_error"),
        (CallToolResult.model_validate({"content": []}), "structuredContent", "structured_content"),
        (CallToolResult.model_validate({"content": []}), "_meta", "meta"),
        (Tool.model_validate({"name": "t", "inputSchema": {}}), "inputSchema", "input_schema"),
        (Tool.model_validate({"name": "t", "inputSchema": {}}), "outputSchema", "output_schema"),
        (types.Resource.model_validate({"uri": "u", "name": "n"}), "mimeType", "mime_type"),
    ],
)
def test_camel_case_names_say_the_snake_case_one(obj, camel, snake):
    with pytest.raises(AttributeError) as caught:
        getattr(obj, camel)
    name = type(obj).__name__
    assert str(caught.value) == (
        f"{name!r} object has no attribute {camel!r} (mcp_lite names it {snake!r})"
    )
    assert getattr(obj, snake) == getattr(obj, snake)  # the right name works


def test_unknown_names_and_extra_fields_are_unchanged():
    result = CallToolResult.model_validate({"content": [], "fooBar": 1})
    assert result.fooBar == 1  # an unknown wire field reads as an attribute, as before
    with pytest.raises(AttributeError) as caught:
        getattr(result, "nothingLikeIt")  # noqa: B009
    assert "mcp_lite names it" not in str(caught.value)
    resource = types.Resource.model_validate({"uri": "u", "name": "n", "extraThing": 2})
    assert resource.extraThing == 2
    assert not hasattr(resource, "mimeType") and not hasattr(result, "isError")
    assert pickle.loads(pickle.dumps(resource)) == resource


# --- 4. tool definitions on one Client -----------------------------------------------------------


def _by_name(definitions: list[dict], key=lambda d: d["name"]) -> dict[str, dict]:
    return {key(d): d for d in definitions}


def test_tool_definitions_in_the_three_formats(client):
    anthropic = _by_name(client.tool_definitions())
    assert anthropic["where"] == {
        "name": "where",
        "description": "Where x is.",
        "input_schema": client.list_tools()[0].input_schema,
    }
    chat = _by_name(client.tool_definitions("openai"), key=lambda d: d["function"]["name"])
    assert chat["where"]["type"] == "function"
    assert set(chat["where"]["function"]) == {"name", "description", "parameters"}
    assert chat["where"]["function"]["parameters"]["properties"] == {"x": {"type": "integer"}}
    flat = _by_name(client.tool_definitions("openai-responses"))
    assert flat["where"] == {
        "type": "function",
        "name": "where",
        "description": "Where x is.",
        "parameters": chat["where"]["function"]["parameters"],
    }
    flat["where"]["parameters"]["properties"].clear()  # a copy: the tool is untouched
    assert client.list_tools()[0].input_schema["properties"] == {"x": {"type": "integer"}}


def test_a_name_an_llm_refuses_is_changed_and_taken_back(client):
    names = set(_by_name(client.tool_definitions()))
    assert "dotted.name" not in names and "dotted_name" in names
    assert client.call_tool("dotted_name").text == "dot"
    assert client.submit_tool("dotted_name").result(5).text == "dot"
    assert client.call_tool("dotted.name").text == "dot"  # the server's own name still works


def test_unknown_format_is_refused_before_any_call(client):
    with pytest.raises(ValueError, match="'openai-responses'"):
        client.tool_definitions("gemini")


def test_hub_offers_the_responses_format_too():
    from mcp_lite.hub import Hub

    server, _ = make_server()
    with Hub({"geo": server}) as hub:
        flat = _by_name(hub.tool_definitions("openai-responses"))
        assert flat["mcp__geo__where"]["type"] == "function"
        assert flat["mcp__geo__where"]["parameters"]["properties"] == {"x": {"type": "integer"}}
        assert "function" not in flat["mcp__geo__where"]


# --- 5. a tool call as a future ----------------------------------------------------------------


def test_submit_tool_resolves_to_a_call_tool_result(client):
    future = client.submit_tool("where", {"x": 2})
    assert isinstance(future, Future)
    result = future.result(5)
    assert isinstance(result, CallToolResult) and result.structured_content == {"x": 2}
    assert isinstance(client.submit("tools/list").result(5)["tools"], list)  # submit: a dict


def test_submit_tool_reports_progress_and_validates_structured_output(client):
    seen = []
    assert client.submit_tool("ticker", on_progress=seen.append).result(5).text == "ticked"
    assert [p.progress for p in seen] == [1, 2, 3]
    assert client.submit_tool("liar").result(5).structured_content == {"x": "no"}  # no schema yet
    client.list_tools()
    with pytest.raises(RemoteProtocolError, match="does not match its outputSchema"):
        client.submit_tool("liar").result(5)
    with pytest.raises(RemoteProtocolError, match="does not match its outputSchema"):
        client.call_tool("liar")  # the same check as call_tool's


def test_submit_tool_times_out_and_cancel_tells_the_server(client):
    started = time.monotonic()
    with pytest.raises(RequestTimeout):
        client.submit_tool("block", timeout=1).result(5)
    assert time.monotonic() - started < 2
    assert client.seen["cancelled"].wait(5)  # a timeout tells the server, as submit does
    client.seen["cancelled"].clear()
    client.seen["started"].clear()
    future = client.submit_tool("block")
    assert client.seen["started"].wait(5)
    assert future.cancel() and future.cancelled()
    with pytest.raises(CancelledError):
        future.result(1)
    assert client.seen["cancelled"].wait(5)  # the server was told
    assert client.call_tool("where", {"x": 1}).structured_content == {"x": 1}
