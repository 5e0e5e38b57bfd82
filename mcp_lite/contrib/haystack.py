"""Haystack: ``haystack_tools(source)`` gives ``haystack.tools.Tool`` objects for an ``Agent``
or a ``ToolInvoker``.

    from mcp_lite.contrib.haystack import haystack_tools
    agent = Agent(chat_generator=generator, tools=haystack_tools(hub))
    agent.run(messages=[ChatMessage.from_user("...")])   # sync: blocks on the Hub

Each tool's ``parameters`` is the MCP ``inputSchema`` unchanged; the model's arguments go to
the server as sent. ``function`` blocks on the source; ``async_function`` (``run_async``)
runs the call in a worker thread and cancels it on the server when the task is cancelled.
Results: the structured content (``{"result": x}`` unwrapped), else the text; images stay as
the Hub's notes. A failure the model is shown (``model_errors``) is raised with mcp_lite's
message: Haystack hands the model a tool result flagged as an error (it does that with any
exception unless the invoker's ``raise_on_failure`` says otherwise).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._adapter import (
    AdaptedTool,
    Adapter,
    ModelError,
    ModelErrors,
    Source,
    require,
    structured_of,
)

require("haystack.tools.tool", "haystack", "haystack-ai")

from haystack.tools.tool import Tool  # noqa: E402

__all__ = ["haystack_tools"]


def _tool(adapter: Adapter, adapted: AdaptedTool) -> Tool:
    name = adapted.name

    def call(**arguments: Any) -> Any:
        try:
            return _value(adapter.call(name, arguments))
        except ModelError as exc:
            raise RuntimeError(exc.message) from None

    async def acall(**arguments: Any) -> Any:
        try:
            return _value(await adapter.acall(name, arguments))
        except ModelError as exc:
            raise RuntimeError(exc.message) from None

    return Tool(
        name=name,
        description=adapted.description or adapted.title,
        parameters=adapted.schema,
        function=call,
        async_function=acall,
    )


def _value(result: Any) -> Any:
    structured = structured_of(result)
    return result.text if structured is None else structured


def haystack_tools(
    source: Source,
    *,
    timeout: float | None = None,
    tools: Iterable[str] | None = None,
    model_errors: ModelErrors = "tool",
    resource_tools: bool = True,
) -> list[Tool]:
    """The tools of ``source`` (a ``Hub``, ``Client`` or ``ProcessHub``) as Haystack tools.

    Args:
        timeout: seconds per call (None: the source's configured totals).
        tools: keep only these: LLM-safe names, or rules (``mcp__server``,
            ``mcp__server__tool``); the Hub's deny rules apply on top.
        model_errors: ``"tool"``, ``"all"`` or ``"none"`` (see ``mcp_lite.contrib._adapter``).
        resource_tools: add the Hub's ``ListMcpResourcesTool`` and ``ReadMcpResourceTool``
            when a server has resources.

    Lists the tools now (which starts the servers).
    """
    adapter = Adapter(
        source,
        timeout=timeout,
        tools=tools,
        model_errors=model_errors,
        resource_tools=resource_tools,
    )
    return [_tool(adapter, adapted) for adapted in adapter.tools()]
