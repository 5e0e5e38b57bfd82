"""pydantic-ai: ``McpLiteToolset`` through pydantic-ai's own agent loop with its
``FunctionModel``, over a real Hub and a real stdio server (``agent_server.py``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="pydantic-ai is not installed (requirements-agents.txt)")

from agent_peer import PNG, SEARCH_SCHEMA, AgentPeer, on_four_threads
from pydantic_ai import Agent, BinaryImage
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mcp_lite.contrib.pydantic_ai import McpLiteToolset
from mcp_lite.errors import ToolError

Call = tuple[str, dict[str, Any]]


def _model(*calls: Call, seen: list[AgentInfo] | None = None) -> FunctionModel:
    """Calls the tools once, then answers "done"."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(info)
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart(n, a, tool_call_id=f"c{i}") for i, (n, a) in enumerate(calls)]
            )
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


def _parts(messages: list[ModelMessage]) -> dict[str, Any]:
    """The tool results the model was sent, by tool name."""
    out: dict[str, Any] = {}
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, (ToolReturnPart, RetryPromptPart)):
                    out[part.tool_name or ""] = part
    return out


def _agent(toolset: McpLiteToolset, *calls: Call) -> Agent[None, str]:
    return Agent(_model(*calls), toolsets=[toolset])


def _run(toolset: McpLiteToolset, *calls: Call) -> dict[str, Any]:
    result = _agent(toolset, *calls).run_sync("go")
    assert result.output == "done"  # the run went on to the model's answer
    return _parts(result.all_messages())


@pytest.fixture(scope="module")
def toolset(agent_peer: AgentPeer) -> McpLiteToolset:
    return McpLiteToolset(agent_peer.hub)


def test_a_tool_call_through_the_agent_gives_the_right_answer(toolset: McpLiteToolset) -> None:
    part = _run(toolset, ("mcp__agent__add", {"a": 2, "b": 3}))["mcp__agent__add"]
    assert isinstance(part, ToolReturnPart) and part.content == 5


def test_the_model_receives_the_schema_unchanged(agent_peer: AgentPeer) -> None:
    seen: list[AgentInfo] = []
    agent = Agent(
        _model(("mcp__agent__add", {"a": 1, "b": 1}), seen=seen),
        toolsets=[McpLiteToolset(agent_peer.hub)],
    )
    agent.run_sync("go")
    tools = {t.name: t for t in seen[0].function_tools}
    assert tools["mcp__agent__search"].parameters_json_schema == SEARCH_SCHEMA
    assert "mcp__agent__secret" not in tools  # denied by a rule: never offered
    assert tools["mcp__agent__wipe"].metadata["destructive"] is True


def test_arguments_reach_the_server_as_sent(toolset: McpLiteToolset) -> None:
    args = {"config": "c", "run_manager": "r", "self": "s"}
    parts = _run(toolset, ("mcp__agent__clash", args), ("mcp__agent__search", {"query": "x"}))
    assert json.loads(parts["mcp__agent__clash"].content) == args
    assert json.loads(parts["mcp__agent__search"].content) == {"query": "x"}


def test_refusal_error_and_timeout_reach_the_model_and_the_run_goes_on(
    agent_peer: AgentPeer, toolset: McpLiteToolset
) -> None:
    parts = _run(toolset, ("mcp__agent__refused", {}), ("mcp__agent__boom", {}))
    refused, boom = parts["mcp__agent__refused"], parts["mcp__agent__boom"]
    assert isinstance(refused, ToolReturnPart) and refused.outcome == "failed"
    assert "refused by the permission handler" in str(refused.content)
    assert boom.outcome == "retried"  # tool_error_behavior="retry": the model may retry
    assert "the boom tool exploded" in str(boom.content) and "Traceback" not in str(boom.content)
    failed = McpLiteToolset(agent_peer.hub, tool_error_behavior="failed")
    boom = _run(failed, ("mcp__agent__boom", {}))["mcp__agent__boom"]
    assert isinstance(boom, ToolReturnPart) and boom.outcome == "failed"
    before = len(agent_peer.lines())
    quick = McpLiteToolset(agent_peer.hub, timeout=0.5, tools=["mcp__agent__slow"])
    slow = _run(quick, ("mcp__agent__slow", {"seconds": 60}))["mcp__agent__slow"]
    assert slow.outcome == "failed" and "no answer before its total deadline" in str(slow.content)
    agent_peer.wait_for("cancelled", after=before)  # the server was told


def test_tool_error_behavior_error_raises(agent_peer: AgentPeer) -> None:
    raising = McpLiteToolset(agent_peer.hub, tool_error_behavior="error")
    with pytest.raises(ToolError, match="exploded"):
        _agent(raising, ("mcp__agent__boom", {})).run_sync("go")


def test_cancelling_an_async_run_tells_the_server(agent_peer: AgentPeer) -> None:
    toolset = McpLiteToolset(agent_peer.hub, tools=["mcp__agent__slow"])
    before = len(agent_peer.lines())

    async def main() -> None:
        run = asyncio.create_task(_agent(toolset, ("mcp__agent__slow", {"seconds": 60})).run("go"))
        while not any(line.startswith("started") for line in agent_peer.lines()[before:]):
            await asyncio.sleep(0.02)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        # told at once, not when the call's own timeout ends (60 s, the client's default)
        await asyncio.to_thread(agent_peer.wait_for, "cancelled", before, 30)

    asyncio.run(main())
    assert agent_peer.hub.call_tool("mcp__agent__add", {"a": 1, "b": 1}).text == "2"


def test_inside_a_running_loop_the_toolset_runs_with_agent_run(toolset: McpLiteToolset) -> None:
    # pydantic-ai's own run_sync refuses a running loop ("This event loop is already
    # running"), whatever the tools; in a notebook cell, await agent.run() instead.
    async def main() -> Any:
        agent = _agent(toolset, ("mcp__agent__add", {"a": 20, "b": 22}))
        return _parts((await agent.run("go")).all_messages())

    assert asyncio.run(main())["mcp__agent__add"].content == 42


def test_eight_runs_on_four_threads_share_one_hub(toolset: McpLiteToolset) -> None:
    def one(i: int) -> Any:
        return _run(toolset, ("mcp__agent__add", {"a": i, "b": 100}))["mcp__agent__add"].content

    assert on_four_threads(one) == {i: i + 100 for i in range(8)}


def test_images_become_binary_images_with_inline_media(agent_peer: AgentPeer) -> None:
    with agent_peer.other_hub(media="inline") as hub:
        toolset = McpLiteToolset(hub, tools=["mcp__agent__picture"])
        part = _run(toolset, ("mcp__agent__picture", {}))["mcp__agent__picture"]
    assert part.content[0] == "a red dot"
    assert part.content[1] == BinaryImage(data=PNG, media_type="image/png")
