"""``@modelcontextprotocol/server-everything`` over Streamable HTTP and legacy SSE.

It speaks only the handshake era, so ``protocol_version="auto"`` must fall back from the
``server/discover`` probe to ``initialize`` over HTTP too. One tour per transport.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import mcp_lite

pytestmark = [
    pytest.mark.usefixtures("no_leftover_processes"),
]

MODES = {
    "streamableHttp": ("/mcp", "http"),
    "sse": ("/sse", "sse"),
    "sse-via-http": ("/sse", "http"),
}


def _sample(params: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "sampled-answer-42"},
        "model": "test-model",
        "stopReason": "endTurn",
    }


@pytest.mark.parametrize("mode", list(MODES))
def test_tour(
    mode: str,
    everything_cmd: Callable[[str], list[str]],
    start_http_peer: Callable[..., Any],
    free_port: int,
) -> None:
    path, kind = MODES[mode]
    server_mode = "sse" if mode.startswith("sse") else mode
    peer = start_http_peer(everything_cmd(server_mode), free_port, env={"PORT": str(free_port)})
    target = {"type": kind, "url": peer.url + path}
    elicit = {"action": "accept", "content": {"name": "Ada Lovelace", "check": True}}
    with mcp_lite.connect(
        target,
        timeout=30.0,
        sampling_handler=_sample,
        elicitation_handler=lambda p: elicit,
        roots=["file:///srv/data"],
    ) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info.name == "mcp-servers/everything"
        if mode == "sse-via-http":
            assert client.transport.legacy  # type: ignore[union-attr]
        assert client.call_tool("echo", {"message": "hello"}).text == "Echo: hello"
        assert client.call_tool("get-sum", {"a": 2, "b": 3}).text == "The sum of 2 and 3 is 5."
        seen: list[Any] = []
        client.call_tool(
            "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, on_progress=seen.append
        )
        assert [p.progress for p in seen] == [1, 2, 3]
        assert (
            "sampled-answer-42"
            in client.call_tool("trigger-sampling-request", {"prompt": "hi", "maxTokens": 20}).text
        )
        assert "- Name: Ada Lovelace" in client.call_tool("trigger-elicitation-request", {}).text
        assert "file:///srv/data" in client.call_tool("get-roots-list", {}).text
        dynamic = client.read_resource("demo://resource/dynamic/text/7")
        assert dynamic.contents[0].uri == "demo://resource/dynamic/text/7"
        got = client.get_prompt("args-prompt", {"city": "Paris", "state": "Texas"})
        assert got.messages[0].content.text == "What's weather in Paris, Texas?"
        client.ping()
