"""``Requester`` and ``TaskRequester``: the small protocol the extensions (``tasks``,
``skills``) need of a client, so they sit below ``client.py`` rather than beside it;
``Client`` is the one implementation, and every blocking step runs on the caller's one
``Deadline``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._deadline import Deadline
    from .protocol.session import SessionInfo
    from .transports.base import Transport

__all__ = ["Answerer", "Requester", "TaskRequester"]


class Requester(Protocol):
    """One server's session and blocking requests on it, each on a caller's deadline."""

    @property
    def name(self) -> str: ...

    @property
    def session(self) -> SessionInfo: ...

    def _session(self, deadline: Deadline) -> SessionInfo: ...

    def _timeout(self, timeout: float | None) -> float: ...

    def _request(
        self, deadline: Deadline, method: str, params: dict[str, Any] | None
    ) -> dict[str, Any]: ...

    def _pages(self, deadline: Deadline, method: str) -> Iterator[dict[str, Any]]: ...


class Answerer(Protocol):
    """Answers one server-to-client request with the client's handlers (a connection)."""

    def fulfil(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...


class TaskRequester(Requester, Protocol):
    """A ``Requester`` that a ``Task`` can wait on."""

    def _timeout(self, timeout: float | None) -> float: ...

    def _connection(self, deadline: Deadline | None = None) -> Answerer: ...

    @property
    def transport(self) -> Transport | None: ...
