"""Tasks (2025-11-25) against the official TypeScript reference server
(``@modelcontextprotocol/server-everything``, stdio): a ``taskSupport: "required"`` tool with
an elicitation inside the task, the task handle, and the client as task receiver for the
server's task-augmented sampling and elicitation."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_lite

pytestmark = [
    pytest.mark.usefixtures("no_leftover_processes"),
]


def _sample(params: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "sampled in a task"},
        "model": "test-model",
        "stopReason": "endTurn",
    }


def test_required_task_tool_with_input_and_handle(everything_stdio: list[str]) -> None:
    asked: list[str] = []

    def elicit(params: Any) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {"interpretation": "programming"}}

    with mcp_lite.connect(everything_stdio, timeout=60, elicitation_handler=elicit) as client:
        tools = {t.name: t for t in client.list_tools()}
        assert (tools["simulate-research-query"].model_extra or {})["execution"] == {
            "taskSupport": "required"
        }
        # called as a task by itself; the elicitation arrives through tasks/result
        result = client.call_tool(
            "simulate-research-query", {"topic": "python", "ambiguous": True}, timeout=60
        )
        assert "Clarification**: programming" in result.text
        assert len(asked) == 1 and "python" in asked[0]

        task = client.call_tool_as_task("simulate-research-query", {"topic": "tides"})
        status = task.status()
        assert status.status == "working" and status.poll_interval_ms == 1000
        assert task.id in {t.task_id for t in client.list_tasks()}
        task.cancel()
        assert task.status().status == "cancelled"


def test_client_as_task_receiver(everything_stdio: list[str]) -> None:
    with mcp_lite.connect(
        everything_stdio,
        timeout=60,
        sampling_handler=_sample,
        elicitation_handler=lambda p: {"action": "accept", "content": {"name": "Ada"}},
        task_receiver=True,
    ) as client:
        names = {t.name for t in client.list_tools()}
        # the server offers these only to a client that declares tasks.requests.*
        assert {"trigger-sampling-request-async", "trigger-elicitation-request-async"} <= names
        sampled = client.call_tool("trigger-sampling-request-async", {"prompt": "hi"}, timeout=60)
        assert "sampled in a task" in sampled.text and "Task created" in sampled.text
        elicited = client.call_tool("trigger-elicitation-request-async", {}, timeout=60)
        assert "[COMPLETED]" in elicited.text


def test_no_task_receiver_means_no_async_tools(everything_stdio: list[str]) -> None:
    with mcp_lite.connect(everything_stdio, timeout=60, sampling_handler=_sample) as client:
        assert "tasks" not in client._handlers.capabilities
        names = {t.name for t in client.list_tools()}
        assert "trigger-sampling-request-async" not in names
