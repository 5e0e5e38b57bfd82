"""Whose tasks: the gateway's record of which worker's user started each task it forwarded, so a
worker sees and touches only its own tasks (at most ``MAX_OWNED`` ids per server). Why the owner is
a user and not a session is in docs/explanation/inside-the-hub.md."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

__all__ = ["MAX_OWNED", "TaskOwners", "current_peer", "enter_peer"]

MAX_OWNED = 65536  # task ids remembered per gateway (the oldest forgotten beyond)
_BY_ID = frozenset({"tasks/get", "tasks/result", "tasks/cancel", "tasks/update"})


class TaskOwners:
    """Owners of task ids, per server; thread-safe. ``owner`` is any hashable (a uid, or
    None where the platform has no peer credentials: one owner for all)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owners: OrderedDict[tuple[str, str], Any] = OrderedDict()

    def foreign(self, server: str, owner: Any, method: str, params: Any) -> str | None:
        """The task id of this request when it belongs to another owner (to be refused as
        unknown); None when the request may go on."""
        if method not in _BY_ID or not isinstance(params, dict):
            return None
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            return None
        with self._lock:
            known = self._owners.get((server, task_id), owner)
        return None if known == owner else task_id

    def answered(
        self, server: str, owner: Any, method: str, params: Any, result: dict[str, Any]
    ) -> dict[str, Any]:
        """Note the tasks a forwarded answer shows (created, or first claimed); returns the
        result to pass on (a ``tasks/list`` keeps the owner's tasks only)."""
        if method == "tools/call":
            created = result.get("task")  # 2025-11-25: {task: Task}
            if not isinstance(created, dict):  # 2026-07-28: resultType "task"
                created = result if result.get("resultType") == "task" else None
            task_id = created.get("taskId") if created is not None else None
            if isinstance(task_id, str):
                self._claim(server, task_id, owner, replace=True)
        elif method == "tasks/list":
            tasks = result.get("tasks")
            if isinstance(tasks, list):
                with self._lock:
                    mine = [
                        t
                        for t in tasks
                        if isinstance(t, dict)
                        and self._owners.get((server, str(t.get("taskId"))), _NOBODY) == owner
                    ]
                result = {**result, "tasks": mine}
        elif method in _BY_ID and isinstance(params, dict):
            task_id = params.get("taskId")
            if isinstance(task_id, str):
                self._claim(server, task_id, owner, replace=False)
        return result

    def _claim(self, server: str, task_id: str, owner: Any, *, replace: bool) -> None:
        key = (server, task_id)
        with self._lock:
            if replace or key not in self._owners:
                self._owners[key] = owner
                while len(self._owners) > MAX_OWNED:
                    self._owners.popitem(last=False)
            self._owners.move_to_end(key)


_NOBODY = object()  # the owner of a task no one claimed: nobody's


_peer = threading.local()


def enter_peer(uid: int | None) -> None:
    """The peer of the HTTP connection this thread serves (set once per connection)."""
    _peer.uid = uid


def current_peer() -> int | None:
    """The user id of the peer whose request this thread reads (None: unknown)."""
    return getattr(_peer, "uid", None)
