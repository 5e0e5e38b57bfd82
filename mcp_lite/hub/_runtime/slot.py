"""One configured server's place in the Hub (``_Slot``): its spec, live client,
state snapshot, the lock that serializes its connection attempts and its process
life (see ``recycle``)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from ..._deadline import Deadline
from ...errors import ConnectionClosed, McpError
from .recycle import Life
from .server_status import ServerStatus, State
from .spec import Spec

if TYPE_CHECKING:
    from ...client import Client


def _alive(client: Client) -> bool:
    """True while the client's connection is up (no I/O)."""
    return client.connected


class _Slot:
    """One server: its spec, client and state. ``lock`` serializes its connection attempts."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.lock = threading.Lock()
        self.client: Client | None = None
        self.user_disabled = False
        # (state, error, attempts): replaced as a whole so readers never see a mix.
        self.snapshot: tuple[State, str | None, int] = (
            ("disabled", spec.disabled_reason, 0)
            if spec.disabled_reason
            else ("failed", spec.error, 0)
            if spec.error
            else ("pending", None, 0)
        )
        self.failed_at = 0.0
        self.last_error: McpError | None = None
        self.lost: BaseException | None = None  # why the last live connection died
        self.life = Life()

    def set(self, state: State, error: str | None = None, attempts: int | None = None) -> None:
        self.snapshot = (state, error, self.snapshot[2] if attempts is None else attempts)

    def status(
        self, tools: list[Any] | None, limits: tuple[float | None, float | None], via: str | None
    ) -> ServerStatus:
        """This server's ``ServerStatus`` (``tools``: its cached list, if any)."""
        client = self.client
        state, error, attempts = self.snapshot
        if state == "connected" and (client is None or not _alive(client)):
            state, error = "pending", "the connection closed; it reconnects on next use"
        spec, life = self.spec, self.life
        started = life.started if state == "connected" else None
        return ServerStatus(
            spec.name,
            state,
            error,
            spec.scope,
            spec.type,
            None if tools is None else len(tools),
            attempts,
            spec.source,
            *limits,
            life.started_wall if started is not None else None,
            None if started is None else time.monotonic() - started,
            life.last_used_wall,
            life.recycles,
            life.pid if started is not None else None,
            via,
            life.tasks.hold()[0] if started is not None else 0,
            life.deferred if started is not None else None,
        )


def _starts_task(result: Any) -> bool:
    """A ``tools/call`` result that created a task (either era)."""
    return isinstance(result, dict) and ("task" in result or result.get("resultType") == "task")


def _acquire(lock: threading.Lock, deadline: Deadline) -> bool:
    """Take ``lock``, waiting no longer than ``deadline`` allows."""
    wait = deadline.remaining()
    return lock.acquire(timeout=-1 if wait > threading.TIMEOUT_MAX else wait)


def _why_dead(client: Client) -> BaseException:
    conn = client._conn
    error = conn.closed_error if conn is not None else None
    return error or ConnectionClosed("the connection closed")
