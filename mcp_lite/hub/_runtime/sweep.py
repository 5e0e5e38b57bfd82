"""The recycling side of the Hub's connections (``Recycling``, a base of ``Connections``):
noting a connection's start, the sweep that the ``Recycler`` posts (closing retired clients,
recycling the servers that are due) and the live tasks that make a recycle wait. The
decisions are made here under the slot locks; ``recycle`` keeps the records and the timer
entry, and knows nothing of slots."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from ...errors import RpcError
from .live_tasks import TASK_METHODS, unknown_task_note
from .recycle import RETRY, Life, Recycler, calls_in_flight, defer_for_tasks, use_mark
from .slot import _alive, _Slot, _starts_task

if TYPE_CHECKING:
    from ...client import Client
    from ...tasks import Task
    from .._for_model.tools import Catalog
    from .spec import Spec

__all__ = ["Recycling"]

log = logging.getLogger("mcp_lite.hub")


class Recycling:
    """The recycle sweep and the task holds of ``Connections`` (which provides the slots,
    ``limits`` and the locks declared here)."""

    _lock: threading.Lock
    _closing: threading.Event
    _slots: dict[str, _Slot]
    _retired: list[tuple[Client, str]]
    _recycler: Recycler
    catalog: Catalog

    def _slot(self, name: str) -> _Slot:
        raise NotImplementedError

    def limits(self, spec: Spec) -> tuple[float | None, float | None]:
        raise NotImplementedError

    # --- recycling (see _recycle) -------------------------------------------------------------

    def _began(self, slot: _Slot, client: Client) -> None:
        """A connection is up: note its start; watch it when it recycles."""
        transport = getattr(client, "transport", None)  # tests' stand-ins may have none
        life = slot.life
        life.began(None if transport is None else transport.pid, use_mark(client))
        # Its task handles, however made (the Hub's calls, or on a Client kept from
        # hub.client()), hold the server while their tasks may still be collected.
        if hasattr(client, "_on_task"):  # (tests' stand-ins have no tasks)
            name = slot.spec.name
            client._on_task = lambda task: self.hold_task(name, client, task)
        life.tasks.process_ended()  # a new process: the last one's tasks died with it
        life.deferred = None
        if life.stale_lists:  # the server was recycled: its lists come from the new process
            life.stale_lists = False
            self.catalog.invalidate(slot.spec.name)
        idle, lifetime = self.limits(slot.spec)
        due = [t for t in (idle, lifetime) if t is not None]
        if due:
            self._recycler.wake(time.monotonic() + min(due))

    def _freed(self, client: Client, life: Life) -> None:
        """A retired client's last call ended: the timer closes it."""
        with self._lock:
            self._retired.append((client, life.recycled_why))
        self._recycler.wake()

    def _sweep(self) -> float | None:
        """The timer's work: close freed clients, recycle the servers that are due; returns
        when to look again (None: nothing to watch)."""
        with self._lock:
            retired, self._retired = self._retired, []
            slots = list(self._slots.values())
        nxt: float | None = None
        for slot in slots:
            if self._closing.is_set():
                with self._lock:  # close() closes them
                    self._retired += retired
                return None
            due, stop = self._recycle(slot)
            if stop is not None:
                retired.append((stop, slot.life.recycled_why))
            if due is not None and (nxt is None or due < nxt):
                nxt = due
        # Close the retired clients whose calls have all ended (bounded: stdio kills the
        # process group within ~0.6 s). One still answering a call made on it directly (a
        # Client from hub.client(): no lease tells when it ends) is looked at again soon.
        waiting = []
        for client, why in retired:
            if calls_in_flight(client):
                waiting.append((client, why))
            else:
                client.close(why)
        if waiting:
            with self._lock:
                self._retired += waiting
            soon = time.monotonic() + RETRY
            nxt = soon if nxt is None else min(nxt, soon)
        return nxt

    def _recycle(self, slot: _Slot) -> tuple[float | None, Client | None]:
        """Recycle ``slot`` when it is due. Returns when to look at it again and the client
        to close once its direct calls end (None when none, or when leases still hold it:
        their last one frees it)."""
        idle, lifetime = self.limits(slot.spec)
        client = slot.client
        if (idle is None and lifetime is None) or client is None:
            return None, None
        if slot.snapshot[0] != "connected" or not _alive(client):
            return None, None  # dead or being replaced: the next use reconnects
        if not slot.lock.acquire(blocking=False):
            return time.monotonic() + RETRY, None  # a caller is (re)connecting it
        life = slot.life
        try:
            with life.lock:
                if slot.client is not client or life.started is None:
                    return None, None
                now = time.monotonic()
                leases = life.users.get(client, 0)  # the Hub's calls
                in_flight, mark = calls_in_flight(client), use_mark(client)  # and direct ones
                if in_flight or mark != life.seen:  # used without a lease since last look
                    life.seen = mark
                    life.last_used, life.last_used_wall = now, time.time()
                busy = max(leases, in_flight)
                old = lifetime is not None and now - life.started >= lifetime
                unused = idle is not None and not busy and now - life.last_used >= idle
                if not old and not unused:
                    times = [] if lifetime is None else [life.started + lifetime]
                    if idle is not None:  # in use: idle at the soonest that long from now
                        times.append(now + idle if busy else life.last_used + idle)
                    life.deferred = None
                    return min(times), None
                held = defer_for_tasks(life, "max_lifetime" if old else "idle_timeout")
                if held is not None:  # live tasks: look again when they stop holding
                    return held, None
                if old:
                    why = f"it reached its max_lifetime of {lifetime:g} s"
                else:
                    why = f"it was unused for its idle_timeout of {idle:g} s"
                # Detached under life.lock: a lease taken from now on connects anew. A
                # Client kept from hub.client() (or a task handle on it) is closed with
                # this said, and told where a live one is.
                slot.client = None
                life.started = None
                life.recycles += 1
                life.stale_lists = True
                life.recycled_why = (
                    f"the Hub recycled MCP server {slot.spec.name!r} ({why}); "
                    f"hub.client({slot.spec.name!r}) gives a live client"
                )
                if leases:  # closed when its last lease ends (else by the sweep)
                    life.draining.append(client)
            later = f" after its {busy} call(s) in flight" if busy else ""
            # Set under slot.lock: a caller connecting it next sets "connected" after this.
            slot.set("idle", f"stopped{later}: {why}; it starts again on next use")
        finally:
            slot.lock.release()
        log.info("MCP server %r: recycled (stopped%s): %s", slot.spec.name, later, why)
        return None, None if leases else client

    # --- live tasks (see _live_tasks): a recycle waits for them ------------------------------

    def task_answer(self, name: str, client: Client, method: str, params: Any, result: Any) -> None:
        """The answer (a result dict or the ``RpcError``) to a request sent to ``name`` on
        ``client`` for someone else (the gateway): note the tasks it starts and ends."""
        if method == "tools/call" and not _starts_task(result):
            return  # the common case, at the cost of a look at the result
        if method in TASK_METHODS:
            life = self._life_of(name, client)
            if life is not None and life.tasks.answer(method, params, result):
                self._task_released(life)

    def task_error(
        self, name: str, client: Client, method: str, params: Any, exc: RpcError
    ) -> RpcError:
        """``task_answer`` for an error answer; returns the error to pass on: an unknown
        task id (-32602 on ``tasks/*``) gets the likely cause added (the server restarted)."""
        self.task_answer(name, client, method, params, exc)
        task_id = params.get("taskId") if isinstance(params, dict) else None
        if exc.code != -32602 or not method.startswith("tasks/") or not isinstance(task_id, str):
            return exc
        life = self._life_of(name, client)
        if life is None:
            return exc
        note = unknown_task_note(
            name,
            task_id,
            lost=life.tasks.was_lost(task_id),
            stdio=self._slot(name).spec.type == "stdio",
            started_wall=life.started_wall,
            recycles=life.recycles,
        )
        return type(exc)(f"{exc.message} ({note})", exc.code, exc.data)

    def hold_task(self, name: str, client: Client, task: Task) -> None:
        """A Hub ``Task`` handle on ``client``: its server is held until the handle sees the
        task end and its result collected (or the task's bound runs out)."""
        life = self._life_of(name, client)
        if life is None or not task.id:
            return
        tasks, task_id = life.tasks, task.id
        tasks.started(task_id, task.last_status.raw)

        def release() -> None:
            if tasks.ended(task_id):
                self._task_released(life)

        task._hold_until_done(release)

    def _life_of(self, name: str, client: Client) -> Life | None:
        with self._lock:
            slot = self._slots.get(name)
        return slot.life if slot is not None and slot.client is client else None

    def _task_released(self, life: Life) -> None:
        life.touch()  # idle from now: the client just collected its task
        if life.deferred is not None:
            self._recycler.wake()
