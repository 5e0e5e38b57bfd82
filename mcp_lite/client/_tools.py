"""A ``Client``'s tools: listing them (their output schemas and task support kept),
``call_tool`` (a task when the tool requires one, the structured result checked), and what an
LLM host needs: tool definitions in a model's format and a tool call as a future."""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from .. import tasks as _tasks
from .._connection import Connection
from .._deadline import Deadline
from ..errors import LocalProtocolError
from ..protocol import session as proto
from ..protocol.results import tool_result
from ..protocol.tool_formats import ToolFormat, check_format, safe_names, shape_definition
from ..protocol.tool_specs import ToolSpec, for_model, to_mcp_tool
from ..protocol.tools import validate_tools
from ..tasks import Task
from ._calls import Calls
from ._tool_results import json_or_none, output_validator, tool_result_of, validate_structured

if TYPE_CHECKING:
    from ..protocol.types import CallToolResult, Progress, Tool


__all__ = ["Tools"]

log = logging.getLogger("mcp_lite.client")


class Tools(Calls):
    """The tool calls of a ``Client`` (a base class of it)."""

    _output_schemas: dict[str, dict[str, Any]]
    _task_support: dict[str, str] | None
    _on_task: Callable[[Task], None] | None

    def list_tools(self, *, timeout: float | None = None) -> list[Tool]:
        """Every tool the server offers, across all pages (``timeout``: for them all)."""
        return self._list_tools(Deadline.after(self._timeout(timeout)))

    def _list_tools(self, deadline: Deadline) -> list[Tool]:
        items = self._list_all("tools/list", "tools", "tools", deadline)
        if self._session(deadline).era == "stateless":
            items = [item for item in items if self._valid_header_annotations(item)]
        tools = validate_tools(items)
        self._output_schemas = {t.name: t.output_schema for t in tools if t.output_schema}
        self._task_support = {
            item["name"]: item["execution"]["taskSupport"]
            for item in items
            if isinstance(item, dict)
            and isinstance(item.get("execution"), dict)
            and isinstance(item["execution"].get("taskSupport"), str)
        }
        return tools

    def _valid_header_annotations(self, tool: Any) -> bool:
        problem = proto.mcp_header_problem(
            tool.get("inputSchema") if isinstance(tool, dict) else None
        )
        if problem is not None:
            log.warning("MCP server %r: tool %r left out: %s", self.name, tool.get("name"), problem)
        return problem is None

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: Callable[[Progress], Any] | None = None,
        cancel_event: threading.Event | None = None,
    ) -> CallToolResult:
        """Call a tool. A tool's own failure is ``result.is_error`` (see ``raise_for_error``);
        a protocol failure (unknown tool...) raises ``RpcError``.

        ``cancel_event`` (a ``threading.Event``): set it from any thread to abandon the call;
        the server is told (``notifications/cancelled``) and this raises ``RequestCancelled``.

        When the tool's ``outputSchema`` is known (from ``list_tools``) and the optional
        ``jsonschema`` package is installed, ``structured_content`` is validated against it
        (``RemoteProtocolError`` when it does not match).
        """
        name = self._llm_aliases.get(name, name)  # a name tool_definitions had to change
        # One deadline for all of it: a reconnect, the tool list of a task-capable server,
        # input rounds, a retry, the task's polling.
        deadline = Deadline.after(self.timeout if timeout is None else self._timeout(timeout))
        return self._call_tool(deadline, name, arguments, on_progress, cancel_event)

    def _call_tool(
        self,
        deadline: Deadline,
        name: str,
        arguments: Mapping[str, Any] | None,
        on_progress: Callable[[Progress], Any] | None = None,
        cancel_event: threading.Event | None = None,
    ) -> CallToolResult:
        """``call_tool`` on the caller's deadline."""
        conn = self._conn
        if conn is None or not conn.alive:
            conn = self._connection(deadline)
        info = conn.info
        if (
            info is not None
            and "tasks" in info.capabilities
            and self._must_use_task(name, conn, deadline)
        ):  # 2025-11-25 "required": a task
            task = _tasks.start_task(self, name, arguments, None, deadline)
            result = task._result(deadline)
        else:
            params = {"name": name, "arguments": dict(arguments or {})}
            raw = self._request_once(
                conn, deadline, "tools/call", params, on_progress, cancel_event
            )
            if raw.get("resultType") == "task":  # 2026-07-28: the server made it a task
                result = Task(self, raw, modern=True, tool=name)._result(deadline)
            else:
                result = tool_result(raw)
        schema = self._output_schemas.get(name)
        if schema is not None and not result.is_error:
            if result.structured_content is None and result.text:
                result._text_json = json_or_none(result.text)
            validate_structured(name, schema, result.data)
        return result

    def _must_use_task(self, name: str, conn: Connection, deadline: Deadline) -> bool:
        """2025-11-25: is ``name`` a ``taskSupport: "required"`` tool? (tools listed once,
        on the call's deadline)"""
        info = conn.info
        if info is None or info.era == "stateless" or "tasks" not in info.capabilities:
            return False  # the common case, decided without a call
        if not isinstance(info.capabilities["tasks"], dict):
            return False
        if self._task_support is None:
            self._list_tools(deadline)  # once: it keeps each tool's execution.taskSupport
        return (self._task_support or {}).get(name) == "required"

    # --- for an LLM host: tool definitions, and a tool call as a future --------------------------

    # LLM-safe name -> the server's tool name, for the names tool_definitions had to change
    # (replaced whole, never mutated: this shared empty default stays empty).
    _llm_aliases: dict[str, str] = {}

    def tool_definitions(
        self, format: ToolFormat = "anthropic", *, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """The server's tools (``list_tools``) as an LLM API's tool list:

        - ``"anthropic"``: ``{"name", "description", "input_schema"}`` (Messages API);
        - ``"openai"``: ``{"type": "function", "function": {"name", "description",
          "parameters"}}`` (Chat Completions);
        - ``"openai-responses"``: ``{"type": "function", "name", "description",
          "parameters"}`` (the Responses API, flat).

        Names are the server's tool names. One an LLM API would refuse (over 64 characters,
        or characters outside ``[a-zA-Z0-9_-]``) is normalized and shortened with a stable
        hash, as ``Hub.tool_definitions`` does; ``call_tool`` and ``submit_tool`` take such
        a name back. Each schema is a copy: edit it freely. A tool only an MCP App may call
        (``tool.ui.visibility`` without ``"model"``) is left out.

        Raises:
            ValueError: an unknown ``format`` (checked before any call).
        """
        check_format(format)
        out = []
        for spec in self.tool_specs(timeout=timeout):
            tool = spec.tool.tool
            assert tool is not None  # tool_specs always keeps the server's Tool
            schema = copy.deepcopy(tool.input_schema) if tool.input_schema else {}
            schema.setdefault("type", "object")
            out.append(shape_definition(spec.name, tool.description or "", schema, format))
        return out

    def tool_specs(self, *, timeout: float | None = None) -> list[ToolSpec]:
        """The server's tools as ``tool_definitions`` offers them: each ``ToolSpec`` has the
        LLM-safe name (``call_tool`` takes it back), ``server`` (this client's ``name``) and
        the ``McpTool`` (title, annotations, schemas; its ``name`` is the Hub-style
        ``mcp__<server>__<tool>``, its ``tool_name`` the server's)."""
        server = self.name
        tools = [to_mcp_tool(server, t) for t in self.list_tools(timeout=timeout)]
        tools = for_model(tools)
        names = safe_names([t.tool_name for t in tools])
        self._llm_aliases = {
            n: t.tool_name for n, t in zip(names, tools, strict=True) if n != t.tool_name
        }
        return [ToolSpec(n, server, t) for t, n in zip(tools, names, strict=True)]

    def submit_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: Callable[[Progress], Any] | None = None,
    ) -> Future[CallToolResult]:
        """Call a tool without waiting: the ``Future`` resolves to its ``CallToolResult``
        (as ``call_tool`` returns it), or to what ``submit`` describes (``RpcError``,
        ``RequestTimeout``, ``ConnectionClosed``). ``future.cancel()`` withdraws the call
        and tells the server (``notifications/cancelled``), as a ``submit`` future does.

        ``structured_content`` is validated against the tool's ``outputSchema`` when it is
        known (from ``list_tools``) and ``jsonschema`` is installed: the future then fails
        with ``RemoteProtocolError``. The validator is built here, on the caller's thread;
        checking a result costs some microseconds where the answer arrives.

        A tool that must run as a task (2025-11-25 ``taskSupport: "required"``) is refused
        here (``LocalProtocolError``: use ``call_tool_as_task``), and a call the server
        turned into a task (2026-07-28) fails the future with ``RemoteProtocolError``.
        """
        name = self._llm_aliases.get(name, name)
        deadline = Deadline.after(self._timeout(timeout))  # one, as submit() makes it
        conn = self._connection(deadline)
        if self._must_use_task(name, conn, deadline):
            raise LocalProtocolError(
                f"tool {name!r} of {self.name!r} runs only as a task: use call_tool_as_task"
            )
        validator = self._output_validator(name)
        raw = conn.submit(
            "tools/call",
            {"name": name, "arguments": dict(arguments or {})},
            deadline=deadline,
            max_total_timeout=self.max_total_timeout if self.reset_timeout_on_progress else None,
            on_progress=on_progress,
            reset_on_progress=self.reset_timeout_on_progress,
        )
        future: Future[CallToolResult] = Future()
        # Never marked running: cancel() succeeds until the call completes, and reaches raw.
        future.add_done_callback(lambda f: raw.cancel() if f.cancelled() else None)

        def settle(done: Future[dict[str, Any]]) -> None:
            try:
                if done.cancelled():
                    future.cancel()
                    return
                error = done.exception()
                if error is None:
                    result: Any = tool_result_of(name, done.result(), validator)
            except BaseException as exc:  # a conversion or validation failure
                error = exc
            try:
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(result)
            except Exception:  # cancelled meanwhile (InvalidStateError)
                pass

        raw.add_done_callback(settle)
        return future

    def _output_validator(self, tool: str) -> Any:
        """A compiled ``jsonschema`` validator of ``tool``'s ``outputSchema``, or None; kept
        per client (see ``output_validator``)."""
        cache = vars(self).setdefault("_validators", {})  # per client, made on first use
        return output_validator(self._output_schemas, cache, tool)
