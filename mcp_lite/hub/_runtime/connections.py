"""The Hub's connections: one slot per configured server, its state, and how it
connects (attempt cycles within one deadline, backoff, memoized connections, batches),
leases and recycling (see ``recycle``), and the server -> client callbacks every
connection shares. How it works: ``docs/explanation/inside-the-hub.md``."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ... import _fork
from ..._deadline import Deadline
from ...errors import (
    AuthRequired,
    ConfigError,
    ConnectError,
    ConnectionClosed,
    McpError,
    RpcError,
    ServerDisabled,
)
from ...events import emit_reconnect
from .callbacks import Callbacks, SamplingHandler
from .elicitation import Elicitation
from .open_client import DEADLINE_OPTION, OpenClient, _open_client
from .recycle import (
    Lease,
    Recycler,
    check_seconds,
    effective,
)
from .route import Route
from .server_status import Backoff, ServerStatus
from .slot import _acquire, _alive, _Slot, _why_dead
from .spec import Spec, _has_helper
from .sweep import Recycling

if TYPE_CHECKING:
    from ...client import Client
    from .._for_model.tools import Catalog
    from .auth_cache import AuthCache

__all__ = ["Connections", "capped"]

log = logging.getLogger("mcp_lite.hub")

DEFAULT_LOCAL_BATCH = 3
DEFAULT_REMOTE_BATCH = 20


def _batch_size(var: str, default: int) -> int:
    try:
        value = int(os.environ.get(var, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def capped(deadline: Deadline | None, seconds: float | None) -> Deadline:
    """The caller's ``deadline``, or a configured total of ``seconds`` when that ends first
    (then with its own timeout in the error). None, None: no deadline."""
    if deadline is None:
        return Deadline.after(seconds)
    if seconds is None or deadline.remaining() <= seconds:
        return deadline
    return Deadline.after(seconds)


# --- slots and connections -----------------------------------------------------------------------


class Connections(Recycling, Callbacks):
    """Every server's slot (see the module docstring). Thread-safe; ``close()`` is final.

    Args:
        specs: the configured servers.
        client_options: passed to every ``Client`` (``timeout=``, ``sampling_handler=``...).
        backoff: the retry policy.
        auth_cache: the needs-auth TTL cache.
        catalog: the tool/resource/prompt caches to invalidate.
        elicitation: the elicitation router.
        sampling_handler: ``fn(server, params)`` answering every server's sampling requests
            (a ``sampling_handler`` in ``client_options`` takes ``params`` only).
        open_client: ``fn(spec, options) -> connected Client`` (tests replace it).
        idle_timeout, max_lifetime: the recycle settings of stdio servers (seconds; None:
            off), which an entry's own ``idleShutdown``/``maxLifetime`` override.
    """

    def __init__(
        self,
        specs: Iterable[Spec],
        *,
        client_options: Mapping[str, Any],
        backoff: Backoff,
        auth_cache: AuthCache,
        catalog: Catalog,
        elicitation: Elicitation,
        sampling_handler: SamplingHandler | None = None,
        open_client: OpenClient | None = None,
        idle_timeout: float | None = None,
        max_lifetime: float | None = None,
        route: Route | None = None,
    ) -> None:
        if sampling_handler is not None and "sampling_handler" in client_options:
            raise ConfigError(
                "give sampling_handler to the Hub (fn(server, params)) or in client_options "
                "(fn(params)), not both"
            )
        self.sampling_handler = sampling_handler
        # name -> client handlers for the server's requests (set by a Gateway)
        self.server_requests: Callable[[str], dict[str, Any]] | None = None
        self.backoff = backoff
        self.auth_cache = auth_cache
        self.catalog = catalog
        self.elicitation = elicitation
        self._client_options = dict(client_options)
        self._open_client = open_client or _open_client
        self.route = route
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._slots: dict[str, _Slot] = {}
        self.idle_timeout = check_seconds("idle_timeout", idle_timeout)
        self.max_lifetime = check_seconds("max_lifetime", max_lifetime)
        self._recycler = Recycler(self._sweep)
        weakref.finalize(self, self._recycler.stop)  # a forgotten Hub ends its timer
        # recycled clients whose last call ended, and why they were recycled: to close
        self._retired: list[tuple[Client, str]] = []
        self.update(specs)
        _live.add(self)

    # --- configuration -----------------------------------------------------------------------

    def update(self, specs: Iterable[Spec]) -> None:
        """Adopt a new set of servers: unchanged ones keep their connection, changed or
        removed ones are closed."""
        wanted = {spec.name: spec for spec in specs}
        doomed: list[_Slot] = []
        with self._lock:
            for name, spec in wanted.items():
                slot = self._slots.get(name)
                if (
                    slot is not None
                    and slot.spec.key == spec.key
                    and slot.spec.disabled_reason == spec.disabled_reason
                ):
                    slot.spec = spec  # same connection; scope or source may have moved
                    continue
                if slot is not None:
                    doomed.append(slot)
                self._slots[name] = _Slot(spec)
            for name in [n for n in self._slots if n not in wanted]:
                doomed.append(self._slots.pop(name))
        for slot in doomed:
            self._drop_client(slot)
        # A kept connection may have gained a recycle setting: let the timer look at it.
        with self._lock:
            kept = [s for s in self._slots.values() if s.client is not None]
        if any(self.limits(s.spec) != (None, None) for s in kept):
            self._recycler.wake()

    def names(self) -> list[str]:
        with self._lock:
            return list(self._slots)

    def spec(self, name: str) -> Spec:
        return self._slot(name).spec

    def _slot(self, name: str) -> _Slot:
        with self._lock:
            slot = self._slots.get(name)
        if slot is None:
            raise ConfigError(
                f"no MCP server named {name!r} is configured "
                f"(known: {', '.join(sorted(self._slots)) or 'none'})"
            )
        return slot

    # --- state ---------------------------------------------------------------------------------

    def status(self) -> dict[str, ServerStatus]:
        with self._lock:
            slots = list(self._slots.values())
        return {
            slot.spec.name: slot.status(
                self.catalog.cached("tools", slot.spec.name),
                self.limits(slot.spec),
                "local" if self.route is None else self.route.via(slot.spec),
            )
            for slot in slots
        }

    def limits(self, spec: Spec) -> tuple[float | None, float | None]:
        """``(idle_timeout, max_lifetime)`` in effect for ``spec``: stdio servers run here
        only (one reached through the gateway is the gateway's to recycle)."""
        if spec.type != "stdio" or (self.route is not None and self.route.via(spec) == "gateway"):
            return None, None
        return (
            effective(spec.idle_timeout, self.idle_timeout),
            effective(spec.max_lifetime, self.max_lifetime),
        )

    def stopped(self, name: str) -> bool:
        """True while ``name`` is stopped by a recycle (its lists are still valid)."""
        return self._slot(name).snapshot[0] == "idle"

    def disable(self, name: str) -> None:
        slot = self._slot(name)
        slot.user_disabled = True
        with slot.lock:
            self._drop_client(slot)
            slot.set("disabled", "disabled by the host")

    def enable(self, name: str) -> None:
        slot = self._slot(name)
        with slot.lock:
            if slot.spec.disabled_reason:
                raise ConfigError(
                    f"MCP server {name!r} is disabled by its configuration: "
                    f"{slot.spec.disabled_reason}"
                )
            slot.user_disabled = False
            if slot.snapshot[0] == "disabled":
                slot.set("pending", None, 0)

    # --- connecting ----------------------------------------------------------------------------

    def client(self, name: str, deadline: Deadline | None = None) -> Client:
        """The live client of ``name``, connecting (with backoff) when needed, within
        ``deadline`` (the caller's; capped by the connect total either way).

        Raises:
            ConfigError: unknown server, or its entry is invalid.
            ConnectError: the server is disabled, or failed recently (see ``Backoff.cooldown``).
            AuthRequired: it needs authorization (now or within the needs-auth TTL).
            McpError: the last attempt's error when every attempt failed.
        """
        slot = self._slot(name)
        slot.life.touch()
        client = slot.client
        if client is not None and slot.snapshot[0] == "connected" and _alive(client):
            return client
        return self._connect(slot, force=False, deadline=deadline)

    def ready(self, name: str) -> bool:
        """True when ``name`` is connected and its connection up now (no I/O, no connect):
        what ``client(name)`` would return at once."""
        slot = self._slot(name)
        client = slot.client
        return client is not None and slot.snapshot[0] == "connected" and _alive(client)

    def lease(self, name: str, deadline: Deadline | None = None) -> Lease[Client]:
        """``client(name, deadline)``, held in use until the lease is released (``with
        conns.lease(name) as client:``): a recycle never stops a server under a lease.

        Raises:
            as ``client``.
        """
        held = self.lease_connected(name)
        if held is not None:
            return held
        slot = self._slot(name)
        life = slot.life
        for _ in range(3):
            client = self.client(name, deadline)
            with life.lock:
                # A recycle detaches the client under this lock: still current, it is ours.
                if slot.client is client:
                    life.users[client] = life.users.get(client, 0) + 1
                    return Lease(client, life, self._freed)
        raise ConnectError(f"MCP server {name!r} was recycled while connecting; try again")

    def lease_connected(self, name: str) -> Lease[Client] | None:
        """``lease(name)`` of a server connected now (no I/O, no deadline); None otherwise.

        Raises:
            ConfigError: no server ``name`` is configured.
        """
        slot = self._slot(name)
        life = slot.life
        client = slot.client
        if client is not None and slot.snapshot[0] == "connected" and _alive(client):
            with life.lock:  # connected: used now and held, under one lock
                if slot.client is client:
                    life.last_used, life.last_used_wall = time.monotonic(), time.time()
                    life.users[client] = life.users.get(client, 0) + 1
                    return Lease(client, life, self._freed)
        return None

    def reconnect(self, name: str, deadline: Deadline | None = None) -> Client:
        """Close the current connection (if any) and connect again now, ignoring the
        cool-down and the needs-auth cache; within ``deadline`` (see ``client``)."""
        slot = self._slot(name)
        deadline = self._connect_deadline(slot.spec, deadline)
        if not _acquire(slot.lock, deadline):
            raise self._busy(slot, deadline)
        try:
            self._drop_client(slot)
        finally:
            slot.lock.release()
        self.auth_cache.discard(slot.spec.auth_key)
        return self._connect(slot, force=True, deadline=deadline)

    def through_gateway(self, name: str) -> bool:
        """True when ``name`` is reached through the Hub's gateway (as last known)."""
        return self.route is not None and self.route.via(self._slot(name).spec) == "gateway"

    def lost_through_gateway(
        self, name: str, client: Client, exc: McpError, phase: str
    ) -> McpError | None:
        """A request to ``name`` through the gateway failed with ``exc`` on ``client``:
        forget that connection; None when the request may be sent again on a new one (the
        gateway refused it without running it, or it was never written: see
        ``GatewayRoute.resendable``), else the error to raise, naming the gateway. A
        request that was written and then lost its answer is never sent again, whoever
        closed its connection: the gateway may have run it."""
        assert self.route is not None
        resend = self.route.resendable(exc)
        if not isinstance(exc, ConnectionClosed) and not (resend or not self.route.listening()):
            # a timeout through a gateway that is up: its connection is fine
            return self.route.timed_out(exc, phase)
        self.connection_lost(name, client)
        self.route.forget()  # it may have restarted with another configuration
        return None if resend else self.route.unreachable(exc, phase)

    def connection_lost(self, name: str, client: Client) -> None:
        """A call found ``client`` dead: forget it and its caches; the next use reconnects."""
        with contextlib.suppress(ConfigError):
            slot = self._slot(name)
            # Never wait here (the caller's deadline may be spent): a slot locked by another
            # thread is being reconnected, which drops the dead client itself.
            if not slot.lock.acquire(blocking=False):
                return
            try:
                if slot.client is client:
                    slot.lost = _why_dead(client)
                    if not self._retire_held(slot, client):
                        self._drop_client(slot)
                    slot.set("pending", "the connection closed; it reconnects on next use")
            finally:
                slot.lock.release()

    def _retire_held(self, slot: _Slot, client: Client) -> bool:
        """Through the gateway: detach ``client`` from ``slot`` and leave it open while
        other calls still hold it (closed when the last lease ends), so each of them gets
        its own answer (a refusal that ran nothing, a result, or its own failure) rather
        than this one's failure; True when so retired."""
        if self.route is None or self.route.via(slot.spec) != "gateway":
            return False
        life = slot.life
        with life.lock:
            if life.users.get(client, 0) <= 0:
                return False
            slot.client = None
            life.draining.append(client)
            # (what its close says; the Hub never recycles a server of the gateway)
            life.recycled_why = (
                f"its connection through the gateway on {self.route.socket_path} was lost; "
                f"hub.client({slot.spec.name!r}) gives a live client"
            )
        self.catalog.invalidate(slot.spec.name)
        return True

    def connect_all(
        self, names: Sequence[str] | None = None, deadline: Deadline | None = None
    ) -> None:
        """Connect every enabled server not yet connected, in parallel batches (3 local,
        20 remote by default), all within ``deadline`` (see ``client``). Failures are
        recorded in the states, never raised."""
        with self._lock:
            slots = [s for n, s in self._slots.items() if names is None or n in names]
        # An idle (recycled) server stays stopped until a call needs it.
        todo = [
            s for s in slots if s.snapshot[0] not in ("disabled", "idle") and not s.user_disabled
        ]
        if self.route is not None:
            todo = self._unless_gateway_down(todo, deadline)
        local = [s for s in todo if not s.spec.remote]
        remote = [s for s in todo if s.spec.remote]
        pools = [
            ThreadPoolExecutor(
                _batch_size("MCP_SERVER_CONNECTION_BATCH_SIZE", DEFAULT_LOCAL_BATCH),
                thread_name_prefix="mcp-lite-hub-connect-local",
            ),
            ThreadPoolExecutor(
                _batch_size("MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE", DEFAULT_REMOTE_BATCH),
                thread_name_prefix="mcp-lite-hub-connect-remote",
            ),
        ]
        try:
            futures = [pools[0].submit(self._try_connect, s, deadline) for s in local]
            futures += [pools[1].submit(self._try_connect, s, deadline) for s in remote]
            for future in futures:
                future.result()
        finally:
            for pool in pools:
                pool.shutdown(wait=True)

    def _unless_gateway_down(self, slots: list[_Slot], deadline: Deadline | None) -> list[_Slot]:
        """Before connecting ``slots``: the gateway's listing, fetched once for them all (one
        wait for a gateway that is down, as a local connect cycle waits, not one per server
        in series). When it stays unreachable the servers it would serve are ``failed``
        with that error (no cool-down: the next use waits for the gateway again) and left
        out; the others are returned."""
        route = self.route
        assert route is not None
        waiting = [
            s
            for s in slots
            if route.needs_listing(s.spec) and not (s.client is not None and _alive(s.client))
        ]
        if not waiting:
            return slots
        try:
            route.listing(self._connect_deadline(waiting[0].spec, deadline))
        except McpError as exc:
            error = route.unreachable(exc, "fetching the gateway's server list")
            for slot in waiting:
                slot.last_error = None
                slot.set("failed", str(error))
            return [s for s in slots if s not in waiting]
        return slots

    def _try_connect(self, slot: _Slot, deadline: Deadline | None) -> None:
        client = slot.client
        if client is not None and slot.snapshot[0] == "connected" and _alive(client):
            return
        with contextlib.suppress(McpError):
            self._connect(slot, force=False, deadline=deadline)

    def _connect_deadline(self, spec: Spec, deadline: Deadline | None) -> Deadline:
        """The deadline of one attempt cycle: the caller's, capped by the connect total."""
        return capped(deadline, self._connect_total(spec))

    def _connect_total(self, spec: Spec) -> float:
        """The configured total of a connect cycle: ``connect_timeout`` (``MCP_TIMEOUT``),
        else the server's or the client's ``timeout``."""
        options = self._client_options
        total = options.get("connect_timeout")
        if total is None:
            total = spec.timeout if spec.timeout is not None else options.get("timeout")
        if total is None:
            from ...client import DEFAULT_TIMEOUT

            total = DEFAULT_TIMEOUT
        return float(total)

    def _busy(self, slot: _Slot, deadline: Deadline) -> McpError:
        route = self.route
        through = route is not None and route.via(slot.spec) == "gateway"
        error = deadline.error(
            "connecting",
            f"MCP server {slot.spec.name!r} was still being connected by another thread"
            + (f" through the gateway on {route.socket_path}" if route and through else ""),
        )
        if route is not None and through and not route.listening():
            return route.unreachable(error, f"connecting to MCP server {slot.spec.name!r}")
        return error

    def _connect(self, slot: _Slot, *, force: bool, deadline: Deadline | None = None) -> Client:
        spec = slot.spec
        deadline = self._connect_deadline(spec, deadline)
        if not _acquire(slot.lock, deadline):
            raise self._busy(slot, deadline)
        try:
            client = slot.client
            if client is not None and slot.snapshot[0] == "connected" and _alive(client):
                return client  # another thread connected it while we waited
            if self._closing.is_set():
                raise ConnectionClosed("the Hub is closed")
            if spec.error:
                slot.set("failed", spec.error)
                raise ConfigError(f"MCP server {spec.name!r}: {spec.error}")
            if spec.disabled_reason:
                raise ServerDisabled(
                    f"MCP server {spec.name!r} is disabled: {spec.disabled_reason}"
                )
            if slot.user_disabled:
                raise ConnectError(f"MCP server {spec.name!r} is disabled: disabled by the host")
            if not force and self.auth_cache.contains(spec.auth_key):
                slot.set(
                    "needs-auth",
                    "authorization required (recorded less than "
                    f"{self.auth_cache.ttl / 60:g} minutes ago)",
                )
                raise AuthRequired(
                    f"MCP server {spec.name!r} needs authorization; "
                    "call reconnect() once it is authorized",
                    spec.name,
                )
            state = slot.snapshot[0]
            if (
                not force
                and state == "failed"
                and slot.last_error is not None
                and time.monotonic() - slot.failed_at < self.backoff.cooldown
            ):
                raise ConnectError(
                    f"MCP server {spec.name!r} failed: {slot.last_error} "
                    "(it is retried after a cool-down, or on reconnect())"
                )
            if client is not None:
                if not force:
                    slot.lost = _why_dead(client)
                self._drop_client(slot)
            # Through the gateway when it has this server (its listing is fetched on the
            # caller's deadline; an unreachable gateway raises here, before any attempt).
            target = spec if self.route is None else self.route.route(spec, deadline)
            return self._attempts(slot, deadline, target)
        finally:
            slot.lock.release()

    def _attempts(self, slot: _Slot, deadline: Deadline, target: Spec | None = None) -> Client:
        """Up to ``max_attempts`` connects with backoff waits, all within ``deadline``
        (to ``target``: the gateway's endpoint of the slot's server, else the server)."""
        spec = slot.spec
        target = target or spec
        last: McpError | None = None
        answered = False
        for attempt in range(1, self.backoff.max_attempts + 1):
            if attempt == 1 and deadline.expired():  # nothing left: start no server for it
                raise deadline.error("connecting", f"MCP server {spec.name!r} was not started")
            slot.set("pending", None if last is None else str(last), attempt)
            try:
                options = self._options_for(spec)
                options[DEADLINE_OPTION] = deadline
                try:
                    client = self._open_client(target, options)
                except McpError as exc:
                    if target is spec or self.route is None:
                        raise
                    # The gateway is up, its server not: it made its own attempts already
                    # (its failure to start the server, data.phase "connecting").
                    answered = _start_failed(exc)
                    raise self.route.local_error(exc) from exc  # the class a local start gives
            except AuthRequired as exc:
                if not _has_helper(spec):  # a helper may print good headers next time
                    self.auth_cache.add(spec.auth_key)
                slot.set("needs-auth", str(exc) or "authorization required")
                raise AuthRequired(
                    str(exc) or f"MCP server {spec.name!r} needs authorization", spec.name
                ) from exc
            except ConfigError as exc:
                slot.set("failed", str(exc))
                slot.last_error, slot.failed_at = exc, time.monotonic()
                raise
            except McpError as exc:
                last = exc
                if getattr(exc, "permanent", False) or answered:  # no retry here helps
                    break
                log.info(
                    "MCP server %r: connection attempt %d/%d failed: %s",
                    spec.name,
                    attempt,
                    self.backoff.max_attempts,
                    exc,
                )
                if attempt < self.backoff.max_attempts and target is not spec and not answered:
                    # The gateway itself failed (it may be restarting): wait for it within
                    # the deadline (route() does) instead of the backoff, then try again.
                    assert self.route is not None
                    self.route.forget()
                    slot.set("pending", str(exc), attempt)
                    try:
                        target = self.route.route(spec, deadline)
                    except McpError:
                        break  # still unreachable at the deadline: this attempt's error stands
                    continue
                if attempt < self.backoff.max_attempts:
                    delay = self.backoff.delay(attempt)
                    if delay >= deadline.remaining():
                        break  # the next attempt could not start in time: this error stands
                    slot.set("pending", str(exc), attempt)
                    if self._closing.wait(delay):
                        raise ConnectionClosed("the Hub is closed") from exc
                continue
            if self._closing.is_set():  # closed while we were connecting
                client.close()
                raise ConnectionClosed("the Hub is closed")
            if target is not spec and self.route is not None:
                self.route.adopt(client)  # each request's own outcome decides a resend
            slot.client = client
            if slot.lost is not None:  # a dead connection was replaced
                lost, slot.lost = slot.lost, None
                emit_reconnect(self._client_options.get("event_hooks") or {}, spec.name, lost)
            slot.last_error = None
            slot.set("connected", None, attempt)
            self._began(slot, client)
            self._listen(slot, client)
            return client
        assert last is not None
        if target is not spec and self.route is not None and not answered:
            # The gateway itself failed (it may be restarting): its listing is asked again,
            # and no cool-down (the next use waits for the gateway again, within its own
            # deadline). A server the gateway could not start is failed as a local one.
            self.route.forget()
            last = self.route.unreachable(last, f"connecting to MCP server {spec.name!r}")
            slot.last_error = None
            slot.set("failed", str(last), attempt)
            raise last
        if deadline.expired() and deadline.timeout < self._connect_total(spec):
            # A caller's short deadline ran out, not the configured total: the server is not
            # known to be broken, so no cool-down; the next use tries again.
            slot.set("pending", str(last), attempt)
            raise last
        slot.last_error, slot.failed_at = last, time.monotonic()
        slot.set("failed", str(last), attempt)
        raise last

    def _drop_client(self, slot: _Slot) -> None:
        client, slot.client = slot.client, None
        self.catalog.invalidate(slot.spec.name)
        if client is not None:
            client.close()

    # --- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection, in parallel; bounded (about 1 s per stdio server at worst,
        all at once); idempotent."""
        self._closing.set()
        self._recycler.stop()  # after this no recycle runs: every client is ours to close
        with self._lock:
            slots = list(self._slots.values())
            retired, self._retired = self._retired, []
        clients = [s.client for s in slots if s.client is not None] + [c for c, _ in retired]
        for slot in slots:
            with slot.life.lock:
                clients += slot.life.draining  # their calls fail: the Hub is closing
                slot.life.draining = []
        for slot in slots:
            slot.client = None
            self.catalog.invalidate(slot.spec.name)
        if not clients:
            return
        threads = [
            threading.Thread(target=c.close, name=f"mcp-lite-hub-close[{c.name}]", daemon=True)
            for c in clients
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 5.0
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))

    @property
    def closed(self) -> bool:
        return self._closing.is_set()

    def _after_fork_in_child(self) -> None:
        # Locks held by other threads at fork time would never be released in the child.
        self._lock = threading.Lock()
        self._retired = []  # the parent's clients: the parent closes them
        for slot in self._slots.values():
            slot.lock = threading.Lock()
            slot.life.after_fork()
        self.elicitation._after_fork()
        self._recycler.after_fork()


def _start_failed(exc: McpError) -> bool:
    """``exc`` is the gateway's answer that it could not start its server (not a refusal
    of the request, nor a busy gateway)."""
    data = getattr(exc, "data", None)
    return (
        isinstance(exc, RpcError) and isinstance(data, dict) and data.get("phase") == "connecting"
    )


_live: weakref.WeakSet[Connections] = weakref.WeakSet()


def _after_fork() -> None:
    for conns in list(_live):
        conns._after_fork_in_child()


_fork.on_child(_after_fork)
