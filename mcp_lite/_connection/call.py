"""One call a caller waits for (``Call``: its request, its movable deadline, its state
across input rounds) and what a blocking caller waits on (``Waiter``: a lock of its own,
completed once), with the helpers that complete either a ``Waiter`` or a ``Future``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import _timer
from .._accel import Gate
from .._deadline import Deadline
from ..protocol import jsonrpc

if TYPE_CHECKING:
    from ..protocol.types import Progress

__all__ = ["Call", "Submitted", "Waiter", "fail", "guarded", "resolve", "still_asking"]

log = logging.getLogger("mcp_lite.client")


class Submitted(Future[dict[str, Any]]):
    """The future of a submitted request, with the JSON-RPC id it was first sent with: a
    2026-07-28 listen stream's notifications name their stream by it."""

    request_id: jsonrpc.RequestId | None = None


@dataclass(eq=False, slots=True)
class Call:
    """One request the caller waits for (across ``input_required`` rounds and their ids)."""

    future: Future[dict[str, Any]] | Waiter
    method: str
    params: dict[str, Any] | None
    timeout: float  # the caller's timeout: progress moves ``deadline`` this far ahead
    deadline: float  # when it expires now (``time.monotonic()``; progress moves it)
    hard: Deadline  # the latest it may wait, progress or not: what the transport sees
    on_progress: Callable[[Progress], Any] | None = None
    reset_on_progress: bool = False
    cancel_on_timeout: bool = True
    total: float = 0.0
    inline: bool = False  # the caller blocks on the future: HTTP may POST on its thread
    request_id: jsonrpc.RequestId = 0
    rounds: int = 0
    sent: bool = False  # this round's request was handed to the transport
    expired: bool = False  # its deadline passed (set under the connection's lock)
    trace: Any = None  # the event observer's state for this call (mcp_lite.events)
    cancelled: bool = False  # withdrawn by the caller: never (re-)sent after this
    in_round: bool = False  # an input_required round is being answered for it
    timer: _timer.Handle | None = None  # a future's deadline on the process-wide timer
    # A relayed request (the gateway's): an input_required result is its answer, for the
    # caller to pass on, and the client capabilities in its own _meta are the ones sent.
    relayed: bool = False

    def current(self) -> Deadline:
        """Its deadline as it stands (progress may have moved it), as one ``Deadline``."""
        hard = self.hard
        return hard if self.deadline == hard.at else Deadline(self.deadline, self.timeout)


class Waiter:
    """What a blocking call waits on: a lock taken at birth and released once on completion.

    Quacks like the part of ``Future`` that the routing code and the event observer use
    (``set_result``, ``set_exception``, ``done``, ``add_done_callback``, ``result``...), so a
    call is completed the same way whichever it has. Completion is claimed under one
    module-wide lock (held for a few attribute writes), so two racing completers (an answer
    and a shutdown) cannot both win, and a blocking call costs one ``Gate`` of its own (a
    kernel: the stdio reader can defer its wake-up until the woken thread would find the GIL
    free).
    """

    __slots__ = ("_callbacks", "_ready", "error", "value")

    def __init__(self) -> None:
        self._ready = Gate()
        self.value: Any = None
        self.error: BaseException | None = None
        # None: pending, no callback yet; a list: pending, callbacks to run; _FIRED: done.
        self._callbacks: list[Callable[[Waiter], Any]] | None = None

    def done(self) -> bool:
        return self._callbacks is _FIRED

    def cancelled(self) -> bool:
        return False

    def set_result(self, result: Any) -> None:
        with _CALLBACKS_LOCK:
            callbacks = self._callbacks
            if callbacks is _FIRED:
                raise InvalidStateError("already completed")
            self.value = result
            self._callbacks = _FIRED  # after the value: done() means it can be read
        self._ready.open()
        if callbacks:
            self._run_callbacks(callbacks)

    def set_exception(self, error: BaseException) -> None:
        with _CALLBACKS_LOCK:
            callbacks = self._callbacks
            if callbacks is _FIRED:
                raise InvalidStateError("already completed")
            self.error = error
            self._callbacks = _FIRED
        self._ready.open()
        if callbacks:
            self._run_callbacks(callbacks)

    def _run_callbacks(self, callbacks: list[Callable[[Waiter], Any]]) -> None:
        for fn in callbacks:
            guarded(fn, self)

    def add_done_callback(self, fn: Callable[[Waiter], Any]) -> None:
        with _CALLBACKS_LOCK:
            if self._callbacks is not _FIRED:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(fn)
                return
        guarded(fn, self)

    def wait(self, timeout: float) -> bool:
        """True once completed (the outcome is then in ``value``/``error``), even when the
        wake-up itself is still queued (see ``Gate``)."""
        return self._ready.wait(timeout)

    def exception(self) -> BaseException | None:
        return self.error

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


_CALLBACKS_LOCK = threading.Lock()
_FIRED: list[Callable[[Waiter], Any]] = []  # marks "callbacks already run"


def resolve(future: Future[Any] | Waiter, result: Any) -> None:
    try:
        future.set_result(result)
    except Exception:  # cancelled by the caller, or already resolved
        pass


def fail(future: Future[Any] | Waiter, error: BaseException) -> None:
    if not future.done():
        try:
            future.set_exception(error)
        except Exception:  # already resolved by a racing thread
            pass


def guarded(fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except Exception:
        log.exception("callback %r raised", getattr(fn, "__name__", fn))


def still_asking(asking: set[Call]) -> int:
    """How many calls of ``asking`` are still between two input rounds; those that ended
    otherwise (failed, expired, cancelled in the round) are dropped from it here."""
    calls = list(asking)  # (one step under the GIL: other threads change the set)
    for call in calls:
        if not call.in_round or call.future.done():
            asking.discard(call)
    return sum(call.in_round and not call.future.done() for call in calls)
