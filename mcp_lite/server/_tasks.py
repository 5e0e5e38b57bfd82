"""Tasks in the small server: a tool call that runs in the background behind an unguessable task
id, in both wire shapes (2025-11-25 core, the 2026-07-28 extension) over one bounded store
(see docs/explanation/server.md, "Tasks").
"""

from __future__ import annotations

import contextlib
import datetime
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from ..errors import (
    InternalError,
    InvalidParams,
    McpError,
    MethodNotFound,
    MissingClientCapability,
    RpcError,
    rpc_error_from_wire,
)
from ..protocol.extensions import declared
from ._context import RELATED_TASK, Context, _Request, _Workers, log

__all__ = ["RELATED_TASK", "TASKS_EXTENSION", "TaskRecord", "TaskStore"]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
DEFAULT_TTL_MS = 300_000
MAX_TTL_MS = 3_600_000
POLL_MS = 200
MAX_TASKS = 1000


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


class TaskRecord:
    """One task: its state machine, its result, and (2026) its outstanding input requests."""

    def __init__(self, owner: Any, modern: bool, ttl_ms: int) -> None:
        self.id = secrets.token_hex(16)  # 128 bits; hex: never "-x", safe in a shell or argv
        self.owner = owner  # the connection that created it (handshake era: tasks/list scope)
        self.modern = modern
        self.ttl_ms = ttl_ms
        self.created = _now()
        self.updated = self.created
        self.expires = time.monotonic() + ttl_ms / 1000
        self.status = "working"
        self.message: str | None = None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.cancelled = threading.Event()
        self._cond = threading.Condition()
        self._pending: dict[str, dict[str, Any]] = {}  # 2026: key -> input request
        self._reader: tuple[Any, str] | None = None  # 2025-11-25: (conn, key) in tasks/result
        self._answers: dict[str, Any] = {}
        self._issued: set[str] = set()

    # --- state --------------------------------------------------------------------------

    def _set(self, status: str, message: str | None = None) -> None:
        # called with the condition held
        if self.status in TERMINAL:
            return
        self.status = status
        self.message = message
        self.updated = _now()
        self._cond.notify_all()

    def finish(self, result: dict[str, Any] | None, error: RpcError | None) -> None:
        with self._cond:
            if self.status in TERMINAL:
                return
            if error is not None:
                self.error = error.to_wire()
                self._set("failed", error.message)
            else:
                self.result = result
                self._set("completed")

    def cancel(self) -> None:
        """Move to ``cancelled`` (before answering the cancel); the handler sees
        ``ctx.cancelled``. A terminal task is an error (-32602), per 2025-11-25."""
        with self._cond:
            if self.status in TERMINAL:
                raise InvalidParams(f"task {self.id} is already {self.status}")
            self.cancelled.set()
            self._set("cancelled", "cancelled by the client")

    def wait(self, timeout: float) -> bool:
        """Block until terminal (bounded); True when terminal."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.status not in TERMINAL:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    # --- input (2026-07-28: inputRequests / tasks/update) --------------------------------

    def ask(self, key: str, request: dict[str, Any], timeout: float) -> Any:
        """Publish one input request and block until ``tasks/update`` answers it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._pending[key] = request
            self._issued.add(key)
            self._set("input_required", "waiting for client input")
            while key not in self._answers:
                left = deadline - time.monotonic()
                if self.cancelled.is_set() or left <= 0:
                    self._pending.pop(key, None)
                    raise McpError(f"task {self.id}: no answer to {request.get('method')}")
                self._cond.wait(min(left, 0.5))
            answer = self._answers.pop(key)
            if not self._pending:
                self._set("working")
            return answer

    def update(self, responses: Any) -> None:
        if not isinstance(responses, dict):
            raise InvalidParams("tasks/update: inputResponses must be an object")
        with self._cond:
            for key, value in responses.items():
                if key in self._pending:  # unknown or already answered keys are ignored
                    del self._pending[key]
                    self._answers[key] = value
            self._cond.notify_all()

    @contextlib.contextmanager
    def reading(self, conn: Any, key: str) -> Iterator[None]:
        """2025-11-25: a ``tasks/result`` on ``conn`` waits for this task; the task's requests
        to the client go on its stream, whichever session (or process) sent it."""
        with self._cond:
            self._reader = (conn, key)
            self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                if self._reader == (conn, key):
                    self._reader = None

    def reader(self, timeout: float) -> tuple[Any, str] | None:
        """The ``(conn, key)`` of the ``tasks/result`` waiting now, waiting up to ``timeout``
        for a client to send one."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._reader is None and not self.cancelled.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return self._reader

    def mark_input(self, waiting: bool) -> None:
        """Handshake era: the handler is waiting on a server → client request."""
        with self._cond:
            self._set("input_required" if waiting else "working")

    # --- wire ---------------------------------------------------------------------------

    def wire(self, detailed: bool) -> dict[str, Any]:
        with self._cond:
            out: dict[str, Any] = {
                "taskId": self.id,
                "status": self.status,
                "createdAt": self.created,
                "lastUpdatedAt": self.updated,
            }
            if self.message is not None:
                out["statusMessage"] = self.message
            if self.modern:
                out["ttlMs"], out["pollIntervalMs"] = self.ttl_ms, POLL_MS
            else:
                out["ttl"], out["pollInterval"] = self.ttl_ms, POLL_MS
            if detailed and self.modern:
                if self.status == "input_required" and self._pending:
                    out["inputRequests"] = dict(self._pending)
                elif self.status == "completed" and self.result is not None:
                    out["result"] = self.result
                elif self.status == "failed" and self.error is not None:
                    out["error"] = self.error
            return out


class TaskStore:
    """The tasks of one ``Server``: bounded, expired ones dropped."""

    def __init__(self, limit: int = MAX_TASKS) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        self._lock = threading.Lock()
        self._limit = limit
        self._workers: _Workers | None = None

    def run(self, fn: Callable[[], None]) -> None:
        """Run a task's work on the store's own bounded pool (it outlives connections)."""
        with self._lock:
            if self._workers is None:
                self._workers = _Workers("mcp-server-task", 16)
            workers = self._workers
        workers.submit(fn)

    def create(self, owner: Any, modern: bool, ttl: Any) -> TaskRecord:
        ttl_ms = DEFAULT_TTL_MS
        if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0:
            ttl_ms = min(ttl, MAX_TTL_MS)
        record = TaskRecord(owner, modern, ttl_ms)
        now = time.monotonic()
        with self._lock:
            for key in [k for k, t in self._tasks.items() if t.expires < now]:
                del self._tasks[key]
            if len(self._tasks) >= self._limit:
                raise InternalError(f"too many tasks ({self._limit}); try again later")
            self._tasks[record.id] = record
        return record

    def get(self, params: dict[str, Any], modern: bool) -> TaskRecord:
        task_id = params.get("taskId")
        with self._lock:
            record = self._tasks.get(task_id) if isinstance(task_id, str) else None
        # whoever holds the id, from any session (see the module's docstring)
        if record is None or record.modern != modern:
            raise InvalidParams(f"Unknown task: {task_id!r}")
        if record.expires < time.monotonic():
            raise InvalidParams(f"Task {task_id!r} has expired")
        return record

    def owned_by(self, owner: Any) -> list[TaskRecord]:
        with self._lock:
            return [t for t in self._tasks.values() if t.owner is owner and not t.modern]

    def forget_owner(self, owner: Any) -> None:
        """A handshake-era session ended: its tasks run on (another process may collect
        them); they only leave its ``tasks/list``."""
        with self._lock:
            for t in self._tasks.values():
                if t.owner is owner:
                    t.owner = None


# --- serving the task methods for a connection -------------------------------------------


class _Conn(Protocol):
    """What serving tasks needs of a ``ServerConnection`` (besides being a Context peer)."""

    _closing: bool


class _Reg(Protocol):
    tasks: TaskStore

    def task_support(self, name: Any) -> str | None: ...

    def call_tool(self, params: dict[str, Any], ctx: Any) -> dict[str, Any]: ...


def call_tool(conn: Any, reg: _Reg, req: _Request, ctx: Context) -> dict[str, Any]:
    """``tools/call``, as a task when the tool's ``taskSupport`` and the era say so."""
    p = req.params
    support = reg.task_support(p.get("name"))
    if req.modern:
        if support == "required":  # the server decides: "optional" tools run inline
            if TASKS_EXTENSION not in declared(req.client_caps):
                raise MissingClientCapability(
                    f"tool {p.get('name')!r} runs as a task: declare {TASKS_EXTENSION!r}",
                    data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
                )
            return start(conn, reg, req)
    elif isinstance(p.get("task"), dict) and support is not None:
        return start(conn, reg, req)
    elif support == "required":
        raise MethodNotFound(f"tool {p.get('name')!r} must be called as a task")
    return reg.call_tool({k: v for k, v in p.items() if k != "task"}, ctx)


def start(conn: Any, reg: _Reg, req: _Request) -> dict[str, Any]:
    """Create the task, run the tool in the background, answer the creation result."""
    meta = req.params.get("task")
    ttl = meta.get("ttl") if isinstance(meta, dict) else None
    record = reg.tasks.create(None if req.modern else conn, req.modern, ttl)
    params = {k: v for k, v in req.params.items() if k not in ("task", "_meta")}
    run = _Request(req.id, req.method, params)
    run.modern, run.version, run.client_caps = req.modern, req.version, req.client_caps
    run.log_level, run.task, run.cancelled = req.log_level, record, record.cancelled
    ctx = Context(conn, run)

    def work() -> None:
        try:
            record.finish(reg.call_tool(params, ctx), None)
        except RpcError as exc:
            record.finish(None, exc)
        except BaseException as exc:  # a task must always end
            log.exception("task %s failed", record.id)
            record.finish(None, InternalError(f"Internal error: {exc}"))

    reg.tasks.run(work)
    if req.modern:
        return {**record.wire(False), "resultType": "task"}
    return {"task": record.wire(False)}


def serve_legacy(conn: _Conn, reg: _Reg, req: _Request) -> dict[str, Any]:
    """2025-11-25 ``tasks/get|result|cancel`` (any task by its id) and ``tasks/list`` (the
    tasks this session created)."""
    p, m = req.params, req.method
    if m == "tasks/list":
        return {"tasks": [t.wire(False) for t in reg.tasks.owned_by(conn)]}
    record = reg.tasks.get(p, modern=False)
    if m == "tasks/get":
        return record.wire(False)
    if m == "tasks/cancel":
        record.cancel()
        return record.wire(False)
    # tasks/result: block until the end, then what the call itself would have answered
    with record.reading(conn, req.key):
        while not record.wait(0.5):
            if req.cancelled.is_set() or conn._closing:
                raise InternalError("tasks/result abandoned")
    related = {RELATED_TASK: {"taskId": record.id}}
    if record.status == "completed" and record.result is not None:
        meta = record.result.get("_meta")
        return {**record.result, "_meta": {**(meta if isinstance(meta, dict) else {}), **related}}
    if record.status == "failed" and record.error is not None:
        raise rpc_error_from_wire({**record.error, "data": record.error.get("data")})
    raise InternalError(f"task {record.id} was cancelled", data=related)


def serve_modern(reg: _Reg, req: _Request) -> dict[str, Any]:
    """The extension's ``tasks/get|update|cancel`` (any holder of the task id)."""
    record = reg.tasks.get(req.params, modern=True)
    if req.method == "tasks/get":
        return record.wire(True)
    if req.method == "tasks/update":
        record.update(req.params.get("inputResponses"))
        return {}
    try:
        record.cancel()
    except InvalidParams:
        pass  # cancelling a finished task is acknowledged all the same (2026 extension)
    return {}
