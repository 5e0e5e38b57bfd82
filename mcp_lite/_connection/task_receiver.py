"""``TaskReceiver``: the client as a task receiver (2025-11-25). A server may ask for
``sampling/createMessage`` or ``elicitation/create`` as a task; the connection hands such a
request to ``TaskReceiver``, which runs it in the background with the client's handlers and
answers the server's ``tasks/get|result|list|cancel`` about it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..errors import InternalError, InvalidParams, RpcError
from ..protocol.tasks import RELATED_TASK, TERMINAL

__all__ = ["TaskReceiver"]


def _now() -> str:
    import datetime  # here: a client that receives no task never needs it

    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


class _Received:
    def __init__(self, ttl_ms: int) -> None:
        import secrets  # here: it loads hashlib and random, which a one-shot call never needs

        self.id = secrets.token_urlsafe(16)
        self.created = self.updated = _now()
        self.ttl_ms = ttl_ms
        self.expires = time.monotonic() + ttl_ms / 1000
        self.status = "working"
        self.message: str | None = None
        self.result: dict[str, Any] | None = None
        self.error: RpcError | None = None
        self.done = threading.Event()

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttl": self.ttl_ms,
            "pollInterval": 200,
        }
        if self.message:
            out["statusMessage"] = self.message
        return out


class TaskReceiver:
    """Runs the server's task-augmented ``sampling/createMessage`` and ``elicitation/create``
    in the background and answers ``tasks/get|result|list|cancel`` about them (2025-11-25).
    Bounded: at most ``limit`` tasks are kept; expired ones are dropped."""

    CAPABILITY: dict[str, Any] = {
        "list": {},
        "cancel": {},
        "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}},
    }

    def __init__(self, limit: int = 64) -> None:
        self._tasks: dict[str, _Received] = {}
        self._lock = threading.Lock()
        self._limit = limit

    def create(self, method: str, params: dict[str, Any], fulfil: Any) -> dict[str, Any]:
        meta = params.get("task")
        ttl = meta.get("ttl") if isinstance(meta, dict) else None
        task = _Received(ttl if isinstance(ttl, int) and 0 < ttl <= 86_400_000 else 300_000)
        now = time.monotonic()
        with self._lock:
            for key in [k for k, t in self._tasks.items() if t.expires < now]:
                del self._tasks[key]
            if len(self._tasks) >= self._limit:
                raise InternalError(f"too many client tasks ({self._limit})")
            self._tasks[task.id] = task
        inner = {k: v for k, v in params.items() if k != "task"}

        def work() -> None:
            try:
                result = fulfil(method, inner)
                with self._lock:
                    if task.status == "working":
                        task.result, task.status = result, "completed"
            except RpcError as exc:
                with self._lock:
                    task.error, task.status, task.message = exc, "failed", exc.message
            except Exception as exc:  # a handler bug: the task fails, the server hears why
                with self._lock:
                    task.error = InternalError(f"client handler failed: {exc}")
                    task.status, task.message = "failed", str(exc)
            finally:
                task.updated = _now()
                task.done.set()

        threading.Thread(target=work, name=f"mcp-lite-task[{task.id[:8]}]", daemon=True).start()
        return {"task": task.wire()}

    def handle(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tasks/list":
            with self._lock:
                return {"tasks": [t.wire() for t in self._tasks.values()]}
        task_id = params.get("taskId")
        with self._lock:
            task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise InvalidParams(f"Unknown task: {task_id!r}")
        if method == "tasks/get":
            return task.wire()
        if method == "tasks/cancel":
            with self._lock:
                if task.status in TERMINAL:
                    raise InvalidParams(f"task {task.id} is already {task.status}")
                task.status, task.message, task.updated = "cancelled", "cancelled", _now()
            task.done.set()
            return task.wire()
        if method == "tasks/result":
            task.done.wait(max(task.expires - time.monotonic(), 0.0))
            related = {RELATED_TASK: {"taskId": task.id}}
            if task.status == "completed" and task.result is not None:
                return {**task.result, "_meta": {**task.result.get("_meta", {}), **related}}
            if task.error is not None:
                raise task.error
            raise InternalError(f"task {task.id} is {task.status}")
        raise InvalidParams(f"unknown task method {method}")
