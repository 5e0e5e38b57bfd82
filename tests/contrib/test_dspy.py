"""DSPy: ``dspy_tools`` through DSPy's own ``ReAct`` loop with its ``DummyLM``, over a real
Hub and a real stdio server (``agent_server.py``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("dspy", reason="DSPy is not installed (requirements-agents.txt)")

import dspy
from agent_peer import AgentPeer, on_four_threads
from dspy.utils import DummyLM

from mcp_lite.contrib.dspy import McpLiteDspyTool, dspy_tools

Call = tuple[str, dict[str, Any]]


def _lm(*calls: Call) -> DummyLM:
    steps: list[dict[str, Any]] = [
        {"next_thought": "call it", "next_tool_name": n, "next_tool_args": a} for n, a in calls
    ]
    steps.append({"next_thought": "done", "next_tool_name": "finish", "next_tool_args": {}})
    steps.append({"reasoning": "done", "answer": "done"})
    return DummyLM(steps)


def _run(tools: list[McpLiteDspyTool], *calls: Call) -> list[Any]:
    """The observations the model was shown, one per call."""
    with dspy.context(lm=_lm(*calls)):
        prediction = dspy.ReAct("question -> answer", tools=tools, max_iters=5)(question="go")
    assert prediction.answer == "done"  # the run went on to the model's answer
    return [prediction.trajectory[f"observation_{i}"] for i in range(len(calls))]


@pytest.fixture(scope="module")
def tools(agent_peer: AgentPeer) -> list[McpLiteDspyTool]:
    return dspy_tools(agent_peer.hub)


def test_a_tool_call_through_the_agent_gives_the_right_answer(
    tools: list[McpLiteDspyTool],
) -> None:
    assert _run(tools, ("mcp__agent__add", {"a": 2, "b": 3})) == [5]


def test_the_schema_keeps_every_keyword_and_required(tools: list[McpLiteDspyTool]) -> None:
    by_name = {t.name: t for t in tools}
    assert "mcp__agent__secret" not in by_name  # denied by a rule: never offered
    function = by_name["mcp__agent__search"].format_as_litellm_function_call()["function"]
    params = function["parameters"]
    assert params["required"] == ["query"]
    assert params["properties"]["query"] == {
        "type": "string",
        "minLength": 1,
        "description": "What to look for",
    }
    assert params["properties"]["mode"]["enum"] == ["fast", "deep"]  # the $ref inlined


def test_arguments_reach_the_server_as_sent(tools: list[McpLiteDspyTool]) -> None:
    args = {"config": "c", "run_manager": "r"}  # "self" is DSPy's own (Tool.__call__)
    [clash] = [t for t in tools if t.name == "mcp__agent__clash"]
    out = _run(tools, ("mcp__agent__search", {"query": "x"}))
    assert json.loads(out[0]) == {"query": "x"}  # no default filled in
    assert "self" in json.loads(clash.func(**args, self="s"))  # reached through the function


def test_refusal_error_and_timeout_reach_the_model_and_the_run_goes_on(
    agent_peer: AgentPeer, tools: list[McpLiteDspyTool]
) -> None:
    refused, boom = _run(tools, ("mcp__agent__refused", {}), ("mcp__agent__boom", {}))
    assert refused.startswith("Error: ") and "refused by the permission handler" in refused
    assert boom == "Error: the boom tool exploded"
    before = len(agent_peer.lines())
    quick = dspy_tools(agent_peer.hub, timeout=0.5, tools=["mcp__agent__slow"])
    [slow] = _run(quick, ("mcp__agent__slow", {"seconds": 60}))
    assert "no answer before its total deadline" in slow
    agent_peer.wait_for("cancelled", after=before)  # the server was told


def test_cancelling_an_async_run_tells_the_server(agent_peer: AgentPeer) -> None:
    tools = dspy_tools(agent_peer.hub, tools=["mcp__agent__slow"])
    before = len(agent_peer.lines())

    async def main() -> None:
        react = dspy.ReAct("question -> answer", tools=tools, max_iters=3)
        with dspy.context(lm=_lm(("mcp__agent__slow", {"seconds": 60}))):
            run = asyncio.create_task(react.acall(question="go"))
            while not any(line.startswith("started") for line in agent_peer.lines()[before:]):
                await asyncio.sleep(0.02)
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
        # told at once, not when the call's own timeout ends (60 s, the client's default)
        await asyncio.to_thread(agent_peer.wait_for, "cancelled", before, 30)

    asyncio.run(main())
    assert agent_peer.hub.call_tool("mcp__agent__add", {"a": 1, "b": 1}).text == "2"


def test_the_sync_entry_point_works_inside_a_running_loop(tools: list[McpLiteDspyTool]) -> None:
    async def main() -> list[Any]:  # a Jupyter cell: a loop runs, the program is sync
        return _run(tools, ("mcp__agent__add", {"a": 20, "b": 22}))

    assert asyncio.run(main()) == [42]


def test_eight_runs_on_four_threads_share_one_hub(tools: list[McpLiteDspyTool]) -> None:
    def one(i: int) -> Any:
        return _run(tools, ("mcp__agent__add", {"a": i, "b": 100}))[0]

    assert on_four_threads(one) == {i: i + 100 for i in range(8)}
