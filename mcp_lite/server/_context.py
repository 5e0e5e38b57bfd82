"""Per-request pieces of the small server: the ``Context`` a handler gets, the request
record, the worker pool, and the internal signal that turns an input request into an
``input_required`` result (2026-07-28 re-execution, see ``server``)."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ..errors import (
    InvalidParams,
    LocalProtocolError,
    MissingClientCapability,
)
from ..protocol import versions as pv

__all__ = ["LOG_LEVELS", "Context", "RoutedSend", "Send"]

log = logging.getLogger("mcp_lite.server")
F = TypeVar("F", bound=Callable[..., Any])
# Delivers one outgoing JSON-RPC message: a dict, or a list answering a batch.
Send = Callable[[Any], None]
# The same, also told the key of the request a message belongs to (None: unrelated).
RoutedSend = Callable[[Any, "str | None"], None]

RELATED_TASK = "io.modelcontextprotocol/related-task"
_TASK_ROUTE_WAIT_S = 10.0
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _id_key(request_id: Any) -> str:
    """A request id as a key: its JSON text (an int's is its decimal text)."""
    if type(request_id) is int:  # (not a bool: true is not 1)
        return str(request_id)
    return json.dumps(request_id)


class _InputRequired(BaseException):
    """Aborts a stateless-era handler that needs client input (a ``BaseException`` so a
    tool's ``except Exception`` cannot swallow it)."""

    def __init__(self, key: str, request: dict[str, Any]) -> None:
        super().__init__(key)
        self.key = key
        self.request = request


class _Request:
    """One incoming request being served."""

    def __init__(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        self.id = request_id
        self.key = _id_key(request_id)
        self.method = method
        self.params = params
        meta = params.get("_meta")
        self.meta: dict[str, Any] = meta if isinstance(meta, dict) else {}
        self.cancelled = threading.Event()
        self.modern = False
        self.version = ""
        self.client_caps: dict[str, Any] = {}
        self.log_level: str | None = None  # stateless era: from _meta
        self.inputs: dict[str, Any] = {}  # stateless era: answers so far (MRTR)
        self.input_count = 0
        self.finished = False
        self.task: Any = None  # the TaskRecord when this request runs as a task


class _Workers:
    """A bounded pool of named daemon threads (a stuck handler never blocks interpreter exit,
    unlike ``ThreadPoolExecutor``)."""

    def __init__(self, name: str, max_workers: int) -> None:
        self._name = name
        self._max = max_workers
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0

    def submit(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self._max:
                t = threading.Thread(
                    target=self._loop, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(t)
                t.start()
            self._queue.put(fn)

    def _loop(self) -> None:
        while True:
            fn = self._queue.get()
            if fn is None:
                return
            try:
                fn()
            except BaseException:  # pragma: no cover - every task catches its own errors
                log.exception("uncaught error in server worker")
            with self._lock:
                self._idle += 1

    def shutdown(self) -> None:
        with self._lock:
            threads = list(self._threads)
        for _ in threads:
            self._queue.put(None)


class _Peer(Protocol):
    """What a ``Context`` needs of its connection (``ServerConnection`` provides it); a
    protocol so this module does not import the connection that imports it."""

    _log_level: str | None
    client_capabilities: dict[str, Any]

    def _notify(self, method: str, params: dict[str, Any], related: str | None = None) -> None: ...

    def _request_client(
        self, method: str, params: dict[str, Any], req: _Request, related: str | None = None
    ) -> dict[str, Any]: ...


class Context:
    """What a handler may ask of the client while serving one request.

    Declare a parameter annotated ``Context`` in a tool, resource or prompt function to get
    one. In the stateless era (2026-07-28) ``elicit``, ``elicit_url``, ``sample`` and
    ``list_roots`` are multi round-trip requests: the handler is re-run from the start
    once the client has the answer, so code before these calls must be repeatable.

    Attributes:
        cancelled: set when the client cancels the request (``notifications/cancelled``).
    """

    def __init__(self, conn: _Peer, req: _Request) -> None:
        self._conn = conn
        self._req = req
        self.cancelled: threading.Event = req.cancelled

    @property
    def request_id(self) -> Any:
        """The JSON-RPC id of the request being served."""
        return self._req.id

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``params._meta`` (W3C ``traceparent``/``tracestate`` when the
        client traces, ``progressToken``...); empty when there is none."""
        return self._req.meta

    @property
    def protocol_version(self) -> str:
        """The protocol version of this request (negotiated, or from ``_meta``)."""
        return self._req.version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The client's capabilities (from ``initialize``, or this request's ``_meta``)."""
        return self._req.client_caps

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress``; a no-op unless the request has a progress token."""
        token = self._req.meta.get("progressToken")
        if token is None or self._req.finished or self._req.cancelled.is_set():
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._conn._notify("notifications/progress", params, self._req.key)

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if ``level`` passes the client's filter.

        Handshake era: the level of ``logging/setLevel`` (everything before one is set).
        Stateless era: only when this request's ``_meta`` carries a log level.

        Raises:
            ValueError: ``level`` is not an RFC 5424 level name.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; expected one of {LOG_LEVELS}")
        threshold = self._req.log_level if self._req.modern else self._conn._log_level
        if self._req.modern and threshold is None:
            return
        if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._conn._notify("notifications/message", params, self._req.key)

    def elicit(self, message: str, requested_schema: dict[str, Any]) -> dict[str, Any]:
        """Ask the user for structured input (form mode); returns the ``ElicitResult``."""
        params: dict[str, Any] = {"message": message, "requestedSchema": requested_schema}
        if self._req.modern or self._req.version >= pv.V2025_11_25:
            params = {"mode": "form", **params}
        return self._ask("elicitation/create", params, {"elicitation": {"form": {}}})

    def elicit_url(self, message: str, url: str, elicitation_id: str) -> dict[str, Any]:
        """Ask the user to visit ``url`` (URL mode, 2025-11-25+); returns the ``ElicitResult``.

        ``elicitation_id`` is sent in the handshake era only (2026-07-28 dropped it).
        """
        params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
        if not self._req.modern:
            params["elicitationId"] = elicitation_id
        return self._ask("elicitation/create", params, {"elicitation": {"url": {}}})

    def sample(
        self, messages: str | list[dict[str, Any]], max_tokens: int, **extra: Any
    ) -> dict[str, Any]:
        """Ask the client's LLM (``sampling/createMessage``); returns the ``CreateMessageResult``.

        ``messages`` may be a plain string (one user text message). ``extra`` holds the other
        request fields as they appear on the wire (``systemPrompt=``, ``temperature=`` …).
        """
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params = {"messages": messages, "maxTokens": max_tokens, **extra}
        return self._ask("sampling/createMessage", params, {"sampling": {}})

    def list_roots(self) -> list[dict[str, Any]]:
        """The client's roots (``roots/list``), as a list of ``{"uri", "name"?}``."""
        roots = self._ask("roots/list", {}, {"roots": {}}).get("roots")
        if not isinstance(roots, list):
            raise InvalidParams("the client's roots/list result has no 'roots' list")
        return roots

    def _ask(self, method: str, params: dict[str, Any], need: dict[str, Any]) -> dict[str, Any]:
        ((cap, _),) = need.items()
        task = self._req.task
        if task is not None:
            return self._ask_in_task(task, method, params, need)
        has = _declares(self._req.client_caps, need)
        if not self._req.modern:
            if not has:
                raise LocalProtocolError(f"the client did not declare the {cap!r} capability")
            return self._conn._request_client(method, params, self._req)
        key = f"input_{self._req.input_count}"
        self._req.input_count += 1
        if key in self._req.inputs:
            answer = self._req.inputs[key]
            if not isinstance(answer, dict):
                raise InvalidParams(f"inputResponses[{key!r}] must be an object")
            return answer
        if not has:
            raise MissingClientCapability(
                f"this request needs the client capability {cap!r}",
                data={"requiredCapabilities": need},
            )
        raise _InputRequired(key, {"method": method, "params": params})

    def _ask_in_task(
        self, task: Any, method: str, params: dict[str, Any], need: dict[str, Any]
    ) -> dict[str, Any]:
        """Input while running as a task: 2026-07-28 publishes it as the task's
        ``inputRequests`` (answered by ``tasks/update``); 2025-11-25 sends a real request
        tagged with the task (the task shows ``input_required`` meanwhile).

        The client that answers may not be the one that started the task (a task id is a
        durable handle: another process may resume it), so its capabilities are checked,
        not the starter's: 2025-11-25, the session waiting in ``tasks/result``; 2026-07-28,
        whoever polls answers what it can (no check here)."""
        ((cap, _),) = need.items()
        left = max(task.expires - time.monotonic(), 1.0)
        if self._req.modern:
            key = f"input_{self._req.input_count}"
            self._req.input_count += 1
            answer = task.ask(key, {"method": method, "params": params}, left)
            if not isinstance(answer, dict):
                raise InvalidParams(f"inputResponses[{key!r}] must be an object")
            return answer
        tagged = {**params, "_meta": {RELATED_TASK: {"taskId": task.id}}}
        task.mark_input(True)
        try:
            # the client answers input_required with tasks/result: the request goes on that
            # stream, on whichever session sent it (a resumed task's is not its creator's);
            # without one in time it goes where this session's unrelated messages go
            found = task.reader(_TASK_ROUTE_WAIT_S)
            conn, route = found if found is not None else (self._conn, None)
            caps = conn.client_capabilities if found is not None else self._req.client_caps
            if not _declares(caps, need):
                raise MissingClientCapability(
                    f"this request needs the client capability {cap!r}",
                    data={"requiredCapabilities": need},
                )
            return conn._request_client(method, tagged, self._req, route)
        finally:
            task.mark_input(False)


def _declares(caps: dict[str, Any], need: dict[str, Any]) -> bool:
    """Did the client declare the capability ``need`` (``{"elicitation": {"form": {}}}``)?
    (An empty ``elicitation`` object means form mode.)"""
    ((cap, sub),) = need.items()
    return isinstance(caps.get(cap), dict) and all(
        k in caps[cap] or (cap == "elicitation" and not caps[cap] and k == "form") for k in sub
    )
