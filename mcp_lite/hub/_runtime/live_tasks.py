"""Tasks that keep a recycling server running: ``LiveTasks`` is one server process's record of the
tasks started or seen through the Hub or the gateway, so a due recycle waits while one is live,
within ``HOLD_MAX`` (see docs/explanation/inside-the-hub.md)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

__all__ = ["HOLD_MAX", "LiveTasks", "TASK_METHODS", "unknown_task_note"]

HOLD_MAX = 3600.0  # seconds a live task holds its server after a client last asked about it
MAX_TASKS = 4096  # live tasks per process (the oldest is dropped beyond)
MAX_LOST = 1024  # ids of tasks that died with an earlier process, remembered
TASK_METHODS = frozenset(
    {"tools/call", "tasks/get", "tasks/result", "tasks/cancel", "tasks/update"}
)
_TERMINAL = frozenset({"completed", "failed", "cancelled"})


class _Live:
    __slots__ = ("ttl_end", "seen")

    def __init__(self, ttl_end: float | None, seen: float) -> None:
        self.ttl_end = ttl_end
        self.seen = seen

    def until(self) -> float:
        end = self.seen + HOLD_MAX
        return end if self.ttl_end is None else min(end, self.ttl_end)


def _ttl_end(raw: dict[str, Any], now: float) -> float | None:
    ttl = raw.get("ttlMs", raw.get("ttl"))
    if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0:
        return now + ttl / 1000
    return None


class LiveTasks:
    """The live tasks of one server process; thread-safe (its own lock, never held long)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: OrderedDict[str, _Live] = OrderedDict()
        self._lost: OrderedDict[str, None] = OrderedDict()

    # --- what is seen ----------------------------------------------------------------------

    def started(self, task_id: str, raw: dict[str, Any] | None = None) -> None:
        """A task is live (created, or a client asked about it): refresh its hold."""
        if not task_id:
            return
        now = time.monotonic()
        with self._lock:
            live = self._tasks.get(task_id)
            if live is None:
                self._tasks[task_id] = _Live(_ttl_end(raw or {}, now), now)
                while len(self._tasks) > MAX_TASKS:
                    self._tasks.popitem(last=False)
            else:
                live.seen = now
                self._tasks.move_to_end(task_id)

    def ended(self, task_id: str) -> bool:
        """The task ended and its result was collected (or it is unknown): no more hold.
        True when it was held."""
        with self._lock:
            return self._tasks.pop(task_id, None) is not None

    def answer(self, method: str, params: Any, result: Any) -> bool:
        """A forwarded request's answer (``result``: the result dict, or the ``RpcError``);
        returns True when a held task stopped holding (the recycle timer may look again)."""
        if method not in TASK_METHODS or not isinstance(params, dict):
            return False
        if not isinstance(result, dict):  # an error: -32602 is an unknown task id
            task_id = params.get("taskId")
            code = getattr(result, "code", None)
            if method != "tools/call" and code == -32602 and isinstance(task_id, str):
                return self.ended(task_id)
            return False
        if method == "tools/call":
            created = result.get("task")  # 2025-11-25: {task: Task}
            if not isinstance(created, dict):  # 2026-07-28: resultType "task"
                created = result if result.get("resultType") == "task" else None
            task_id = created.get("taskId") if created is not None else None
            if isinstance(task_id, str):
                self.started(task_id, created)
            return False
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            return False
        status = result.get("status")
        if method == "tasks/result" or (
            status in _TERMINAL
            and (status == "cancelled" or "result" in result or "error" in result)
        ):
            return self.ended(task_id)
        self.started(task_id, result)  # still running, or ended with its result to fetch
        return False

    # --- what the recycle timer asks -------------------------------------------------------

    def hold(self) -> tuple[int, float | None]:
        """``(live tasks, until when they hold the server)`` (monotonic; None: none live).
        A task past its bound holds nothing (a client asking about it again revives it)."""
        now = time.monotonic()
        with self._lock:
            ends = [end for end in (live.until() for live in self._tasks.values()) if end > now]
        return len(ends), max(ends) if ends else None

    def process_ended(self) -> int:
        """The process these tasks lived in is gone: they are lost. Returns how many."""
        with self._lock:
            lost = list(self._tasks)
            self._tasks.clear()
            for task_id in lost:
                self._lost[task_id] = None
                self._lost.move_to_end(task_id)
            while len(self._lost) > MAX_LOST:
                self._lost.popitem(last=False)
            return len(lost)

    def was_lost(self, task_id: str) -> bool:
        """True when ``task_id`` was live in an earlier process of this server."""
        with self._lock:
            return task_id in self._lost

    def after_fork(self) -> None:
        self._lock = threading.Lock()
        self._tasks = OrderedDict()  # the parent's: its server, its clients


def unknown_task_note(
    server: str, task_id: str, *, lost: bool, stdio: bool, started_wall: float | None, recycles: int
) -> str:
    """Why ``server`` (run here, e.g. behind the gateway) may not know ``task_id``: it was
    live on an earlier process (``lost``), or a stdio server's tasks end with its process
    and this one started at ``started_wall`` (after a restart of the server or of the
    gateway, an older task is gone)."""
    if lost:
        return (
            f"task {task_id} was live on an earlier process of MCP server {server!r}, which "
            "ended (it restarted): a stdio server's tasks end with its process"
        )
    if not stdio:
        return f"MCP server {server!r} may have restarted since the task was started"
    since = (
        ""
        if started_wall is None
        else f" started at {time.strftime('%H:%M:%S', time.localtime(started_wall))}"
    )
    again = f" ({recycles} recycle(s) so far)" if recycles else ""
    return (
        f"MCP server {server!r} is a stdio process{since}{again}; a task from before a "
        "restart of the server or of the gateway ended with the earlier process (a stdio "
        "server's tasks end with its process)"
    )
