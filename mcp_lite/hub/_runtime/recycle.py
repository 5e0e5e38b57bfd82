"""Servers that recycle (``idle_timeout``, ``max_lifetime``): ``Life`` is one server's record of its
process life, and ``Recycler`` is the Hub's one entry on the process timer, which posts the Hub's
``sweep`` to a worker. The decisions are made by ``_connections`` under its slot locks (see
docs/explanation/inside-the-hub.md)."""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ... import _timer
from ..._workers import Workers
from ...errors import ConfigError
from .live_tasks import LiveTasks

__all__ = [
    "Lease",
    "Life",
    "Recycler",
    "calls_in_flight",
    "check_seconds",
    "defer_for_tasks",
    "effective",
    "use_mark",
]

log = logging.getLogger("mcp_lite.hub")

RETRY = 0.1  # a server being connected by a caller is looked at again this much later
_JOIN = 5.0  # close() waits this long for a sweep under way (it may close a server: ~0.6 s)


def check_seconds(name: str, value: float | None) -> float | None:
    """A Hub option in seconds: None (off) or a positive number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{name} must be a positive number of seconds or None, got {value!r}")
    return float(value)


def use_mark(client: Any) -> Any:
    """A mark of ``client`` that moves with every request sent (``Client._use_mark``);
    None for tests' stand-ins, which have none. Cheap: a lease's release notes it."""
    mark = getattr(client, "_use_mark", None)
    return mark() if mark is not None else None


def calls_in_flight(client: Any) -> int:
    """``client``'s calls waiting for their answer, its own and the Hub's
    (``Client._in_flight``); 0 for tests' stand-ins."""
    count = getattr(client, "_in_flight", None)
    return count() if count is not None else 0


def effective(own: float | None, default: float | None) -> float | None:
    """A server's own setting (``0``: off for this server) over the Hub's ``default``."""
    if own is None:
        return default
    return float(own) if own > 0 else None


class Life:
    """One server's process life: when it started and was last used, the calls holding each
    client (``users``), the retired clients waiting for their last call (``draining``) and
    how many recycles it has had. Guarded by ``lock`` (never held across I/O)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: float | None = None  # monotonic; None while no process runs
        self.started_wall: float | None = None
        self.pid: int | None = None
        self.last_used = time.monotonic()
        self.last_used_wall: float | None = None
        self.recycles = 0
        self.seen: Any = None  # the client's use mark when last noted (see use_mark)
        self.users: dict[Any, int] = {}
        self.draining: list[Any] = []
        self.stale_lists = False  # recycled: the cached lists are refreshed on the next start
        self.tasks = LiveTasks()  # live tasks of the current process: a recycle waits
        self.deferred: str | None = None  # why a due recycle waits (for status())
        self.recycled_why = ""  # the last recycle, as a recycled client's close() says it

    def began(self, pid: int | None, seen: Any) -> None:
        """A new connection is up (``seen``: its use mark now; the handshake is no use)."""
        with self.lock:
            self.started, self.started_wall, self.pid = time.monotonic(), time.time(), pid
            self.last_used = time.monotonic()
            self.seen = seen

    def touch(self) -> None:
        with self.lock:
            self.last_used, self.last_used_wall = time.monotonic(), time.time()

    def after_fork(self) -> None:
        # The parent's calls are not ours: nothing holds a client in the child.
        self.lock = threading.Lock()
        self.users = {}
        self.draining = []
        self.tasks.after_fork()
        self.deferred = None


def defer_for_tasks(life: Life, setting: str) -> float | None:
    """A recycle of ``life``'s server is due (by ``setting``; under ``life.lock``): while it
    has live tasks (see ``_live_tasks``) it waits; returns until when (monotonic) at most,
    or None when nothing holds it. ``life.deferred`` says so for ``status()``."""
    count, until = life.tasks.hold()
    if until is None:
        life.deferred = None
        return None
    at = time.strftime("%H:%M:%S", time.localtime(time.time() + until - time.monotonic()))
    deferred = f"its {setting} recycle waits for {count} live task(s) (until {at} at most)"
    if life.deferred != deferred:
        log.info("MCP server recycle deferred: %s", deferred)
    life.deferred = deferred
    return until


C = TypeVar("C")


class Lease(Generic[C]):
    """A client held in use by one call: ``with conns.lease(name) as client: ...``. The
    server is not recycled under it; ``release`` (the ``with`` exit) ends the hold."""

    def __init__(self, client: C, life: Life, freed: Callable[[C, Life], None]) -> None:
        self.client = client
        self._life = life
        self._freed = freed
        self._held = True

    def __enter__(self) -> C:
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        life, client = self._life, self.client
        with life.lock:
            left = life.users.get(client, 1) - 1
            if left > 0:
                life.users[client] = left
            else:
                life.users.pop(client, None)
            life.last_used, life.last_used_wall = time.monotonic(), time.time()
            life.seen = use_mark(client)  # (this call's requests are noted already)
            retired = left <= 0 and client in life.draining
            if retired:
                life.draining.remove(client)
        if retired:  # its last call ended: the timer closes it (never this caller)
            self._freed(client, life)


class Recycler:
    """The Hub's recycle sweep as an entry on the process timer (``_timer``).

    ``sweep()`` does the due recycles and returns the monotonic time of the next check (None:
    nothing to watch until ``wake``). ``wake(at)`` arms the entry for ``at`` (None: at once);
    when it fires, the timer only *posts* the sweep to a worker (a sweep may close a server,
    and timer callbacks must be short), and the entry is armed again from what the sweep
    returns. ``stop()`` cancels it and waits (bounded) for a sweep under way.
    """

    def __init__(self, sweep: Callable[[], float | None]) -> None:
        self._sweep = weakref.WeakMethod(sweep)
        self._cond = threading.Condition()
        self._entry: _timer.Handle | None = None
        self._due: float | None = None  # when the armed entry fires
        self._sweeping: threading.Thread | None = None  # the worker running a sweep
        self._posted = False  # a sweep is posted or running
        self._again: float | None = None  # a wake() while the sweep ran
        self._stopped = False

    @property
    def armed(self) -> bool:
        """An entry is on the timer, or a sweep is posted or running."""
        with self._cond:
            return self._posted or (self._entry is not None and self._entry.pending)

    def wake(self, at: float | None = None) -> None:
        at = time.monotonic() if at is None else at
        with self._cond:
            if self._stopped:
                return
            if self._posted:  # the sweep's own answer re-arms; remember the earlier time
                self._again = at if self._again is None else min(self._again, at)
                return
            self._arm(at)

    def _arm(self, at: float) -> None:
        # (under self._cond)
        entry = self._entry
        if entry is not None and entry.pending:
            if self._due is not None and self._due <= at:
                return  # it looks earlier anyway
            entry.cancel()
        self._due = at
        self._entry = _timer.schedule(at, self._fire)

    def _fire(self) -> None:
        # On the timer thread: post the sweep, nothing more.
        with self._cond:
            if self._stopped or self._posted:
                return
            self._entry = self._due = None
            self._posted = True
        try:
            _SWEEPS.submit(self._run)
        except RuntimeError:  # (the pool is never shut down; kept for safety)
            with self._cond:
                self._posted = False

    def _run(self) -> None:
        with self._cond:
            if self._stopped:
                self._posted = False
                self._cond.notify_all()
                return
            self._sweeping = threading.current_thread()
        nxt: float | None = None
        sweep = self._sweep()
        if sweep is not None:  # (None: the Hub was collected)
            try:
                nxt = sweep()
            except Exception:  # never let recycling die: log and look again soon
                log.exception("mcp_lite: recycling servers failed")
                nxt = time.monotonic() + 1.0
            del sweep
        with self._cond:
            self._posted, self._sweeping = False, None
            again, self._again = self._again, None
            self._cond.notify_all()
            if nxt is None or (again is not None and again < nxt):
                nxt = again
            if nxt is not None and not self._stopped:
                self._arm(nxt)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            if self._entry is not None:
                self._entry.cancel()
                self._entry = None
            if self._sweeping is threading.current_thread():
                return  # (a sweep that ends the Hub: it is over when it returns)
            self._cond.wait_for(lambda: not self._posted, _JOIN)

    def after_fork(self) -> None:
        # The parent's entry and sweep are not in the child (the timer and the pool reset
        # themselves); the entry is armed again when a server connects.
        self._cond = threading.Condition()
        self._entry = self._due = self._again = None
        self._sweeping = None
        self._posted = False


# The workers that run the Hubs' sweeps (one sweep per Hub at a time); none while idle.
_SWEEPS = Workers("mcp-lite-hub-sweep", 4)
