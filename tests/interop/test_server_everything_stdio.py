"""``@modelcontextprotocol/server-everything`` (the TypeScript SDK's reference server) over stdio.

It only speaks the handshake era (``server/discover`` is -32601), so ``protocol_version="auto"``
must fall back to ``initialize``. It also ignores a closed stdin (Node timers keep it alive):
every test exercises the client's shutdown ladder, and ``no_leftover_processes`` checks it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import mcp_lite

pytestmark = [
    pytest.mark.usefixtures("no_leftover_processes"),
]


def field(obj: Any, name: str) -> Any:
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


@pytest.fixture
def open_client(everything_stdio: list[str]) -> Iterator[Callable[..., Any]]:
    clients: list[Any] = []

    def open_(**options: Any) -> Any:
        client = mcp_lite.connect(everything_stdio, timeout=30.0, **options)
        clients.append(client)
        return client

    yield open_
    for client in clients:
        client.close()


@pytest.fixture
def client(open_client: Callable[..., Any]) -> Any:
    return open_client()


def test_auto_falls_back_to_the_handshake(client: Any) -> None:
    assert client.protocol_version == "2025-11-25"
    assert client.server_info.name == "mcp-servers/everything"
    caps = client.server_capabilities
    tools_cap = caps.get("tools") if isinstance(caps, dict) else getattr(caps, "tools", None)
    assert tools_cap is not None
    assert client.instructions


def test_list_tools(client: Any) -> None:
    names = {tool.name for tool in client.list_tools()}
    assert {"echo", "get-sum", "get-structured-content", "trigger-long-running-operation"} <= names


def test_echo_and_sum(client: Any) -> None:
    assert client.call_tool("echo", {"message": "hello"}).text == "Echo: hello"
    assert client.call_tool("get-sum", {"a": 2, "b": 3}).text == "The sum of 2 and 3 is 5."


def test_structured_content(client: Any) -> None:
    res = client.call_tool("get-structured-content", {"location": "Chicago"})
    expected = {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    assert res.structured_content == expected
    assert json.loads(res.text) == expected


def test_invalid_arguments_are_reported(client: Any) -> None:
    try:
        res = client.call_tool("get-sum", {"a": "not a number"})
    except mcp_lite.errors.McpError:
        return  # a JSON-RPC error is an acceptable report too
    assert res.is_error is True


def test_progress_of_the_long_running_tool(client: Any) -> None:
    seen: list[Any] = []
    res = client.call_tool(
        "trigger-long-running-operation",
        {"duration": 0.3, "steps": 3},
        on_progress=seen.append,
    )
    assert "Long running operation completed" in res.text
    assert [(p.progress, p.total) for p in seen] == [(1, 3), (2, 3), (3, 3)]


def test_ping(client: Any) -> None:
    client.ping()


def test_resources(client: Any) -> None:
    resources = client.list_resources()
    assert resources, "server-everything lists static resources"
    first = client.read_resource(resources[0].uri)
    assert first.contents and first.contents[0].text
    templates = {t.uri_template for t in client.list_resource_templates()}
    assert "demo://resource/dynamic/text/{resourceId}" in templates
    dynamic = client.read_resource("demo://resource/dynamic/text/7")
    assert dynamic.contents[0].uri == "demo://resource/dynamic/text/7"
    assert dynamic.contents[0].text


def test_prompts(client: Any) -> None:
    names = {p.name for p in client.list_prompts()}
    assert {"simple-prompt", "args-prompt", "completable-prompt"} <= names
    got = client.get_prompt("args-prompt", {"city": "Paris", "state": "Texas"})
    assert got.messages[0].content.text == "What's weather in Paris, Texas?"


def test_completion(client: Any) -> None:
    done = client.complete({"type": "ref/prompt", "name": "completable-prompt"}, "department", "S")
    assert sorted(done.completion.values) == ["Sales", "Support"]


def test_sampling(open_client: Callable[..., Any]) -> None:
    asked: list[Any] = []

    def sample(params: Any) -> dict[str, Any]:
        asked.append(params)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "sampled-answer-42"},
            "model": "test-model",
            "stopReason": "endTurn",
        }

    client = open_client(sampling_handler=sample)
    res = client.call_tool("trigger-sampling-request", {"prompt": "hi", "maxTokens": 20})
    assert "sampled-answer-42" in res.text
    assert len(asked) == 1
    text = field(field(asked[0].messages[0], "content"), "text")
    assert text.endswith("hi")


def test_elicitation(open_client: Callable[..., Any]) -> None:
    def elicit(params: Any) -> dict[str, Any]:
        assert "name" in field(params.requested_schema, "properties")
        return {"action": "accept", "content": {"name": "Ada Lovelace", "check": True}}

    client = open_client(elicitation_handler=elicit)
    res = client.call_tool("trigger-elicitation-request", {})
    assert "- Name: Ada Lovelace" in res.text
    assert "- Agreed to terms: true" in res.text


def test_roots(open_client: Callable[..., Any]) -> None:
    client = open_client(roots=["file:///srv/data"])
    res = client.call_tool("get-roots-list", {})
    assert "file:///srv/data" in res.text


def test_simulated_logging_reaches_the_log_handler(
    open_client: Callable[..., Any], wait_until: Callable[..., bool]
) -> None:
    logs: list[Any] = []
    lock = threading.Lock()

    def on_log(params: Any) -> None:
        with lock:
            logs.append(params)

    client = open_client(log_handler=on_log)
    client.set_log_level("debug")
    client.call_tool("toggle-simulated-logging", {})  # sends one message at once, then every 5 s
    try:
        assert wait_until(lambda: bool(logs)), "no notifications/message reached log_handler"
    finally:
        client.call_tool("toggle-simulated-logging", {})
    with lock:
        assert "message" in str(field(logs[0], "data"))
