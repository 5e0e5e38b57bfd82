"""The call paths of a ``Client``: ``submit`` (a Future), ``request`` and its one retry
(after an expired session, a server gone before the write, a refused header), the
blocking round trip on the caller's ``Deadline``, list pages, and the 2026-07-28 listen
stream."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from .._connection import Connection
from .._deadline import Deadline
from ..errors import (
    AuthRequired,
    ConfigError,
    ConnectError,
    ConnectionClosed,
    McpError,
    RemoteProtocolError,
    RequestTimeout,
    SessionExpired,
)
from ..protocol import caching as _cache
from ..protocol import session as proto
from ..protocol.session import SessionInfo
from ..transports._headers_helper import helper_refused
from ._connecting import Connecting

if TYPE_CHECKING:
    from ..protocol.types import Progress

__all__ = ["Calls"]

log = logging.getLogger("mcp_lite.client")


# What a list method lists, for the timeout's phase ("listing tools: page 3 ...").
_LISTS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resource templates",
    "prompts/list": "prompts",
    "tasks/list": "tasks",
    "skills/list": "skills",
}


def _not_a_task(method: str, result: dict[str, Any]) -> dict[str, Any]:
    """A task result (``resultType: "task"``) is valid only for ``tools/call``."""
    if result.get("resultType") == "task" and method != "tools/call":
        raise RemoteProtocolError(f"the server answered {method} with a task, which it cannot be")
    return result


class Calls(Connecting):
    """The requests of a ``Client`` (a base class of it)."""

    max_total_timeout: float | None
    reset_timeout_on_progress: bool
    cache_results: bool
    _reissue_broken: bool
    max_pages: int

    def submit(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: Callable[[Progress], Any] | None = None,
    ) -> Future[dict[str, Any]]:
        """Send a request without waiting; the ``Future`` resolves to the result dict.

        The future always completes: with the result, the server's ``RpcError``, a
        ``RequestTimeout`` after ``timeout`` seconds, or ``ConnectionClosed``.
        """
        deadline = Deadline.after(self._timeout(timeout))
        conn = self._connection(deadline)
        assert conn.info is not None
        proto.check_method_allowed(method, conn.info)
        return conn.submit(
            method,
            params,
            deadline=deadline,
            max_total_timeout=self.max_total_timeout if self.reset_timeout_on_progress else None,
            on_progress=on_progress,
            reset_on_progress=self.reset_timeout_on_progress,
        )

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: Callable[[Progress], Any] | None = None,
        cancel_event: threading.Event | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its result dict. Raises what ``submit`` describes.

        ``cancel_event``: when it is set while the request waits, the request is withdrawn,
        the server is told (``notifications/cancelled``) and ``RequestCancelled`` is raised.
        A ``KeyboardInterrupt`` during the wait also tells the server, then propagates.

        Retried once, transparently: after an expired HTTP session (re-initialized first),
        and on 2026-07-28 when only this request's response stream broke while the
        connection lives on (the spec has the client re-issue it with a new id).

        On 2026-07-28 servers, list results and ``resources/read`` are served from a cache
        while their ``ttlMs`` says they are fresh (``cache_results=False`` turns it off);
        ``list_changed`` and ``resources/updated`` notifications drop what they concern.

        ``timeout`` is a total: a reconnect, a re-initialize and the retry all fit in it.
        """
        deadline = Deadline.after(self._timeout(timeout))
        return self._request(deadline, method, params, on_progress, cancel_event)

    def _relay(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None = None,
        on_progress: Callable[[Progress], Any] | None = None,
        cancel_event: threading.Event | None = None,
    ) -> dict[str, Any]:
        """``request`` for another client (the gateway's): a 2026-07-28 ``input_required``
        result is returned as is, for that client to answer, and the client capabilities
        in ``params["_meta"]`` (that client's) are the ones sent; never cached."""
        deadline = Deadline.after(self._timeout(timeout))
        conn = self._connection(deadline)
        return self._request_once(
            conn, deadline, method, params, on_progress, cancel_event, relayed=True
        )

    def _request(
        self,
        deadline: Deadline,
        method: str,
        params: dict[str, Any] | None,
        on_progress: Callable[[Progress], Any] | None = None,
        cancel_event: threading.Event | None = None,
    ) -> dict[str, Any]:
        """``request`` on the caller's ``deadline`` (every step it causes stays on it)."""
        conn = self._connection(deadline)
        if method == "tools/call" or not self.cache_results:  # never cached: skip the key
            return self._request_once(conn, deadline, method, params, on_progress, cancel_event)
        key = _cache.cache_key(method, params)
        if key is not None and conn.info is not None and conn.info.era == "stateless":
            with self._results_lock:
                cached = self._results.get(key, time.monotonic())
            if cached is not None:
                return cached
            result = self._request_once(conn, deadline, method, params, on_progress, cancel_event)
            with self._results_lock:
                self._results.put(key, result, time.monotonic())
            return result
        return self._request_once(conn, deadline, method, params, on_progress, cancel_event)

    def _request_once(
        self,
        conn: Connection,
        deadline: Deadline,
        method: str,
        params: dict[str, Any] | None,
        on_progress: Callable[[Progress], Any] | None,
        cancel_event: threading.Event | None = None,
        relayed: bool = False,
    ) -> dict[str, Any]:
        try:
            result = self._call(conn, deadline, method, params, on_progress, cancel_event, relayed)
            return _not_a_task(method, result) if "resultType" in result else result
        except SessionExpired as exc:
            if not self.auto_reconnect:
                raise  # its owner (a Hub) reconnects: this request's own refusal says so
            first: McpError = exc
            log.info("session with %r expired; re-initializing and retrying %s", self.name, method)
        except ConnectionClosed as exc:
            first = exc
            if getattr(exc, "unsent", False) and self.auto_reconnect:
                # The server died before the request could be written: nothing reached it,
                # so the request goes to a new connection (started by _connection()).
                conn.lost(exc)
                log.info("MCP server %r is gone; reconnecting to send %s", self.name, method)
            else:
                stateless = conn.info is not None and conn.info.era == "stateless"
                if not (stateless and self._reissue_broken and conn.alive and conn is self._conn):
                    raise
                log.info("the answer stream of %s to %r broke; re-issuing it", method, self.name)
        except (AuthRequired, ConnectError) as exc:
            if not (self.auto_reconnect and helper_refused(self.target, exc)):
                raise
            first = exc
            # Its headersHelper's token was refused (expired, rotated): a new connection
            # runs the helper again; nothing ran on the server, so the request is re-sent.
            conn.close("the server refused the headers; reconnecting with new ones")
            log.info("MCP server %r refused its headers; re-running its headersHelper", self.name)
        # The one retry (and the reconnect or re-initialize before it) is on the same deadline.
        # Its errors name the phase and carry the first failure, which is why it retried.
        phase = f"retrying {method}"
        if deadline.expired():
            raise deadline.error(
                phase, f"no time was left for it (MCP server {self.name!r}: {first})"
            ) from first
        try:
            retried = self._call(
                self._connection(deadline),
                deadline,
                method,
                params,
                on_progress,
                cancel_event,
                relayed,
            )
        except ConnectionClosed as exc:
            again = type(exc)(f"{phase}: {exc.args[0]}", exc.exit_code, exc.stderr_tail)
            raise again from exc
        return _not_a_task(method, retried)

    def _call(
        self,
        conn: Connection,
        deadline: Deadline,
        method: str,
        params: dict[str, Any] | None,
        on_progress: Callable[[Progress], Any] | None,
        cancel_event: threading.Event | None,
        relayed: bool = False,
    ) -> dict[str, Any]:
        """One blocking round trip on ``conn`` (no Future, no deadline thread)."""
        info = conn.info
        assert info is not None
        if info.era == "stateless":  # (only that era removed methods)
            proto.check_method_allowed(method, info)
        return conn.call(
            method,
            params,
            deadline=deadline,
            max_total_timeout=self.max_total_timeout if self.reset_timeout_on_progress else None,
            on_progress=on_progress,
            reset_on_progress=self.reset_timeout_on_progress,
            cancel_event=cancel_event,
            relayed=relayed,
        )

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (no answer expected)."""
        self._connection().notify(method, params)

    def _timeout(self, timeout: float | None) -> float:
        if timeout is None:
            return self.timeout
        if timeout <= 0:
            raise ConfigError("timeout must be a positive number of seconds")
        return float(timeout)

    def _session(self, deadline: Deadline) -> SessionInfo:
        """``session`` on the caller's deadline (connecting when needed)."""
        info: SessionInfo = self._connection(deadline).info  # type: ignore[assignment]
        self._last_session = info
        return info

    def _list_all(self, method: str, key: str, capability: str, deadline: Deadline) -> list[Any]:
        info = self._session(deadline)
        if info.era == "handshake" and capability not in info.capabilities:
            return []  # the server has none of these; asking would only get an error
        items: list[Any] = []
        for result in self._pages(deadline, method):
            page = result.get(key, [])
            if not isinstance(page, list):
                raise RemoteProtocolError(f"{method}: {key!r} is not a list")
            items.extend(page)
        return items

    def _pages(self, deadline: Deadline, method: str) -> Iterator[dict[str, Any]]:
        """Every page of ``method``'s list, all on one deadline (a server handing out a new
        cursor every page ends at it, as a ``RequestTimeout`` naming the page)."""
        phase = "listing " + _LISTS.get(method, method)
        pager = proto.Pager(method, max_pages=self.max_pages)
        page = 1
        while not pager.done:
            if page > 1:
                deadline.check(phase, f"page {page} was not reached")
            try:
                result = self._request(deadline, method, pager.params())
            except RequestTimeout as exc:
                if not deadline.expired():
                    raise  # a cap of a lower step, not the list's deadline: as it is
                raise deadline.error(
                    phase, f"page {page} got no answer from MCP server {self.name!r}"
                ) from exc
            yield result
            pager.advance(result)
            page += 1

    def _listen(self, deadline: Deadline) -> None:
        """(Re)open the 2026-07-28 ``subscriptions/listen`` stream for our subscriptions and
        wait for its acknowledgement, on the caller's ``deadline``."""
        conn = self._connection(deadline)
        with self._lock:
            old, uris = self._listen_future, sorted(self._subscriptions)
            self._listen_future = None
        if old is not None and not old.done():
            old.cancel()
        if not uris:
            return
        params = {
            "notifications": {
                "toolsListChanged": True,
                "promptsListChanged": True,
                "resourcesListChanged": True,
                "resourceSubscriptions": uris,
            }
        }
        # A listen stream lasts as long as the connection: its deadline is a day. The
        # caller's deadline bounds the wait for its acknowledgement.
        future = conn.submit("subscriptions/listen", params, deadline=Deadline.after(86400.0))
        with self._lock:
            self._listen_future = future
        self._listen_acks.wait(future, uris, deadline, self.name)

    def _restore_subscriptions(self, deadline: Deadline) -> None:
        try:
            if self._session(deadline).era == "stateless":
                self._listen(deadline)
            else:
                for uri in sorted(self._subscriptions):
                    self._request(deadline, "resources/subscribe", {"uri": uri})
        except McpError as exc:
            log.warning("could not restore subscriptions on %r: %s", self.name, exc)
