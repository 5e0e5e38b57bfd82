"""A Hub server's state as the Hub reports it: ``State``, the ``ServerStatus``
snapshot that ``Hub.status()`` returns, and the ``Backoff`` between connect
attempts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ...errors import ConfigError

if TYPE_CHECKING:
    pass

__all__ = ["State", "Backoff", "ServerStatus"]


State = Literal["connected", "failed", "needs-auth", "pending", "disabled", "idle"]


@dataclass(frozen=True)
class Backoff:
    """How a slot retries a connection: ``base * factor ** (n - 1)`` seconds after the n-th
    failed attempt, capped at ``max_delay``, at most ``max_attempts`` attempts per cycle;
    a ``failed`` server is tried again on use after ``cooldown`` seconds."""

    base: float = 1.0
    factor: float = 2.0
    max_delay: float = 30.0
    max_attempts: int = 3
    cooldown: float = 30.0

    def __post_init__(self) -> None:
        if self.base < 0 or self.factor < 1 or self.max_delay < 0 or self.cooldown < 0:
            raise ConfigError("Backoff: base, max_delay and cooldown must be >= 0, factor >= 1")
        if self.max_attempts < 1:
            raise ConfigError("Backoff: max_attempts must be at least 1")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return float(min(self.base * self.factor ** (attempt - 1), self.max_delay))


@dataclass(frozen=True)
class ServerStatus:
    """One server as ``Hub.status()`` shows it.

    Attributes:
        state: ``connected``, ``failed``, ``needs-auth``, ``pending``, ``disabled`` or
            ``idle`` (stopped by a recycle; the next call starts it).
        error: why it failed, needs auth, is disabled or idle; None otherwise.
        scope: where the entry came from (``project``, ``user``, ``dynamic``...).
        type: ``stdio``, ``http``, ``sse``, ``ws``, ``sdk``...
        tools_count: how many tools it offers, when the list is known (else None).
        attempts: connection attempts in the current or last cycle.
        source: the file (or ``<code>``) the entry came from.
        idle_timeout, max_lifetime: the recycle settings in effect (seconds; None: off;
            stdio servers only).
        started_at: when the current connection (process) started (``time.time()``); None
            while none runs.
        age: its age in seconds; None while none runs.
        last_used: when a call last began or ended (``time.time()``); None before the first.
        recycles: how many times a recycle stopped it (idle stops and lifetime restarts).
        pid: the stdio server's process id while it runs; None otherwise.
        via: ``"gateway"`` (reached through the Hub's gateway), ``"local"`` (run or reached by
            this process), or None while the gateway's listing is not fetched yet.
        live_tasks: tasks started or seen through the Hub, its gateway or a client from
            ``hub.client()`` on the current process that a client may still collect; a
            recycle waits for them.
        recycle_deferred: why a recycle that is due waits (live tasks, and until when at
            most); None when none waits.
    """

    name: str
    state: State
    error: str | None = None
    scope: str | None = None
    type: str | None = None
    tools_count: int | None = None
    attempts: int = 0
    source: str | None = None
    idle_timeout: float | None = None
    max_lifetime: float | None = None
    started_at: float | None = None
    age: float | None = None
    last_used: float | None = None
    recycles: int = 0
    pid: int | None = None
    via: str | None = "local"
    live_tasks: int = 0
    recycle_deferred: str | None = None
