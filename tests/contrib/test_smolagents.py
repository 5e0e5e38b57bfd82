"""smolagents: ``smolagents_tools`` through smolagents' own ``ToolCallingAgent`` with a small
``Model`` subclass, over a real Hub and a real stdio server (``agent_server.py``).
smolagents is sync only: no async run to cancel."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("smolagents", reason="smolagents is not installed (requirements-agents.txt)")

from agent_peer import AgentPeer, on_four_threads
from smolagents import ToolCallingAgent
from smolagents.memory import ActionStep
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
    get_tool_json_schema,
)

from mcp_lite.contrib.smolagents import McpLiteSmolTool, smolagents_tools

Call = tuple[str, dict[str, Any]]


class FakeModel(Model):
    """Calls the tools once, then the final answer "done"."""

    def __init__(self, *calls: Call) -> None:
        super().__init__(model_id="fake")
        self.calls = calls
        self.turns = 0

    def generate(self, messages: Any, **kwargs: Any) -> ChatMessage:
        self.turns += 1
        calls = self.calls if self.turns == 1 else (("final_answer", {"answer": "done"}),)
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            tool_calls=[
                ChatMessageToolCall(
                    id=f"c{self.turns}-{i}",
                    type="function",
                    function=ChatMessageToolCallFunction(name=n, arguments=a),
                )
                for i, (n, a) in enumerate(calls)
            ],
        )


def _run(tools: list[McpLiteSmolTool], *calls: Call) -> str:
    agent = ToolCallingAgent(tools=tools, model=FakeModel(*calls), max_steps=3, verbosity_level=0)
    assert agent.run("go") == "done"  # the run went on to the model's answer
    [step] = [s for s in agent.memory.steps if isinstance(s, ActionStep) and s.step_number == 1]
    return f"{step.observations or ''}\n{step.error or ''}"


@pytest.fixture(scope="module")
def tools(agent_peer: AgentPeer) -> list[McpLiteSmolTool]:
    return smolagents_tools(agent_peer.hub)


def test_a_tool_call_through_the_agent_gives_the_right_answer(
    tools: list[McpLiteSmolTool],
) -> None:
    assert "5" in _run(tools, ("mcp__agent__add", {"a": 2, "b": 3}))


def test_the_schema_keeps_every_keyword_and_required(tools: list[McpLiteSmolTool]) -> None:
    by_name = {t.name: t for t in tools}
    assert "mcp__agent__secret" not in by_name  # denied by a rule: never offered
    schema = get_tool_json_schema(by_name["mcp__agent__search"])["function"]["parameters"]
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"]["minLength"] == 1
    assert schema["properties"]["mode"]["enum"] == ["fast", "deep"]  # the $ref inlined
    assert schema["properties"]["limit"]["minimum"] == 1


def test_arguments_reach_the_server_as_sent(tools: list[McpLiteSmolTool]) -> None:
    args = {"config": "c", "run_manager": "r", "self": "s"}
    out = _run(tools, ("mcp__agent__clash", args))
    assert json.dumps(args, sort_keys=True) in out
    assert '{"query": "x"}' in _run(tools, ("mcp__agent__search", {"query": "x"}))


def test_refusal_error_and_timeout_reach_the_model_and_the_run_goes_on(
    agent_peer: AgentPeer, tools: list[McpLiteSmolTool]
) -> None:
    out = _run(tools, ("mcp__agent__refused", {}))
    assert "refused by the permission handler" in out
    out = _run(tools, ("mcp__agent__boom", {}))
    assert "the boom tool exploded" in out and "Traceback" not in out
    before = len(agent_peer.lines())
    quick = smolagents_tools(agent_peer.hub, timeout=0.5, tools=["mcp__agent__slow"])
    assert "no answer before its total deadline" in _run(
        quick, ("mcp__agent__slow", {"seconds": 60})
    )
    agent_peer.wait_for("cancelled", after=before)  # the server was told


def test_the_sync_entry_point_works_inside_a_running_loop(tools: list[McpLiteSmolTool]) -> None:
    async def main() -> str:
        return _run(tools, ("mcp__agent__add", {"a": 20, "b": 22}))

    assert "42" in asyncio.run(main())


def test_eight_runs_on_four_threads_share_one_hub(tools: list[McpLiteSmolTool]) -> None:
    def one(i: int) -> bool:
        return str(i + 100) in _run(tools, ("mcp__agent__add", {"a": i, "b": 100}))

    assert on_four_threads(one) == {i: True for i in range(8)}


def test_names_become_python_identifiers_and_calls_keep_the_hub_name() -> None:
    import mcp_lite

    server = mcp_lite.Server("my-shop")

    @server.tool(name="find-item")
    def find() -> str:
        return "found"

    with mcp_lite.Hub({"my-shop": server}) as hub:
        [tool] = smolagents_tools(hub)
        assert tool.name == "mcp__my_shop__find_item"
        assert tool() == "found"
