"""Era negotiation: the 2026-07-28 ``server/discover`` probe and/or the ``initialize``
handshake, every step on the connect's one ``Deadline``, and what the transport is told
of the version agreed."""

from __future__ import annotations

import logging
import math
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from .._connection import Connection, Handlers
from .._deadline import Deadline
from ..errors import (
    ConnectError,
    ConnectionClosed,
    LocalProtocolError,
    McpError,
    RequestTimeout,
    RpcError,
    UnsupportedProtocolVersion,
    UnsupportedVersionError,
)
from ..protocol import session as proto
from ..protocol import versions as v
from ..protocol.jsonrpc import ErrorResponse, Response
from ..protocol.session import SessionInfo

__all__ = ["Negotiating"]

log = logging.getLogger("mcp_lite.client")


class Negotiating:
    """The probe and the handshake of a ``Client`` (a base class of it)."""

    name: str
    discover_timeout: float
    _protocol_version: str
    _era_hint: str | None
    _handlers: Handlers

    def _negotiate(self, conn: Connection, deadline: Deadline) -> SessionInfo:
        """The probe and/or the handshake, every step on the connect's one ``deadline``."""
        wanted = self._protocol_version
        # A server found to speak only the handshake era is not probed again on reconnect
        # (a probe that goes unanswered costs discover_timeout every time).
        probe = v.is_stateless(wanted) or (wanted == "auto" and self._era_hint != "handshake")
        if probe:
            info = self._discover(
                conn,
                deadline,
                v.LATEST_VERSION if wanted == "auto" else wanted,
                fallback=wanted == "auto",
            )
            if info is not None:
                self._era_hint = "stateless"
                return info
        pinned = wanted if wanted in v.HANDSHAKE_VERSIONS else None
        requested = pinned or v.LATEST_HANDSHAKE_VERSION
        params = proto.initialize_params(
            requested, self._handlers.capabilities, self._handlers.client_info
        )
        deadline.check("connecting", f"initialize was not sent to MCP server {self.name!r}")
        future = conn.submit(
            "initialize",
            params,
            deadline=deadline,
            cancel_on_timeout=False,
        )
        try:
            info = proto.accept_initialize(
                self._answer(future, deadline, "initialize"), pinned=pinned
            )
        except UnsupportedVersionError:
            if not (probe and wanted == "auto"):
                raise
            # The probe was answered after discover_timeout: the server took the 2026-07-28
            # era then and now refuses the handshake. Ask again, with what is left.
            log.info("%r refused initialize after a late discover answer; probing again", self.name)
            modern = self._discover(conn, deadline, v.LATEST_VERSION, fallback=False)
            assert modern is not None  # fallback=False raises instead
            self._era_hint = "stateless"
            return modern
        _tell_transport(conn, info)
        deadline.check(
            "connecting", f"notifications/initialized was not sent to MCP server {self.name!r}"
        )
        conn.notify("notifications/initialized", None, _write_by(deadline))
        self._era_hint = "handshake"
        return info

    def _answer(self, future: Future[dict[str, Any]], deadline: Deadline, step: str) -> Any:
        """The result of a connect step, or the connect's timeout naming the step."""
        try:
            return _wait(future, deadline.remaining())
        except RequestTimeout as exc:
            raise deadline.error(
                "connecting", f"{step} got no answer from MCP server {self.name!r}"
            ) from exc

    def _discover(
        self, conn: Connection, deadline: Deadline, version: str, *, fallback: bool
    ) -> SessionInfo | None:
        """The ``server/discover`` probe; None means "use the handshake" (only with fallback).
        With a fallback the probe waits ``discover_timeout`` at most, and never more than half
        of what is left of the connect's deadline (the handshake gets the rest)."""
        refused: str | None = None
        for _ in range(2):  # at most one retry with a version the server names
            params = proto.add_stateless_meta(
                {},
                version=version,
                capabilities=self._handlers.capabilities,
                client_info=self._handlers.client_info,
            )
            deadline.check(
                "connecting", f"server/discover was not sent to MCP server {self.name!r}"
            )
            left = deadline.remaining()
            limit = min(self.discover_timeout, left / 2) if fallback else left
            future = conn.submit("server/discover", params, deadline=Deadline.after(limit))
            event: Response | ErrorResponse | None
            try:
                event = Response(0, _wait(future, limit))
            except RequestTimeout as exc:
                if not fallback or deadline.expired():
                    raise deadline.error(
                        "connecting", f"server/discover got no answer from MCP server {self.name!r}"
                    ) from exc
                event = None
            except McpError as exc:
                if isinstance(exc, ConnectionClosed):
                    raise
                if not fallback and not isinstance(exc, RpcError):
                    # Pinned: no older era to try, so the refusal itself (an HTTP status, a
                    # Retry-After that does not fit) is the answer, with its phase.
                    raise ConnectError(
                        f"connecting: server/discover to MCP server {self.name!r} failed: {exc}"
                    ) from exc
                event = ErrorResponse(None, exc) if isinstance(exc, RpcError) else None
            outcome = proto.discover_outcome(event, version)
            if outcome.kind == "stateless" and outcome.session is not None:
                _tell_transport(conn, outcome.session)
                return outcome.session
            if outcome.kind == "retry" and outcome.version:
                refused, version = version, outcome.version
                continue
            refused = None
            break
        if refused is not None:  # refused again after the retry: a modern server, no fallback
            raise UnsupportedProtocolVersion(
                f"MCP server {self.name!r} refused protocol version {refused!r} twice",
                refused,
                v.STATELESS_VERSIONS,
            )
        if not fallback:
            raise LocalProtocolError(
                f"MCP server {self.name!r} does not speak protocol {version} (pinned)"
            )
        return None


def _wait(future: Future[dict[str, Any]], limit: float) -> dict[str, Any]:
    """The future's result. The deadline thread completes it at its deadline; this wait's
    own bound only guards against a bug there, so it is generous."""
    backstop = limit + 30.0
    try:
        return future.result(None if backstop > threading.TIMEOUT_MAX else backstop)
    except FutureTimeout as exc:
        if isinstance(exc, McpError):  # our own RequestTimeout is a TimeoutError too
            raise
        raise RequestTimeout(f"no answer within {limit:g} s", limit) from None


def _write_by(deadline: Deadline) -> Deadline | None:
    """``deadline`` as a transport's write bound (None: no deadline, its own bound)."""
    return None if math.isinf(deadline.at) else deadline


def _tell_transport(conn: Connection, info: SessionInfo) -> None:
    """The transport hears the agreed version (HTTP sends it as a header from now on)."""
    conn.transport.negotiated(info.protocol_version)
