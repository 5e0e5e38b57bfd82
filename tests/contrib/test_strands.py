"""strands-agents: ``strands_tools`` through strands' own ``Agent`` loop with a small
``Model`` subclass, over a real Hub and a real stdio server (``agent_server.py``).

strands pins ``mcp<2.2``, which would downgrade the test peers: ``make test-strands`` runs
this file in an environment of its own (``.venv-strands``); elsewhere it skips."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

pytest.importorskip("strands", reason="strands-agents runs in .venv-strands (make test-strands)")

from agent_peer import PNG, SEARCH_SCHEMA, AgentPeer, on_four_threads
from strands import Agent
from strands.models.model import Model

from mcp_lite.contrib.strands import McpLiteStrandsTool, strands_tools

Call = tuple[str, dict[str, Any]]


class FakeModel(Model):  # type: ignore[misc]
    """Calls the tools once, then answers "done"; remembers the tool specs it was given."""

    def __init__(self, *calls: Call) -> None:
        self.calls = calls
        self.specs: list[Any] = []

    def update_config(self, **config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, tool_specs: Any = None, *args: Any, **kwargs: Any) -> Any:
        self.specs = list(tool_specs or [])
        answered = any("toolResult" in block for m in messages for block in m["content"])
        yield {"messageStart": {"role": "assistant"}}
        if answered:
            yield {"contentBlockDelta": {"delta": {"text": "done"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        for i, (name, args) in enumerate(self.calls):
            yield {
                "contentBlockStart": {"start": {"toolUse": {"toolUseId": f"c{i}", "name": name}}}
            }
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def _results(agent: Any) -> dict[str, Any]:
    names = {
        block["toolUse"]["toolUseId"]: block["toolUse"]["name"]
        for m in agent.messages
        for block in m["content"]
        if "toolUse" in block
    }
    return {
        names[block["toolResult"]["toolUseId"]]: block["toolResult"]
        for m in agent.messages
        for block in m["content"]
        if "toolResult" in block
    }


def _run(tools: list[McpLiteStrandsTool], *calls: Call) -> dict[str, Any]:
    agent = Agent(model=FakeModel(*calls), tools=tools, callback_handler=None)
    assert "done" in str(agent("go"))  # the run went on to the model's answer
    return _results(agent)


@pytest.fixture(scope="module")
def tools(agent_peer: AgentPeer) -> list[McpLiteStrandsTool]:
    return strands_tools(agent_peer.hub)


def test_a_tool_call_through_the_agent_gives_the_right_answer(
    tools: list[McpLiteStrandsTool],
) -> None:
    result = _run(tools, ("mcp__agent__add", {"a": 2, "b": 3}))["mcp__agent__add"]
    assert result["status"] == "success" and result["content"] == [{"text": "5"}, {"json": 5}]


def test_the_model_receives_the_schema_unchanged(tools: list[McpLiteStrandsTool]) -> None:
    model = FakeModel(("mcp__agent__add", {"a": 1, "b": 1}))
    Agent(model=model, tools=tools, callback_handler=None)("go")
    by_name = {s["name"]: s for s in model.specs}
    # strands gives a property without a description its own ("Property limit"); the rest
    # is the schema as the server wrote it
    expected = copy.deepcopy(SEARCH_SCHEMA)
    expected["properties"]["limit"]["description"] = "Property limit"
    assert by_name["mcp__agent__search"]["inputSchema"]["json"] == expected
    assert "mcp__agent__secret" not in by_name  # denied by a rule: never offered


def test_arguments_reach_the_server_as_sent(tools: list[McpLiteStrandsTool]) -> None:
    args = {"config": "c", "run_manager": "r", "self": "s"}
    out = _run(tools, ("mcp__agent__clash", args), ("mcp__agent__search", {"query": "x"}))
    assert json.loads(out["mcp__agent__clash"]["content"][0]["text"]) == args
    assert json.loads(out["mcp__agent__search"]["content"][0]["text"]) == {"query": "x"}


def test_refusal_error_and_timeout_reach_the_model_and_the_run_goes_on(
    agent_peer: AgentPeer, tools: list[McpLiteStrandsTool]
) -> None:
    out = _run(tools, ("mcp__agent__refused", {}), ("mcp__agent__boom", {}))
    assert out["mcp__agent__refused"]["status"] == "error"
    assert "refused by the permission handler" in out["mcp__agent__refused"]["content"][0]["text"]
    assert out["mcp__agent__boom"] == {
        "toolUseId": out["mcp__agent__boom"]["toolUseId"],
        "status": "error",
        "content": [{"text": "the boom tool exploded"}],
    }
    before = len(agent_peer.lines())
    quick = strands_tools(agent_peer.hub, timeout=0.5, tools=["mcp__agent__slow"])
    slow = _run(quick, ("mcp__agent__slow", {"seconds": 60}))["mcp__agent__slow"]
    assert slow["status"] == "error"
    assert "no answer before its total deadline" in slow["content"][0]["text"]
    agent_peer.wait_for("cancelled", after=before)  # the server was told


def test_cancelling_an_async_run_tells_the_server(agent_peer: AgentPeer) -> None:
    tools = strands_tools(agent_peer.hub, tools=["mcp__agent__slow"])
    before = len(agent_peer.lines())

    async def main() -> None:
        agent = Agent(
            model=FakeModel(("mcp__agent__slow", {"seconds": 60})),
            tools=tools,
            callback_handler=None,
        )
        run = asyncio.create_task(agent.invoke_async("go"))
        while not any(line.startswith("started") for line in agent_peer.lines()[before:]):
            await asyncio.sleep(0.02)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        # told at once, not when the call's own timeout ends (60 s, the client's default)
        await asyncio.to_thread(agent_peer.wait_for, "cancelled", before, 30)

    asyncio.run(main())
    assert agent_peer.hub.call_tool("mcp__agent__add", {"a": 1, "b": 1}).text == "2"


def test_the_sync_entry_point_works_inside_a_running_loop(
    tools: list[McpLiteStrandsTool],
) -> None:
    async def main() -> dict[str, Any]:  # a Jupyter cell: a loop runs, the agent is sync
        return _run(tools, ("mcp__agent__add", {"a": 20, "b": 22}))

    assert asyncio.run(main())["mcp__agent__add"]["content"][0] == {"text": "42"}


def test_eight_runs_on_four_threads_share_one_hub(tools: list[McpLiteStrandsTool]) -> None:
    def one(i: int) -> Any:
        return _run(tools, ("mcp__agent__add", {"a": i, "b": 100}))["mcp__agent__add"]["content"][0]

    assert on_four_threads(one) == {i: {"text": str(i + 100)} for i in range(8)}


def test_images_become_image_blocks_with_inline_media(agent_peer: AgentPeer) -> None:
    with agent_peer.other_hub(media="inline") as hub:
        tools = strands_tools(hub, tools=["mcp__agent__picture"])
        out = _run(tools, ("mcp__agent__picture", {}))["mcp__agent__picture"]
    assert out["content"] == [
        {"text": "a red dot"},
        {"image": {"format": "png", "source": {"bytes": PNG}}},
    ]
