"""Tasks for ``Client``: a tool call that runs on the server behind a task id, in both shapes the
protocol has had (2025-11-25 core, the 2026-07-28 extension), as a ``Task`` handle that polls,
answers input requests and can be resumed from its id in another process (see
docs/explanation/protocol.md, "Tasks").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._connection.task_receiver import TaskReceiver
from ._deadline import Deadline
from .errors import (
    InvalidParams,
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
    RequestTimeout,
    RpcError,
    rpc_error_from_wire,
)
from .protocol.extensions import require
from .protocol.tasks import RELATED_TASK, TASKS_EXTENSION, TaskStatus

if TYPE_CHECKING:
    from ._requester import Requester, TaskRequester
    from .protocol.results import CallToolResult

__all__ = ["RELATED_TASK", "TASKS_EXTENSION", "Task", "TaskReceiver", "TaskStatus"]


class Task:
    """A tool call running as a task on the server.

    ``status()`` asks for its state, ``result(timeout=)`` waits for the ``CallToolResult``
    (answering the task's input requests with the client's handlers), ``cancel()`` asks the
    server to stop it (``tasks/cancel``, never ``notifications/cancelled``).
    """

    def __init__(
        self,
        client: TaskRequester,
        first: dict[str, Any],
        *,
        modern: bool,
        tool: str,
        resumed: bool = False,
    ) -> None:
        self._client = client
        self._modern = modern
        self.tool = tool  # "" for a resumed task: tasks/get does not say which tool it runs
        self._final: dict[str, Any] | None = None
        if resumed:  # a tasks/get answer (2026: resultType "complete", yet a task)
            self._last = TaskStatus.from_wire(first)
            self.id = self._last.task_id
        elif first.get("resultType") not in (None, "task") or "taskId" not in first:
            # the server answered at once (2026: it decided against a task)
            self._final = first
            self.id = ""
            self._last = TaskStatus("", "completed", raw=first)
        else:
            self._last = TaskStatus.from_wire(first)
            self.id = self._last.task_id
        self._answered: set[str] = set()
        # the connection this task was known on: a later one means the server may have
        # restarted (an "unknown task" then says so)
        self._known_on = getattr(client, "_connects", 0)
        self._lock = threading.Lock()
        self._release: Callable[[], None] | None = None

    def _hold_until_done(self, release: Callable[[], None]) -> None:
        """Call ``release`` once the task is seen to end and its result is collected: a Hub
        holds its server (no recycle) while a task may still be collected from it. A
        dropped handle releases nothing: its id may be resumed (the Hub bounds the hold)."""
        self._release = release
        self._settle()

    def _settle(self, *, ended: bool = False) -> None:
        release = self._release
        if release is None:
            return
        # 2025-11-25: a completed or failed task still has its result to fetch (tasks/result);
        # 2026-07-28: the final tasks/get carries it
        done = (
            ended
            or self._final is not None
            or (self._last.terminal and (self._modern or self._last.status == "cancelled"))
        )
        if done:
            self._release = None
            release()

    @property
    def _label(self) -> str:
        return f"task {self.id} ({self.tool})" if self.tool else f"task {self.id}"

    @property
    def last_status(self) -> TaskStatus:
        """The most recent status seen (no round trip)."""
        return self._last

    def status(self, *, timeout: float | None = None) -> TaskStatus:
        """``tasks/get``: the task's state now."""
        if self._final is not None:
            return self._last
        try:
            raw = self._client._request(self._deadline(timeout), "tasks/get", {"taskId": self.id})
        except InvalidParams as exc:  # -32602 on tasks/get: the server does not know the id
            raise self._unknown(exc) from exc
        self._last = TaskStatus.from_wire(raw)
        self._settle()
        return self._last

    def cancel(self, *, timeout: float | None = None) -> None:
        """Ask the server to cancel the task (``tasks/cancel``). Cooperative: the task may
        still finish; an already finished task is left as it is."""
        if self._final is not None or self._last.terminal:
            return
        try:
            deadline = self._deadline(timeout)
            raw = self._client._request(deadline, "tasks/cancel", {"taskId": self.id})
        except InvalidParams:
            return  # 2025-11-25: cancelling a terminal task is -32602; nothing to do
        if "taskId" in raw:
            self._last = TaskStatus.from_wire(raw)
            self._settle()

    def result(self, *, timeout: float | None = None) -> CallToolResult:
        """Wait for the task's ``CallToolResult``; ``timeout`` bounds the whole wait
        (default: the client's timeout).

        Raises:
            RpcError: the task failed with a JSON-RPC error.
            McpError: the task was cancelled.
            RequestTimeout: not finished in time (the task keeps running; ``cancel()`` it).
        """
        return self._result(self._deadline(timeout))

    def _result(self, deadline: Deadline) -> CallToolResult:
        """``result()`` on the caller's deadline (``call_tool`` passes its own)."""
        from .protocol.results import tool_result

        with self._lock:
            try:
                if self._final is None:
                    if self._modern:
                        self._final = self._run_modern(deadline)
                    else:
                        self._final = self._run_core(deadline)
            except _UnknownTask:  # the server does not know the task (any more)
                self._settle(ended=True)
                raise
            except InvalidParams as exc:  # tasks/result: the task's own error, or unknown
                self._settle(ended=True)
                if self._restarted():
                    raise self._unknown(exc) from exc
                raise
            except RpcError:  # the task's own error: it has ended
                self._settle(ended=True)
                raise
            finally:
                self._settle()  # a cancelled task has ended too
            final = self._final
        return tool_result(final, copy=True)  # the dict is kept for the next result() call

    def _deadline(self, timeout: float | None) -> Deadline:
        """The one deadline of a public call on this task (the client's default timeout)."""
        return Deadline.after(self._client._timeout(timeout))

    # --- the two loops -------------------------------------------------------------------

    def _left(self, deadline: Deadline) -> Deadline:
        """``deadline``, once it is sure time is left (else the task's own timeout error)."""
        if deadline.expired():
            raise RequestTimeout(
                f"{self._label} did not finish within the {deadline.describe()} "
                f"(last status: {self._last.status}); it may still be running",
                deadline.timeout,
            )
        return deadline

    def _sleep(self, deadline: Deadline) -> None:
        self._left(deadline)
        time.sleep(deadline.bound(self._last.poll_seconds()))

    def _run_core(self, deadline: Deadline) -> dict[str, Any]:
        # Poll until the task ends or wants input, then tasks/result: it blocks until the
        # end and carries the server's requests for the task (our handlers answer them).
        client = self._client
        while not self._last.terminal and self._last.status != "input_required":
            self._sleep(deadline)
            self._last = TaskStatus.from_wire(self._get(deadline))
        if self._last.status == "cancelled":
            raise McpError(f"{self._label} was cancelled")
        return client._request(self._left(deadline), "tasks/result", {"taskId": self.id})

    def _run_modern(self, deadline: Deadline) -> dict[str, Any]:
        conn = self._client._connection(deadline)
        raw = self._last.raw
        while True:
            status = raw.get("status")
            if status == "completed":
                result = raw.get("result")
                if not isinstance(result, dict):
                    raise RemoteProtocolError(f"task {self.id} completed without a result")
                return result
            if status == "failed":
                error = raw.get("error")
                raise rpc_error_from_wire(error if isinstance(error, dict) else {})
            if status == "cancelled":
                raise McpError(f"{self._label} was cancelled")
            pending = raw.get("inputRequests") if status == "input_required" else None
            fresh = {
                k: v
                for k, v in (pending.items() if isinstance(pending, dict) else ())
                if k not in self._answered and isinstance(v, dict)
            }
            if fresh:
                responses = {
                    key: conn.fulfil(str(req.get("method")), req.get("params") or {})
                    for key, req in fresh.items()
                }
                self._answered.update(fresh)
                self._client._request(
                    self._left(deadline),
                    "tasks/update",
                    {"taskId": self.id, "inputResponses": responses},
                )
            else:
                self._sleep(deadline)
            raw = self._get(deadline)
            self._last = TaskStatus.from_wire(raw)

    def _get(self, deadline: Deadline) -> dict[str, Any]:
        """One ``tasks/get`` on ``deadline``; an unknown id says why it may be unknown."""
        try:
            return self._client._request(self._left(deadline), "tasks/get", {"taskId": self.id})
        except InvalidParams as exc:
            raise self._unknown(exc) from exc

    def _restarted(self) -> bool:
        return getattr(self._client, "_connects", 0) != self._known_on

    def _unknown(self, exc: InvalidParams) -> InvalidParams:
        transport = self._client.transport
        return unknown_task(
            self._client,
            self.id,
            exc,
            restarted=self._restarted(),
            stdio=transport is not None and transport.pid is not None,
        )

    def __repr__(self) -> str:
        what = " ".join(p for p in (self.id or "(answered at once)", self.tool) if p)
        return f"<Task {what} {self._last.status}>"


class _UnknownTask(InvalidParams):
    """-32602 for a task id the server does not know, with the likely cause in the message."""


def unknown_task(
    client: Any, task_id: str, exc: InvalidParams, *, restarted: bool, stdio: bool
) -> InvalidParams:
    """The ``InvalidParams`` for an unknown ``task_id``, naming the likely cause:
    ``restarted``: this client's connection is not the one the task was known on (the
    server, or the gateway before it, may have restarted); ``stdio``: the server is a
    process this client started, whose tasks end with it."""
    if restarted:
        why = (
            "the connection was restarted since the task was started, so this is likely "
            "a new server process: "
            + (
                "a stdio server's tasks end with its process"
                if stdio
                else "the server (or the gateway in front of it) restarted and lost it"
            )
        )
    elif stdio:
        why = (
            "a stdio server's tasks end with the process that started it; run the server "
            "behind the gateway or over HTTP to resume tasks"
        )
    else:
        why = (
            "it never existed there, expired (its ttl), was created in the other protocol "
            "era, or the server restarted since (its tasks end with its process)"
        )
    return _UnknownTask(
        f"task {task_id} is unknown to MCP server {client.name!r}: {why} "
        f"(the server said: {exc.message})",
        exc.code,
        exc.data,
    )


# --- what Client's task methods do ------------------------------------------------------


def start_task(
    client: TaskRequester, name: str, arguments: Any, ttl: int | None, deadline: Deadline
) -> Task:
    """``Client.call_tool_as_task`` (on the caller's ``deadline``)."""
    params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
    info = client._session(deadline)
    if info.era == "stateless":
        require(info.capabilities, TASKS_EXTENSION, client.name)
        raw = client._request(deadline, "tools/call", params)
        return Task(client, raw, modern=True, tool=name)
    tasks = info.capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    if not (isinstance(tools, dict) and "call" in tools):
        raise LocalProtocolError(
            f"MCP server {client.name!r} did not declare tasks.requests.tools.call"
        )
    params["task"] = {"ttl": ttl} if ttl is not None else {}
    raw = client._request(deadline, "tools/call", params)
    created = raw.get("task")
    if not isinstance(created, dict):
        raise RemoteProtocolError(f"tools/call {name!r} as a task: no 'task' in the answer")
    return Task(client, created, modern=False, tool=name)


def list_tasks(client: Requester, deadline: Deadline) -> list[TaskStatus]:
    """``Client.list_tasks``: every page on the one ``deadline``."""
    info = client._session(deadline)
    tasks = info.capabilities.get("tasks")
    if info.era == "stateless" or not (isinstance(tasks, dict) and "list" in tasks):
        raise LocalProtocolError(f"MCP server {client.name!r} does not offer tasks/list")
    found: list[TaskStatus] = []
    for result in client._pages(deadline, "tasks/list"):
        found.extend(TaskStatus.from_wire(t) for t in result.get("tasks") or [])
    return found


def resume_task(client: TaskRequester, task_id: str, deadline: Deadline, *, stdio: bool) -> Task:
    """``Client.resume_task``: one ``tasks/get`` (on the caller's ``deadline``) confirms the
    task and gives the handle its status; the era is the session's. ``stdio``: the server is
    a process this client started, whose tasks died with the process that started them."""
    if not isinstance(task_id, str) or not task_id:
        raise ValueError("resume_task: task_id must be a non-empty string")
    info = client._session(deadline)
    modern = info.era == "stateless"
    if modern:
        require(
            info.capabilities,
            TASKS_EXTENSION,
            client.name,
            f": it has no task {task_id} to resume",
        )
    elif not isinstance(info.capabilities.get("tasks"), dict):
        raise LocalProtocolError(
            f"MCP server {client.name!r} does not declare the 'tasks' capability: "
            f"it has no task {task_id} to resume"
        )
    try:
        raw = client._request(deadline, "tasks/get", {"taskId": task_id})
    except InvalidParams as exc:  # -32602: an unknown or expired task id (both specs)
        raise unknown_task(client, task_id, exc, restarted=False, stdio=stdio) from exc
    status = TaskStatus.from_wire(raw)
    if status.task_id != task_id:
        raise RemoteProtocolError(f"tasks/get {task_id}: the server answered task {status.task_id}")
    return Task(client, raw, modern=modern, tool="", resumed=True)
