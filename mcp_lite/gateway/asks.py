"""A server's requests to its client (elicitation, sampling, roots), asked of the worker whose
forwarded call made them. ``Calls`` is one server's forwarded calls in flight; ``Answers`` the
workers' answers the gateway waits for, by the request id it made. How the worker is found in each
era is in docs/explanation/inside-the-hub.md."""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import _timer
from ..errors import (
    MethodNotFound,
    RemoteProtocolError,
    RequestCancelled,
    RequestTimeout,
    RpcError,
)
from ..protocol import session as proto
from ..protocol.tasks import RELATED_TASK

__all__ = [
    "Answers",
    "Calls",
    "RoundHolds",
    "Unroutable",
    "declares",
    "needed_capability",
    "relay_rounds",
]

_ids = itertools.count(1)
_LOOK_S = 0.1
MAX_ROUNDS = 16  # input rounds of one relayed request (as a Client allows its own)


class Unroutable(MethodNotFound):
    """The gateway cannot ask a worker this server request (its message says why)."""


def needed_capability(method: str, params: dict[str, Any]) -> tuple[str, str | None]:
    """The client capability a server request needs: ``(name, sub)`` (``sub``: an
    elicitation mode, or None)."""
    if method == "elicitation/create":
        return "elicitation", "url" if params.get("mode") == "url" else "form"
    if method == "sampling/createMessage":
        return "sampling", None
    return "roots", None


def declares(caps: Any, method: str, params: dict[str, Any]) -> bool:
    """Did a worker's ``initialize`` capabilities declare what ``method`` needs? (An empty
    ``elicitation`` object means form mode.)"""
    cap, sub = needed_capability(method, params)
    have = caps.get(cap) if isinstance(caps, dict) else None
    if not isinstance(have, dict):
        return False
    return sub is None or sub in have or (sub == "form" and not have)


class Calls:
    """One server's forwarded calls in flight: ``(session, key, cancel)`` by a counter, and
    the task each waits for (a 2025-11-25 ``tasks/result``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[int, tuple[Any, str, threading.Event]] = {}
        self._tasks: dict[int, str] = {}
        self._next = itertools.count(1)

    def enter(
        self, session: Any, key: str, cancel: threading.Event, method: str, params: Any
    ) -> int:
        n = next(self._next)
        task_id = params.get("taskId") if isinstance(params, dict) else None
        with self._lock:
            self._calls[n] = (session, key, cancel)
            if method == "tasks/result" and isinstance(task_id, str):
                self._tasks[n] = task_id
        return n

    def leave(self, n: int) -> None:
        with self._lock:
            self._calls.pop(n, None)
            self._tasks.pop(n, None)

    def caller(
        self, server: str, method: str, params: dict[str, Any]
    ) -> tuple[Any, str, threading.Event]:
        """The call a server request is for: the ``tasks/result`` waiting for the task it
        names (a 2025-11-25 task's input), else the one downstream session whose calls are
        in flight, with its latest call.

        Raises:
            Unroutable: none, or more than one session (the gateway cannot tell whose).
        """
        meta = params.get("_meta")
        related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
        task_id = related.get("taskId") if isinstance(related, dict) else None
        with self._lock:
            waiting = [n for n, t in self._tasks.items() if t == task_id and task_id]
            if waiting:
                return self._calls[waiting[-1]]
            calls = list(self._calls.values())
        sessions = {id(session) for session, _, _ in calls}
        if len(sessions) == 1:
            return calls[-1]
        why = (
            "outside any forwarded call"
            if not sessions
            else f"while calls of {len(sessions)} workers are in flight (it names no call)"
        )
        raise Unroutable(
            f"the mcp-lite gateway cannot forward {method} of MCP server {server!r} to a "
            f"worker: it came {why}"
        )


class Answers:
    """The workers' answers the gateway waits for, by the id of the request it sent. An
    answer counts only from the session the request went to (and ids are not guessable):
    another worker cannot answer for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, list[Any]] = {}  # id -> [event, response, session]

    def new(self, session: Any) -> str:
        rid = f"mcp-lite-gateway-ask-{next(_ids)}-{secrets.token_hex(8)}"
        with self._lock:
            self._waiting[rid] = [threading.Event(), None, session]
        return rid

    def answer(self, message: dict[str, Any], session: Any) -> bool:
        """A worker's response, from ``session``; False when no one waits for it there."""
        rid = message.get("id")
        with self._lock:
            entry = self._waiting.get(rid) if isinstance(rid, str) else None
        if entry is None or entry[2] is not session:
            return False
        entry[1] = message
        entry[0].set()
        return True

    def wait(
        self, rid: str, method: str, cancel: threading.Event, timeout: float
    ) -> dict[str, Any]:
        """The worker's result for request ``rid``; gives up when the forwarded call ends
        (``cancel``) or after ``timeout`` seconds.

        Raises:
            RpcError: the worker's error answer, as is.
            RequestCancelled, RequestTimeout: no answer came.
        """
        with self._lock:
            event = self._waiting[rid][0]
        end = time.monotonic() + timeout
        try:
            while not event.wait(min(max(end - time.monotonic(), 0.0), _LOOK_S)):
                if cancel.is_set():  # (looked at every _LOOK_S: a call's end is no hurry)
                    raise RequestCancelled(f"{method}: the worker's call ended first")
                if time.monotonic() >= end:
                    raise RequestTimeout(f"{method}: no answer from the worker in {timeout} s")
            with self._lock:
                response = self._waiting[rid][1]
        finally:
            with self._lock:
                self._waiting.pop(rid, None)
        error = response.get("error")
        if isinstance(error, dict):
            raise RpcError(str(error.get("message")), error.get("code"), error.get("data"))
        result = response.get("result")
        return result if isinstance(result, dict) else {}


def relay_rounds(
    method: str,
    params: dict[str, Any],
    send: Callable[[dict[str, Any]], dict[str, Any]],
    ask: Callable[[str, dict[str, Any]], dict[str, Any]],
) -> dict[str, Any]:
    """``send`` a request to a 2026-07-28 server for a handshake-era worker: each
    ``input_required`` answer's requests are asked of the worker (``ask``) and the request
    sent again with the answers, until its final result."""
    result = send(params)
    rounds = 0
    while proto.is_input_required(result):
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise RemoteProtocolError(
                f"{method}: the server asked for input more than {MAX_ROUNDS} times"
            )
        responses = {
            key: ask(request["method"], request.get("params") or {})
            for key, request in proto.input_requests(result).items()
        }
        params = proto.retry_params(params, result, responses)
        result = send(params)
    return result


class RoundHolds:
    """Servers held for 2026-07-28 workers between two input rounds of a call.

    The worker answers an ``input_required`` result with a new request that echoes its
    ``requestState``; a server recycled meanwhile would have forgotten the state (its key is
    the process's), so the gateway holds it, by that state, until the worker's next round
    arrives or ``HOLD_S`` passed (a worker that gave up holds it no longer).
    """

    HOLD_S = 600.0
    LIMIT = 1024  # holds at once (the oldest is released beyond)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holds: dict[str, tuple[Any, _timer.Handle]] = {}

    def hold(self, state: str, lease: Any) -> None:
        # An entry on the process's one timer (a lease's release is short: it never blocks).
        timer = _timer.schedule(time.monotonic() + self.HOLD_S, lambda: self.release(state))
        with self._lock:
            old = self._holds.pop(state, None)
            self._holds[state] = (lease, timer)
            oldest = next(iter(self._holds)) if len(self._holds) > self.LIMIT else None
        if old is not None:
            _end(old)
        if oldest is not None:
            self.release(oldest)

    def release(self, state: Any) -> None:
        """The round of ``state`` came back (or its hold ran out): release its server."""
        if not isinstance(state, str):
            return
        with self._lock:
            held = self._holds.pop(state, None)
        if held is not None:
            _end(held)

    def close(self) -> None:
        with self._lock:
            holds, self._holds = list(self._holds.values()), {}
        for held in holds:
            _end(held)


def _end(held: tuple[Any, _timer.Handle]) -> None:
    lease, timer = held
    timer.cancel()
    lease.release()
