"""Whose tasks: the gateway's record of which worker started each task it forwarded.

Every downstream session of a gateway server shares one upstream connection, so the server
sees one client and would show every worker's tasks to every other. The gateway keeps, per
server, the owner of each task id it saw created (or first claimed, see below) and answers a
worker only about its own: ``tasks/list`` leaves the others out, and ``tasks/get``,
``tasks/result``, ``tasks/cancel`` and ``tasks/update`` on another owner's id get the answer
an unknown id gets (-32602), as if it did not exist.

The owner is the peer's user id (``SO_PEERCRED`` on the Unix socket): a task id is a durable
handle that another process of the same user may resume (a cron run collects what the last
one started; a worker restarted by its supervisor resumes its tasks), and processes of one
user can read each other's memory anyway, so the boundary worth keeping is between users
(what ``--group`` lets in). A session id would lose a worker's tasks at its next reconnect.
An id the gateway never saw created (it restarted, or forgot the oldest past ``MAX_OWNED``)
is passed on, and the first user the server answers about it becomes its owner; ids cannot
be guessed, and another user's ids are never listed.
"""

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
