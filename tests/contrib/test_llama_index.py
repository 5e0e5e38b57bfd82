"""LlamaIndex: ``llama_index_tools`` through LlamaIndex's own ``FunctionAgent`` with its
``MockFunctionCallingLLM``, over a real Hub and a real stdio server (``agent_server.py``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="llama-index-core is not installed")

from agent_peer import SEARCH_SCHEMA, AgentPeer, on_four_threads
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import (
    ChatMessage,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.llms.mock import MockFunctionCallingLLM

from mcp_lite.contrib.llama_index import llama_index_tools

Call = tuple[str, dict[str, Any]]
# LlamaIndex's workflows inspect pydantic classes with inspect.getmembers, which touches the
# deprecated __fields__: the framework's own warning, not one of mcp_lite's.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")


def _llm(*calls: Call, seen: list[Any] | None = None) -> MockFunctionCallingLLM:
    def respond(messages: Any, **kwargs: Any) -> ChatMessage:
        if seen is not None:
            seen.extend(kwargs.get("tools") or [])
        if any(m.role == MessageRole.TOOL for m in messages):
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[TextBlock(text="done")])
        blocks = [
            ToolCallBlock(tool_call_id=f"c{i}", tool_name=n, tool_kwargs=a)
            for i, (n, a) in enumerate(calls)
        ]
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)

    return MockFunctionCallingLLM(response_generator=respond)


async def _arun(tools: list[Any], *calls: Call) -> dict[str, Any]:
    agent = FunctionAgent(tools=tools, llm=_llm(*calls))
    handler = agent.run(user_msg="go")
    results: dict[str, Any] = {}
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            results[event.tool_name] = event.tool_output
    assert "done" in str(await handler)  # the run went on to the model's answer
    return results


def _run(tools: list[Any], *calls: Call) -> dict[str, Any]:
    return asyncio.run(_arun(tools, *calls))


@pytest.fixture(scope="module")
def tools(agent_peer: AgentPeer) -> list[Any]:
    return llama_index_tools(agent_peer.hub)


def test_a_tool_call_through_the_agent_gives_the_right_answer(tools: list[Any]) -> None:
    output = _run(tools, ("mcp__agent__add", {"a": 2, "b": 3}))["mcp__agent__add"]
    assert output.content == "5" and not output.is_error


def test_the_model_receives_the_schema_unchanged(tools: list[Any]) -> None:
    by_name = {t.metadata.name: t for t in tools}
    assert "mcp__agent__secret" not in by_name  # denied by a rule: never offered
    sent = by_name["mcp__agent__search"].metadata.to_openai_tool()["function"]["parameters"]
    assert sent == SEARCH_SCHEMA


def test_arguments_reach_the_server_as_sent(tools: list[Any]) -> None:
    out = _run(tools, ("mcp__agent__search", {"query": "x"}))
    assert json.loads(out["mcp__agent__search"].content) == {"query": "x"}  # nothing filled in
    [clash] = [t for t in tools if t.metadata.name == "mcp__agent__clash"]
    args = {"config": "c", "run_manager": "r", "self": "s"}  # self: FunctionTool.call's own
    assert json.loads(clash.fn(**args)) == args  # reached through the function


def test_refusal_error_and_timeout_reach_the_model_and_the_run_goes_on(
    agent_peer: AgentPeer, tools: list[Any]
) -> None:
    out = _run(tools, ("mcp__agent__refused", {}), ("mcp__agent__boom", {}))
    assert out["mcp__agent__refused"].is_error
    assert "refused by the permission handler" in out["mcp__agent__refused"].content
    assert out["mcp__agent__boom"].is_error
    assert "the boom tool exploded" in out["mcp__agent__boom"].content
    assert "Traceback" not in out["mcp__agent__boom"].content
    before = len(agent_peer.lines())
    quick = llama_index_tools(agent_peer.hub, timeout=0.5, tools=["mcp__agent__slow"])
    slow = _run(quick, ("mcp__agent__slow", {"seconds": 60}))["mcp__agent__slow"]
    assert slow.is_error and "no answer before its total deadline" in slow.content
    agent_peer.wait_for("cancelled", after=before)  # the server was told


def test_cancelling_a_run_tells_the_server(agent_peer: AgentPeer) -> None:
    tools = llama_index_tools(agent_peer.hub, tools=["mcp__agent__slow"])
    before = len(agent_peer.lines())

    async def main() -> None:
        agent = FunctionAgent(tools=tools, llm=_llm(("mcp__agent__slow", {"seconds": 60})))
        handler = agent.run(user_msg="go")
        while not any(line.startswith("started") for line in agent_peer.lines()[before:]):
            await asyncio.sleep(0.02)
        # a workflow runs its steps in tasks of its own: the handler cancels them
        await handler.cancel_run()
        # told at once, not when the call's own timeout ends (60 s, the client's default)
        await asyncio.to_thread(agent_peer.wait_for, "cancelled", before, 30)

    asyncio.run(main())
    assert agent_peer.hub.call_tool("mcp__agent__add", {"a": 1, "b": 1}).text == "2"


def test_the_sync_entry_point_works_inside_a_running_loop(tools: list[Any]) -> None:
    [add] = [t for t in tools if t.metadata.name == "mcp__agent__add"]

    async def main() -> Any:  # a Jupyter cell: a loop runs, the tool is called sync
        return add.call(a=20, b=22)

    assert asyncio.run(main()).content == "42"


def test_eight_runs_on_four_threads_share_one_hub(tools: list[Any]) -> None:
    def one(i: int) -> Any:
        return _run(tools, ("mcp__agent__add", {"a": i, "b": 100}))["mcp__agent__add"].content

    assert on_four_threads(one) == {i: str(i + 100) for i in range(8)}
