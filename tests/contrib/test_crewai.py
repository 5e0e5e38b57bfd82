"""CrewAI: ``crewai_tools`` through CrewAI's own agent loop (``Crew.kickoff``) with a small
``BaseLLM`` subclass answering in text ReAct, over a real Hub and a real stdio server
(``agent_server.py``).

CrewAI pins ``mcp<2`` and ``pydantic<2.13``, which would downgrade the test peers: ``make
test-crewai`` runs this file in an environment of its own (``.venv-crewai``); elsewhere it
skips. CrewAI is sync-first: no async run to cancel here."""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any

import pytest

pytest.importorskip("crewai", reason="CrewAI runs in .venv-crewai (make test-crewai)")
# Only where CrewAI runs (its own venv): set at collection in the main run, this turned the
# OpenTelemetry SDK off for every test after it (the observability suite failed).
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from agent_peer import AgentPeer, on_four_threads
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM

from mcp_lite.contrib.crewai import McpLiteCrewTool, crewai_tools

Call = tuple[str, dict[str, Any]]
# CrewAI warns about its own deprecations (function_calling_llm...): not mcp_lite's.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class FakeLLM(BaseLLM):  # type: ignore[misc]
    """Answers in text ReAct: the action once, then the final answer; keeps what it saw."""

    def __init__(self, call: Call) -> None:
        super().__init__(model="fake")
        self._call = call
        self._seen: list[str] = []

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        text = (
            messages
            if isinstance(messages, str)
            else "\n".join(str(m.get("content")) for m in messages)
        )
        self._seen.append(text)
        if len(self._seen) > 1:  # the action's observation is in the prompt now
            return "Thought: I now know the final answer\nFinal Answer: done"
        name, args = self._call
        return f"Thought: call it\nAction: {name}\nAction Input: {json.dumps(args)}"

    def supports_function_calling(self) -> bool:
        return False

    def observation(self) -> str:
        last = self._seen[-1]
        found = re.findall(r"Observation: (.*)", last)
        assert found, last
        return found[-1]


def _run(tools: list[McpLiteCrewTool], call: Call) -> str:
    llm = FakeLLM(call)
    agent = Agent(role="r", goal="g", backstory="b", llm=llm, tools=tools, allow_delegation=False)
    task = Task(description="go", expected_output="an answer", agent=agent)
    out = Crew(agents=[agent], tasks=[task]).kickoff()
    assert "done" in str(out)  # the run went on to the model's answer
    return llm.observation()


@pytest.fixture(scope="module")
def tools(agent_peer: AgentPeer) -> list[McpLiteCrewTool]:
    return crewai_tools(agent_peer.hub)


def test_a_tool_call_through_the_agent_gives_the_right_answer(
    tools: list[McpLiteCrewTool],
) -> None:
    assert _run(tools, ("mcp__agent__add", {"a": 2, "b": 3})).strip() == "5"


def test_the_schema_keeps_required_and_denied_tools_are_absent(
    tools: list[McpLiteCrewTool],
) -> None:
    by_name = {t._mcp_name: t for t in tools}
    assert "mcp__agent__secret" not in by_name  # denied by a rule: never offered
    schema = by_name["mcp__agent__search"].args_schema.model_json_schema()
    assert schema["required"] == ["query"]


def test_omitted_optionals_do_not_reach_the_server(tools: list[McpLiteCrewTool]) -> None:
    out = _run(tools, ("mcp__agent__search", {"query": "x"}))
    assert json.loads(out) == {"query": "x"}  # CrewAI's None for mode and limit dropped


def test_refusal_error_and_timeout_reach_the_model_and_the_run_goes_on(
    agent_peer: AgentPeer, tools: list[McpLiteCrewTool]
) -> None:
    assert "refused by the permission handler" in _run(tools, ("mcp__agent__refused", {}))
    assert "Error: the boom tool exploded" in _run(tools, ("mcp__agent__boom", {}))
    before = len(agent_peer.lines())
    quick = crewai_tools(agent_peer.hub, timeout=0.5, tools=["mcp__agent__slow"])
    out = _run(quick, ("mcp__agent__slow", {"seconds": 60}))
    assert "no answer before its total deadline" in out
    agent_peer.wait_for("cancelled", after=before)  # the server was told


def test_the_sync_tool_works_inside_a_running_loop(tools: list[McpLiteCrewTool]) -> None:
    # CrewAI's own kickoff() refuses a running loop (it says to use kickoff_async); the
    # tool's sync run needs no loop and works there
    [add] = [t for t in tools if t._mcp_name == "mcp__agent__add"]

    async def main() -> Any:
        return add.run(a=20, b=22)

    assert str(asyncio.run(main())).strip() == "42"


def test_eight_runs_on_four_threads_share_one_hub(tools: list[McpLiteCrewTool]) -> None:
    def one(i: int) -> str:
        return _run(tools, ("mcp__agent__add", {"a": i, "b": 100})).strip()

    assert on_four_threads(one) == {i: str(i + 100) for i in range(8)}
