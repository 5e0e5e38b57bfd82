"""Every feature of the official-SDK peer (``tests/peers/official_server.py``) over stdio.

Each test runs twice: with ``protocol_version="auto"`` (the peer speaks 2026-07-28, so the
client must negotiate the stateless era, answering elicitation/sampling/roots through
``input_required`` rounds) and pinned to the handshake era (2025-11-25, server-to-client
requests mid-call). The user-visible results must be the same.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import McpError, ToolError

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

ERAS = {"auto": "2026-07-28", "2025-11-25": "2025-11-25"}
FILLERS = [f"filler_{i:02d}" for i in range(10)]
NAMED_TOOLS = [
    "add",
    "echo",
    "weather",
    "fail",
    "slow",
    "ask_name",
    "summarize",
    "show_roots",
    "chatty",
    "touch",
]


def field(obj: Any, name: str) -> Any:
    """Read ``name`` from a model or a dict (nested wire values may be either)."""
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


@pytest.fixture(params=list(ERAS), ids=["auto-2026", "pinned-2025"])
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_client(official_stdio: list[str], era: str) -> Iterator[Callable[..., Any]]:
    """``open_client(**options)``: a connected client to the peer, closed at teardown."""
    clients: list[Any] = []

    def open_(**options: Any) -> Any:
        client = mcp_lite.connect(official_stdio, protocol_version=era, timeout=30.0, **options)
        clients.append(client)
        return client

    yield open_
    for client in clients:
        client.close()


@pytest.fixture
def client(open_client: Callable[..., Any]) -> Any:
    return open_client()


def test_handshake_reports_server_and_version(client: Any, era: str) -> None:
    assert client.protocol_version == ERAS[era]
    assert client.server_info.name == "official-peer"
    assert client.server_info.version == "1.0.0"
    assert "official MCP Python SDK" in (client.instructions or "")


def test_list_tools_follows_every_page(client: Any) -> None:
    names = [tool.name for tool in client.list_tools()]
    # The peer serves tools/list in pages of 5: 19 tools means four pages.
    assert sorted(names) == sorted(NAMED_TOOLS + FILLERS)
    assert len(names) == len(set(names))


def test_add_returns_text_and_structured_content(client: Any) -> None:
    res = client.call_tool("add", {"a": 2, "b": 3})
    assert res.is_error is False
    assert res.text == "5"
    assert res.structured_content == {"result": 5}
    assert res.raise_for_error() is res


def test_typed_return_gives_structured_output_and_schema(client: Any) -> None:
    tools = {tool.name: tool for tool in client.list_tools()}
    schema = tools["weather"].output_schema
    assert schema is not None and set(schema["properties"]) == {"city", "temperature", "conditions"}
    res = client.call_tool("weather", {"city": "Oslo"})
    assert res.structured_content == {"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}


def test_tool_error_is_a_result_until_raised(client: Any) -> None:
    res = client.call_tool("fail", {"message": "disk on fire"})
    assert res.is_error is True
    assert "disk on fire" in res.text
    with pytest.raises(ToolError, match="disk on fire"):
        res.raise_for_error()


def test_unknown_tool_is_reported_not_hung(client: Any) -> None:
    try:
        res = client.call_tool("no_such_tool", {})
    except McpError as exc:  # a JSON-RPC error is as good as an isError result
        assert "no_such_tool" in str(exc)
    else:
        assert res.is_error is True
        assert "no_such_tool" in res.text


def test_progress_reaches_on_progress(client: Any) -> None:
    seen: list[Any] = []
    res = client.call_tool("slow", {"steps": 3, "delay": 0.01}, on_progress=seen.append)
    assert res.text == "done after 3 steps"
    assert [(p.progress, p.total, p.message) for p in seen] == [
        (1, 3, "step 1/3"),
        (2, 3, "step 2/3"),
        (3, 3, "step 3/3"),
    ]


def test_elicitation_handler_answers_the_server(open_client: Callable[..., Any]) -> None:
    asked: list[str] = []

    def elicit(params: Any) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {"name": "Ada"}}

    client = open_client(elicitation_handler=elicit)
    assert client.call_tool("ask_name", {}).text == "Hello, Ada!"
    assert asked == ["What is your name?"]


def test_elicitation_decline_reaches_the_tool(open_client: Callable[..., Any]) -> None:
    client = open_client(elicitation_handler=lambda params: {"action": "decline"})
    assert client.call_tool("ask_name", {}).text == "No name given (decline)"


def test_sampling_handler_answers_the_server(open_client: Callable[..., Any]) -> None:
    prompts: list[str] = []

    def sample(params: Any) -> dict[str, Any]:
        message = params.messages[0]
        prompts.append(field(field(message, "content"), "text"))
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "short summary"},
            "model": "test-model",
            "stopReason": "endTurn",
        }

    client = open_client(sampling_handler=sample)
    res = client.call_tool("summarize", {"text": "a very long story"})
    assert res.text == "summary by test-model: short summary"
    assert prompts == ["Summarize: a very long story"]


def test_roots_are_listed_to_the_server(open_client: Callable[..., Any]) -> None:
    roots = ["file:///srv/data", "file:///home/user/project"]
    client = open_client(roots=roots)
    assert client.call_tool("show_roots", {}).text.splitlines() == roots


def test_roots_handler_is_asked(open_client: Callable[..., Any]) -> None:
    client = open_client(roots_handler=lambda: [{"uri": "file:///dynamic", "name": "dyn"}])
    assert client.call_tool("show_roots", {}).text == "file:///dynamic"


@pytest.mark.parametrize(
    ("level", "expected"),
    [("debug", ["debug", "info", "warning", "error"]), ("warning", ["warning", "error"])],
)
def test_log_messages_respect_the_level(
    open_client: Callable[..., Any],
    wait_until: Callable[..., bool],
    level: str,
    expected: list[str],
) -> None:
    logs: list[Any] = []
    lock = threading.Lock()

    def on_log(params: Any) -> None:
        with lock:
            logs.append(params)

    client = open_client(log_handler=on_log)
    client.set_log_level(level)
    res = client.call_tool("chatty", {})
    assert not res.is_error
    # Notifications are delivered on worker threads; they were sent before the result, but
    # may be handed to us just after it.
    assert wait_until(lambda: len(logs) >= len(expected)), (
        f"got {len(logs)} log messages, expected {len(expected)}"
    )
    with lock:
        assert sorted(field(p, "level") for p in logs) == sorted(expected)
        assert {field(p, "data") for p in logs} == {f"{lvl} message" for lvl in expected}
        assert {field(p, "logger") for p in logs} == {"chatty"}


def test_resources_static_and_template(client: Any) -> None:
    resources = {r.uri: r for r in client.list_resources()}
    assert set(resources) == {"memo://readme", "memo://logo"}
    assert resources["memo://readme"].mime_type == "text/plain"
    templates = client.list_resource_templates()
    assert [t.uri_template for t in templates] == ["memo://notes/{name}"]

    readme = client.read_resource("memo://readme")
    assert readme.text == "This is the readme."
    note = client.read_resource("memo://notes/beta")
    assert note.contents[0].text == "second note"
    assert note.contents[0].uri == "memo://notes/beta"
    logo = client.read_resource("memo://logo")
    assert logo.contents[0].mime_type == "image/png"
    assert base64.b64decode(logo.contents[0].blob) == base64.b64decode("iVBORw0KGgo=")


def test_a_2026_subscription_hears_a_change_made_right_after_it(official_stdio: list[str]) -> None:
    """``subscribe_resource`` returns on the SDK server's acknowledgement of the listen
    stream (it would wait out its deadline if it did not recognise it), and a change made at
    once is heard. (2026-07-28 only: the peer publishes updates to listen streams.)"""
    heard = threading.Event()

    def on_notification(method: str, params: Any) -> None:
        if method == "notifications/resources/updated" and field(params, "uri") == "memo://readme":
            heard.set()

    with mcp_lite.connect(
        official_stdio, timeout=30, notification_handler=on_notification
    ) as client:
        client.subscribe_resource("memo://readme")
        assert client.call_tool("touch", {"uri": "memo://readme"}).text == "touched"
        assert heard.wait(30), "the update of a change made after subscribing was lost"


def test_prompts_with_arguments(client: Any) -> None:
    (prompt,) = client.list_prompts()
    assert prompt.name == "greeting"
    args = {a.name: a.required for a in prompt.arguments}
    assert args == {"name": True, "style": False}
    got = client.get_prompt("greeting", {"name": "Bo", "style": "pirate"})
    assert [m.role for m in got.messages] == ["user"]
    assert got.messages[0].content.text == "Write a pirate greeting for Bo."


def test_completion_of_a_prompt_argument(client: Any) -> None:
    done = client.complete({"type": "ref/prompt", "name": "greeting"}, "style", "po")
    assert done.completion.values == ["poem", "polite"]
    none = client.complete({"type": "ref/prompt", "name": "greeting"}, "style", "zz")
    assert none.completion.values == []


def test_completion_of_a_template_variable(client: Any) -> None:
    done = client.complete({"type": "ref/resource", "uri": "memo://notes/{name}"}, "name", "g")
    assert done.completion.values == ["gamma"]


def test_ping_works_in_both_eras(client: Any, era: str) -> None:
    # 2026-07-28 removed ping: DESIGN §2 makes ping() a server/discover round trip there
    client.ping()


def test_many_threads_share_one_client(client: Any) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: client.call_tool("add", {"a": i, "b": 1000}), range(40)))
    assert [r.structured_content["result"] for r in results] == [i + 1000 for i in range(40)]


def test_close_is_idempotent_and_ends_the_process(
    official_stdio: list[str], era: str, pid_gone: Callable[..., bool]
) -> None:
    with mcp_lite.connect(official_stdio, protocol_version=era, timeout=30.0) as client:
        pid = client.transport.pid
        assert client.call_tool("echo", {"text": "x"}).text == "x"
    assert pid_gone(pid)
    client.close()  # a second close is harmless
