"""LangChain: ``langchain_tools`` through LangChain's own agent loop (``create_agent``) with
its fake chat model, over a real Hub and a real stdio server (``agent_server.py``)."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="LangChain is not installed (requirements-agents.txt)")
pytest.importorskip(
    "langchain.agents", reason="langchain is not installed (requirements-agents.txt)"
)

from agent_peer import PNG, SEARCH_SCHEMA, AgentPeer
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from mcp_lite.contrib.langchain import McpLiteTool, langchain_tools
from mcp_lite.errors import ConnectError, ToolError


class FakeModel(GenericFakeChatModel):
    """Answers from a list; remembers the tools as a chat model would send them."""

    seen_tools: list[dict[str, Any]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        self.seen_tools = [convert_to_openai_tool(t) for t in tools]
        return self


def _calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": n, "args": a, "id": f"call{i}", "type": "tool_call"}
            for i, (n, a) in enumerate(calls)
        ],
    )


def _model(*calls: tuple[str, dict[str, Any]]) -> FakeModel:
    return FakeModel(messages=iter([_calls(*calls), AIMessage(content="done")]))


def _tool_messages(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.name: m for m in state["messages"] if isinstance(m, ToolMessage)}


def _run(tools: list[McpLiteTool], *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    agent = create_agent(_model(*calls), tools=tools)
    state = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert state["messages"][-1].content == "done"  # the run went on to the model's answer
    return state


@pytest.fixture(scope="module")
def tools(agent_peer: AgentPeer) -> list[McpLiteTool]:
    return langchain_tools(agent_peer.hub)


def test_a_tool_call_through_the_agent_gives_the_right_answer(tools: list[McpLiteTool]) -> None:
    state = _run(tools, ("mcp__agent__add", {"a": 2, "b": 3}))
    message = _tool_messages(state)["mcp__agent__add"]
    assert message.content == "5" and message.status == "success"
    assert message.artifact == {"structured_content": 5}


def test_the_model_receives_the_schema_unchanged(agent_peer: AgentPeer) -> None:
    model = _model(("mcp__agent__add", {"a": 1, "b": 1}))
    tools = langchain_tools(agent_peer.hub)
    create_agent(model, tools=tools).invoke({"messages": ["go"]})
    assert {t.name: t for t in tools}["mcp__agent__search"].args_schema == SEARCH_SCHEMA
    by_name = {t["function"]["name"]: t["function"] for t in model.seen_tools}
    # LangChain's own conversion for a chat model inlines $defs; nothing else changes
    inlined = copy.deepcopy(SEARCH_SCHEMA)
    inlined["properties"]["mode"] = inlined.pop("$defs")["mode"]
    assert by_name["mcp__agent__search"]["parameters"] == inlined
    assert "mcp__agent__secret" not in by_name  # denied by a rule: never offered
    assert by_name["mcp__agent__add"]["description"] == "Add two integers."


def test_arguments_named_like_langchain_parameters_reach_the_server(
    tools: list[McpLiteTool],
) -> None:
    args = {"config": "c", "run_manager": "r", "self": "s"}
    state = _run(tools, ("mcp__agent__clash", args), ("mcp__agent__search", {"query": "x"}))
    messages = _tool_messages(state)
    assert json.loads(messages["mcp__agent__clash"].content) == args
    assert json.loads(messages["mcp__agent__search"].content) == {"query": "x"}  # nothing added


def test_refusal_error_and_timeout_reach_the_model_and_the_run_goes_on(
    agent_peer: AgentPeer, tools: list[McpLiteTool]
) -> None:
    state = _run(tools, ("mcp__agent__refused", {}), ("mcp__agent__boom", {}))
    messages = _tool_messages(state)
    assert messages["mcp__agent__refused"].status == "error"
    assert "refused by the permission handler" in messages["mcp__agent__refused"].content
    assert messages["mcp__agent__boom"].status == "error"
    assert "the boom tool exploded" in messages["mcp__agent__boom"].content
    assert "Traceback" not in messages["mcp__agent__boom"].content
    before = len(agent_peer.lines())
    quick = langchain_tools(agent_peer.hub, timeout=0.5, tools=["mcp__agent__slow"])
    assert [t.name for t in quick] == ["mcp__agent__slow"]
    slow = _tool_messages(_run(quick, ("mcp__agent__slow", {"seconds": 60})))["mcp__agent__slow"]
    assert slow.status == "error" and "no answer before its total deadline" in slow.content
    agent_peer.wait_for("cancelled", after=before)  # the server was told


def test_a_connection_error_propagates_unless_model_errors_is_all(agent_peer: AgentPeer) -> None:
    with agent_peer.other_hub() as hub:
        [add] = langchain_tools(hub, tools=["mcp__agent__add"])
        [shown] = langchain_tools(hub, tools=["mcp__agent__add"], model_errors="all")
        hub.disable("agent")
        with pytest.raises(ConnectError, match="disabled"):
            _run([add], ("mcp__agent__add", {"a": 1, "b": 2}))
        message = _tool_messages(_run([shown], ("mcp__agent__add", {"a": 1, "b": 2})))
        assert message["mcp__agent__add"].status == "error"
        assert "disabled" in message["mcp__agent__add"].content


def test_model_errors_none_raises_the_tool_error(agent_peer: AgentPeer) -> None:
    [boom] = langchain_tools(agent_peer.hub, tools=["mcp__agent__boom"], model_errors="none")
    with pytest.raises(ToolError, match="exploded"):
        _run([boom], ("mcp__agent__boom", {}))


def test_cancelling_an_async_run_tells_the_server(agent_peer: AgentPeer) -> None:
    tools = langchain_tools(agent_peer.hub, tools=["mcp__agent__slow"])
    before = len(agent_peer.lines())

    async def main() -> None:
        agent = create_agent(_model(("mcp__agent__slow", {"seconds": 60})), tools=tools)
        run = asyncio.create_task(agent.ainvoke({"messages": [{"role": "user", "content": "go"}]}))
        while not any(line.startswith("started") for line in agent_peer.lines()[before:]):
            await asyncio.sleep(0.02)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        # told at once, not when the call's own timeout ends (60 s, the client's default)
        await asyncio.to_thread(agent_peer.wait_for, "cancelled", before, 30)

    asyncio.run(main())
    assert agent_peer.hub.call_tool("mcp__agent__add", {"a": 1, "b": 1}).text == "2"


def test_the_sync_entry_point_works_inside_a_running_loop(tools: list[McpLiteTool]) -> None:
    async def main() -> dict[str, Any]:  # a Jupyter cell: a loop runs, the agent is sync
        return _run(tools, ("mcp__agent__add", {"a": 20, "b": 22}))

    assert _tool_messages(asyncio.run(main()))["mcp__agent__add"].content == "42"


def test_async_runs_give_the_right_answer(tools: list[McpLiteTool]) -> None:
    async def main() -> Any:
        agent = create_agent(_model(("mcp__agent__add", {"a": 4, "b": 5})), tools=tools)
        return await agent.ainvoke({"messages": [{"role": "user", "content": "go"}]})

    assert _tool_messages(asyncio.run(main()))["mcp__agent__add"].content == "9"


def test_eight_runs_on_four_threads_share_one_hub(tools: list[McpLiteTool]) -> None:
    threads: set[str] = set()

    def one(i: int) -> str:
        threads.add(threading.current_thread().name)
        state = _run(tools, ("mcp__agent__add", {"a": i, "b": 100}))
        return str(_tool_messages(state)["mcp__agent__add"].content)

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(one, range(8)))
    assert answers == [str(i + 100) for i in range(8)]


def test_images_become_image_blocks_with_inline_media(agent_peer: AgentPeer) -> None:
    call = {"name": "mcp__agent__picture", "args": {}, "id": "1", "type": "tool_call"}
    [picture] = langchain_tools(agent_peer.hub, tools=["mcp__agent__picture"])
    files = picture.invoke(call)
    assert isinstance(files.content, str) and "saved to" in files.content
    with agent_peer.other_hub(media="inline") as hub:
        [picture] = langchain_tools(hub, tools=["mcp__agent__picture"])
        inline = picture.invoke(call)
    assert inline.content == [
        {"type": "text", "text": "a red dot"},
        {"type": "image", "base64": base64.b64encode(PNG).decode(), "mime_type": "image/png"},
    ]
