"""The official-SDK peer (``tests/peers/official_server.py``) over Streamable HTTP and legacy SSE.

Server modes: Streamable HTTP stateful (SSE answers, sessions), ``--stateless``,
``--json-response``, and legacy HTTP+SSE. Each runs with ``protocol_version="auto"`` (the
SDK serves 2026-07-28 over HTTP: stateless requests, ``input_required`` rounds) and pinned to
2025-11-25 (``initialize``, sessions, server-to-client requests mid-call). One tour per
combination exercises every feature a user reaches, so a peer starts once per combination.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import McpError, ToolError

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

MODES = {
    "http": ("http", [], "/mcp"),
    "http-stateless": ("http", ["--stateless"], "/mcp"),
    "http-json": ("http", ["--json-response"], "/mcp"),
    "sse": ("sse", [], "/sse"),
}
ERAS = {"auto": "2026-07-28", "2025-11-25": "2025-11-25"}


def field(obj: Any, name: str) -> Any:
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def _sample(params: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "short summary"},
        "model": "test-model",
        "stopReason": "endTurn",
    }


@pytest.fixture
def peer_url(
    request: pytest.FixtureRequest,
    official_server_cmd: Callable[..., list[str]],
    start_http_peer: Callable[..., Any],
    free_port: int,
) -> Callable[[str], str]:
    """``peer_url(mode)`` starts the peer in that mode and returns its endpoint URL."""

    def start(mode: str) -> str:
        transport, flags, path = MODES[mode]
        peer = start_http_peer(
            official_server_cmd(transport, "--port", str(free_port), *flags), free_port
        )
        return str(peer.url + path)

    return start


@pytest.mark.parametrize("era", list(ERAS), ids=["auto-2026", "pinned-2025"])
@pytest.mark.parametrize("mode", list(MODES))
def test_tour(
    peer_url: Callable[[str], str], mode: str, era: str, wait_until: Callable[..., bool]
) -> None:
    url = peer_url(mode)
    target: Any = {"type": "sse", "url": url} if mode == "sse" else url
    logs: list[Any] = []
    lock = threading.Lock()

    def on_log(params: Any) -> None:
        with lock:
            logs.append(params)

    with mcp_lite.connect(
        target,
        protocol_version=era,
        timeout=30.0,
        elicitation_handler=lambda p: {"action": "accept", "content": {"name": "Ada"}},
        sampling_handler=_sample,
        roots=["file:///srv/data"],
        log_handler=on_log,
    ) as client:
        assert client.protocol_version == ERAS[era]
        assert client.server_info.name == "official-peer"
        # tools, pages, structured output, tool errors
        assert len(client.list_tools()) == 20
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        with pytest.raises(ToolError, match="disk on fire"):
            client.call_tool("fail", {"message": "disk on fire"}).raise_for_error()
        # progress
        seen: list[Any] = []
        res = client.call_tool("slow", {"steps": 3, "delay": 0.01}, on_progress=seen.append)
        assert res.text == "done after 3 steps"
        # With --json-response the server has no stream to send notifications on.
        assert [p.progress for p in seen] == ([] if mode == "http-json" else [1, 2, 3])
        # server-to-client: elicitation, sampling, roots (or input_required rounds on 2026)
        if mode in ("http-stateless", "http-json") and ERAS[era] != "2026-07-28":
            # Without a stream (stateless server, or JSON answers) a handshake-era server has
            # no channel for server requests: the SDK says so, and the caller hears it at once.
            with pytest.raises(McpError, match="back-channel"):
                client.call_tool("ask_name", {})
        else:
            assert client.call_tool("ask_name", {}).text == "Hello, Ada!"
            assert (
                client.call_tool("summarize", {"text": "story"}).text
                == "summary by test-model: short summary"
            )
            assert client.call_tool("show_roots", {}).text == "file:///srv/data"
        # resources, prompts, completion
        assert client.read_resource("memo://readme").text == "This is the readme."
        logo = client.read_resource("memo://logo")
        assert base64.b64decode(logo.contents[0].blob) == base64.b64decode("iVBORw0KGgo=")
        assert client.read_resource("memo://notes/beta").contents[0].text == "second note"
        got = client.get_prompt("greeting", {"name": "Bo", "style": "pirate"})
        assert got.messages[0].content.text == "Write a pirate greeting for Bo."
        done = client.complete({"type": "ref/prompt", "name": "greeting"}, "style", "po")
        assert done.completion.values == ["poem", "polite"]
        # logging
        client.set_log_level("warning")
        assert not client.call_tool("chatty", {}).is_error
        if mode != "http-json":
            assert wait_until(lambda: len(logs) >= 2)
            with lock:
                assert sorted(field(p, "level") for p in logs) == ["error", "warning"]
        # ping works in both eras (2026-07-28 removed ping: a server/discover round trip)
        client.ping()


@pytest.mark.parametrize("mode", ["http", "http-json"])
def test_many_threads_share_one_http_client(peer_url: Callable[[str], str], mode: str) -> None:
    url = peer_url(mode)
    with (
        mcp_lite.connect(url, protocol_version="2025-11-25", timeout=30.0) as client,
        ThreadPoolExecutor(max_workers=8) as pool,
    ):
        results = list(pool.map(lambda i: client.call_tool("add", {"a": i, "b": 1000}), range(40)))
    assert [r.structured_content["result"] for r in results] == [i + 1000 for i in range(40)]


def test_http_url_of_a_legacy_sse_server_falls_back(peer_url: Callable[[str], str]) -> None:
    url = peer_url("sse")
    with mcp_lite.connect(url, protocol_version="2025-11-25", timeout=30.0) as client:
        assert client.transport.legacy  # type: ignore[union-attr]
        assert client.call_tool("echo", {"text": "via sse"}).text == "via sse"


def test_stateful_session_is_used_and_deleted(peer_url: Callable[[str], str]) -> None:
    client = mcp_lite.connect(peer_url("http"), protocol_version="2025-11-25", timeout=30.0)
    transport = client.transport
    assert transport.session_id  # type: ignore[union-attr]
    assert client.call_tool("echo", {"text": "x"}).text == "x"
    client.close()
    client.close()  # idempotent
