"""Haystack: ``haystack_tools`` through Haystack's own ``Agent`` with a small chat-generator
component standing in for the model, over a real Hub and a real stdio server
(``agent_server.py``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("haystack", reason="haystack-ai is not installed (requirements-agents.txt)")

from agent_peer import SEARCH_SCHEMA, AgentPeer, on_four_threads
from haystack import component
from haystack.components.agents import Agent
from haystack.dataclasses import ChatMessage, ToolCall

from mcp_lite.contrib.haystack import haystack_tools

Call = tuple[str, dict[str, Any]]


@component
class FakeGenerator:
    """Calls the tools once, then answers "done"; remembers the tools it was given."""

    def __init__(self, *calls: Call) -> None:
        self.calls = calls
        self.seen: list[Any] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], tools: Any = None, **kwargs: Any) -> dict[str, Any]:
        self.seen = list(tools or [])
        if any(m.tool_call_results for m in messages):
            return {"replies": [ChatMessage.from_assistant("done")]}
        calls = [
            ToolCall(tool_name=n, arguments=a, id=f"c{i}") for i, (n, a) in enumerate(self.calls)
        ]
        return {"replies": [ChatMessage.from_assistant(tool_calls=calls)]}

    @component.output_types(replies=list[ChatMessage])
    async def run_async(
        self, messages: list[ChatMessage], tools: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        return self.run(messages, tools, **kwargs)


def _results(out: dict[str, Any]) -> dict[str, Any]:
    assert out["messages"][-1].text == "done"  # the run went on to the model's answer
    return {r.origin.tool_name: r for m in out["messages"] for r in m.tool_call_results}


def _run(tools: list[Any], *calls: Call) -> dict[str, Any]:
    agent = Agent(chat_generator=FakeGenerator(*calls), tools=tools)
    return _results(agent.run(messages=[ChatMessage.from_user("go")]))


@pytest.fixture(scope="module")
def tools(agent_peer: AgentPeer) -> list[Any]:
    return haystack_tools(agent_peer.hub)


def test_a_tool_call_through_the_agent_gives_the_right_answer(tools: list[Any]) -> None:
    result = _run(tools, ("mcp__agent__add", {"a": 2, "b": 3}))["mcp__agent__add"]
    assert result.result == "5" and not result.error


def test_the_model_receives_the_schema_unchanged(tools: list[Any]) -> None:
    generator = FakeGenerator(("mcp__agent__add", {"a": 1, "b": 1}))
    Agent(chat_generator=generator, tools=tools).run(messages=[ChatMessage.from_user("go")])
    by_name = {t.name: t for t in generator.seen}
    assert by_name["mcp__agent__search"].parameters == SEARCH_SCHEMA
    assert "mcp__agent__secret" not in by_name  # denied by a rule: never offered


def test_arguments_reach_the_server_as_sent(tools: list[Any]) -> None:
    args = {"config": "c", "run_manager": "r"}  # "self" is Haystack's own (Tool.invoke)
    out = _run(tools, ("mcp__agent__search", {"query": "x"}))
    assert json.loads(out["mcp__agent__search"].result) == {"query": "x"}
    [clash] = [t for t in tools if t.name == "mcp__agent__clash"]
    assert json.loads(clash.function(**args, self="s"))["self"] == "s"


def test_refusal_error_and_timeout_reach_the_model_and_the_run_goes_on(
    agent_peer: AgentPeer, tools: list[Any]
) -> None:
    out = _run(tools, ("mcp__agent__refused", {}), ("mcp__agent__boom", {}))
    assert out["mcp__agent__refused"].error
    assert "refused by the permission handler" in out["mcp__agent__refused"].result
    assert (
        out["mcp__agent__boom"].error and "the boom tool exploded" in out["mcp__agent__boom"].result
    )
    assert "Traceback" not in out["mcp__agent__boom"].result
    before = len(agent_peer.lines())
    quick = haystack_tools(agent_peer.hub, timeout=0.5, tools=["mcp__agent__slow"])
    slow = _run(quick, ("mcp__agent__slow", {"seconds": 60}))["mcp__agent__slow"]
    assert slow.error and "no answer before its total deadline" in slow.result
    agent_peer.wait_for("cancelled", after=before)  # the server was told


def test_cancelling_an_async_run_tells_the_server(agent_peer: AgentPeer) -> None:
    tools = haystack_tools(agent_peer.hub, tools=["mcp__agent__slow"])
    before = len(agent_peer.lines())

    async def main() -> None:
        agent = Agent(
            chat_generator=FakeGenerator(("mcp__agent__slow", {"seconds": 60})), tools=tools
        )
        run = asyncio.create_task(agent.run_async(messages=[ChatMessage.from_user("go")]))
        while not any(line.startswith("started") for line in agent_peer.lines()[before:]):
            await asyncio.sleep(0.02)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        # told at once, not when the call's own timeout ends (60 s, the client's default)
        await asyncio.to_thread(agent_peer.wait_for, "cancelled", before, 30)

    asyncio.run(main())
    assert agent_peer.hub.call_tool("mcp__agent__add", {"a": 1, "b": 1}).text == "2"


def test_the_sync_entry_point_works_inside_a_running_loop(tools: list[Any]) -> None:
    async def main() -> dict[str, Any]:  # a Jupyter cell: a loop runs, the agent is sync
        return _run(tools, ("mcp__agent__add", {"a": 20, "b": 22}))

    assert asyncio.run(main())["mcp__agent__add"].result == "42"


def test_eight_runs_on_four_threads_share_one_hub(tools: list[Any]) -> None:
    def one(i: int) -> Any:
        return _run(tools, ("mcp__agent__add", {"a": i, "b": 100}))["mcp__agent__add"].result

    assert on_four_threads(one) == {i: str(i + 100) for i in range(8)}
