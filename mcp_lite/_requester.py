"""What the extensions (tasks, skills) need of a client: a small protocol, not ``Client``.

``mcp_lite.tasks`` and ``mcp_lite.skills`` are written against ``Requester`` so that they sit
below ``client.py`` (which calls them) instead of beside it; ``Client`` is the one
implementation. A running ``Task`` also needs the client's default timeout and its handlers
(to answer a task's input requests): ``TaskRequester``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .protocol.session import SessionInfo

__all__ = ["Answerer", "Requester", "TaskRequester"]


class Requester(Protocol):
    """One server's session and a blocking request on it."""

    @property
    def name(self) -> str: ...

    @property
    def max_pages(self) -> int: ...

    @property
    def session(self) -> SessionInfo: ...

    @property
    def server_capabilities(self) -> dict[str, Any]: ...

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]: ...


class Answerer(Protocol):
    """Answers one server-to-client request with the client's handlers (a connection)."""

    def fulfil(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...


class TaskRequester(Requester, Protocol):
    """A ``Requester`` that a ``Task`` can wait on."""

    def _timeout(self, timeout: float | None) -> float: ...

    def _connection(self) -> Answerer: ...
