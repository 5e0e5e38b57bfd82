"""Tasks on the wire: the extension and related-task keys, and one look at a task.

Sans-IO, shared by the client's ``Task`` handle (``mcp_lite.tasks``) and its task receiver
(``mcp_lite._task_receiver``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import RemoteProtocolError

__all__ = ["RELATED_TASK", "TASKS_EXTENSION", "TERMINAL", "TaskStatus"]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
_MIN_POLL_S = 0.05
_MAX_POLL_S = 5.0
_DEFAULT_POLL_S = 0.5


@dataclass(frozen=True)
class TaskStatus:
    """One look at a task (``tasks/get``, ``tasks/list``, or the creation answer)."""

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @classmethod
    def from_wire(cls, data: Any) -> TaskStatus:
        if not isinstance(data, dict) or not isinstance(data.get("taskId"), str):
            raise RemoteProtocolError("a task without a taskId")
        status = data.get("status")
        if not isinstance(status, str):
            raise RemoteProtocolError(f"task {data['taskId']!r} has no status")
        ttl = data.get("ttlMs", data.get("ttl"))
        poll = data.get("pollIntervalMs", data.get("pollInterval"))
        return cls(
            data["taskId"],
            status,
            data.get("statusMessage"),
            data.get("createdAt"),
            data.get("lastUpdatedAt"),
            ttl if isinstance(ttl, int) else None,
            poll if isinstance(poll, int) else None,
            data,
        )

    def poll_seconds(self) -> float:
        if self.poll_interval_ms is None:
            return _DEFAULT_POLL_S
        return min(max(self.poll_interval_ms / 1000, _MIN_POLL_S), _MAX_POLL_S)
