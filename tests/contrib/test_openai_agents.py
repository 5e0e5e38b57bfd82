"""OpenAI Agents SDK: ``openai_agents_tools`` through the SDK's own ``Runner`` with a small
``Model`` subclass (the SDK has no fake model), over a real Hub and a real stdio server
(``agent_server.py``)."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

pytest.importorskip("agents", reason="openai-agents is not installed (requirements-agents.txt)")

from agent_peer import PNG, SEARCH_SCHEMA, AgentPeer, on_four_threads
from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelResponse,
    Runner,
    Usage,
    set_tracing_disabled,
)
from agents.items import ToolCallOutputItem
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from mcp_lite.contrib.openai_agents import openai_agents_tools

set_tracing_disabled(True)
Call = tuple[str, dict[str, Any]]


class FakeModel(Model):
    """Calls the tools once, then answers "done"; remembers the tools it was given."""

    def __init__(self, *calls: Call) -> None:
        self.calls = calls
        self.turns = 0
        self.tools: list[Any] = []

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.tools = list(tools)
        self.turns += 1
        if self.turns == 1:
            output: list[Any] = [
                ResponseFunctionToolCall(
                    type="function_call", call_id=f"c{i}", name=n, arguments=json.dumps(a)
                )
                for i, (n, a) in enumerate(self.calls)
            ]
        else:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            output = [
                ResponseOutputMessage(
                    id="m", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _outputs(result: Any) -> dict[str, Any]:
    """The tool outputs the model was given, by tool name."""
    return {
        _name(result, item): item.output
        for item in result.new_items
        if isinstance(item, ToolCallOutputItem)
    }


def _name(result: Any, item: Any) -> str:
    call_id = item.raw_item["call_id"] if isinstance(item.raw_item, dict) else item.raw_item.call_id
    for other in result.new_items:
        raw = other.raw_item
        if getattr(raw, "type", None) == "function_call" and raw.call_id == call_id:
            return str(raw.name)
    raise AssertionError(f"no call {call_id}")


def _run(tools: list[FunctionTool], *calls: Call) -> dict[str, Any]:
    result = Runner.run_sync(Agent(name="a", model=FakeModel(*calls), tools=tools), "go")
    assert result.final_output == "done"  # the run went on to the model's answer
    return _outputs(result)


@pytest.fixture(scope="module")
def tools(agent_peer: AgentPeer) -> list[FunctionTool]:
    return openai_agents_tools(agent_peer.hub)


def test_a_tool_call_through_the_agent_gives_the_right_answer(tools: list[FunctionTool]) -> None:
    assert _run(tools, ("mcp__agent__add", {"a": 2, "b": 3}))["mcp__agent__add"] == "5"


def test_the_model_receives_the_schema_unchanged(tools: list[FunctionTool]) -> None:
    model = FakeModel(("mcp__agent__add", {"a": 1, "b": 1}))
    Runner.run_sync(Agent(name="a", model=model, tools=tools), "go")
    by_name = {t.name: t for t in model.tools}
    assert by_name["mcp__agent__search"].params_json_schema == SEARCH_SCHEMA
    assert by_name["mcp__agent__search"].strict_json_schema is False
    assert "mcp__agent__secret" not in by_name  # denied by a rule: never offered
    assert by_name["mcp__agent__wipe"].needs_approval is True  # destructiveHint
    assert by_name["mcp__agent__add"].needs_approval is False


def test_arguments_reach_the_server_as_sent(tools: list[FunctionTool]) -> None:
    args = {"config": "c", "run_manager": "r", "self": "s"}
    out = _run(tools, ("mcp__agent__clash", args), ("mcp__agent__search", {"query": "x"}))
    assert json.loads(out["mcp__agent__clash"]) == args
    assert json.loads(out["mcp__agent__search"]) == {"query": "x"}


def test_refusal_error_and_timeout_reach_the_model_and_the_run_goes_on(
    agent_peer: AgentPeer, tools: list[FunctionTool]
) -> None:
    out = _run(tools, ("mcp__agent__refused", {}), ("mcp__agent__boom", {}))
    assert out["mcp__agent__refused"].startswith("Error: ")
    assert "refused by the permission handler" in out["mcp__agent__refused"]
    assert out["mcp__agent__boom"] == "Error: the boom tool exploded"
    before = len(agent_peer.lines())
    quick = openai_agents_tools(agent_peer.hub, timeout=0.5, tools=["mcp__agent__slow"])
    slow = _run(quick, ("mcp__agent__slow", {"seconds": 60}))["mcp__agent__slow"]
    assert "no answer before its total deadline" in slow
    agent_peer.wait_for("cancelled", after=before)  # the server was told


def test_the_sdks_own_timeout_cancels_the_call_on_the_server(agent_peer: AgentPeer) -> None:
    [slow] = openai_agents_tools(agent_peer.hub, tools=["mcp__agent__slow"])
    slow.timeout_seconds = 1.0
    before = len(agent_peer.lines())
    out = _run([slow], ("mcp__agent__slow", {"seconds": 60}))["mcp__agent__slow"]
    assert "timed out" in out
    agent_peer.wait_for("cancelled", after=before, timeout=30)  # not after 60 s


def test_needs_approval_interrupts_the_run(agent_peer: AgentPeer) -> None:
    tools = openai_agents_tools(agent_peer.hub, tools=["mcp__agent__wipe"])
    result = Runner.run_sync(
        Agent(name="a", model=FakeModel(("mcp__agent__wipe", {})), tools=tools), "go"
    )
    assert [i.raw_item.name for i in result.interruptions] == ["mcp__agent__wipe"]
    never = openai_agents_tools(agent_peer.hub, tools=["mcp__agent__wipe"], needs_approval=False)
    assert _run(never, ("mcp__agent__wipe", {}))["mcp__agent__wipe"] == "wiped"


def test_cancelling_an_async_run_tells_the_server(agent_peer: AgentPeer) -> None:
    tools = openai_agents_tools(agent_peer.hub, tools=["mcp__agent__slow"])
    before = len(agent_peer.lines())

    async def main() -> None:
        agent = Agent(name="a", model=FakeModel(("mcp__agent__slow", {"seconds": 60})), tools=tools)
        run = asyncio.create_task(Runner.run(agent, "go"))
        while not any(line.startswith("started") for line in agent_peer.lines()[before:]):
            await asyncio.sleep(0.02)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        # told at once, not when the call's own timeout ends (60 s, the client's default)
        await asyncio.to_thread(agent_peer.wait_for, "cancelled", before, 30)

    asyncio.run(main())
    assert agent_peer.hub.call_tool("mcp__agent__add", {"a": 1, "b": 1}).text == "2"


def test_eight_runs_on_four_threads_share_one_hub(tools: list[FunctionTool]) -> None:
    def one(i: int) -> Any:
        return _run(tools, ("mcp__agent__add", {"a": i, "b": 100}))["mcp__agent__add"]

    assert on_four_threads(one) == {i: str(i + 100) for i in range(8)}


def test_images_become_tool_output_images_with_inline_media(agent_peer: AgentPeer) -> None:
    with agent_peer.other_hub(media="inline") as hub:
        tools = openai_agents_tools(hub, tools=["mcp__agent__picture"])
        out = _run(tools, ("mcp__agent__picture", {}))["mcp__agent__picture"]
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert [o.model_dump(exclude_none=True) for o in out] == [
        {"type": "text", "text": "a red dot"},
        {"type": "image", "image_url": url},
    ]
