"""The transport interface: ``Transport`` declares everything the connection and the client
call on a transport (``start``, ``send``, ``close``; the lead of stdio, ``negotiated``,
``cancel_request``, ``dead``, ``pid``, ``session_id``), ``TransportBase`` gives the optional
ones their defaults, and ``Outgoing`` is one message with its caller's ``Deadline``. The
contract in full: ``docs/explanation/inside-the-connection.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .._deadline import Deadline
from ..errors import McpError, MessageTooLarge

__all__ = ["OnClose", "OnMessage", "Outgoing", "SendFailed", "Transport", "TransportBase"]

# One complete incoming frame: a JSON object or (2025-03-26) a JSON array, undecoded; or a
# MessageTooLarge standing for a frame over the size limit that was dropped (its ``head``
# lets the session fail the one request it answered and keep the connection).
OnMessage = Callable[["bytes | MessageTooLarge | SendFailed"], None]
OnClose = Callable[[McpError], None]


@dataclass(frozen=True, slots=True)
class SendFailed:
    """The request with ``request_id`` failed in the transport (e.g. HTTP 500): ``error``."""

    request_id: int | str
    error: McpError


@dataclass(slots=True)  # not frozen: built once per message, and a frozen init costs twice
class Outgoing:
    """One outgoing message: its JSON object and the same object encoded.

    ``data`` is UTF-8 JSON ending in a newline (stdio writes it as is). ``payload`` lets a
    transport read routing facts (``method``, ``id``, ``params.name``) without re-parsing.
    ``deadline`` (the caller's ``Deadline``) is the latest moment the request's caller still
    waits: a transport never sends it later, nor blocks on its behalf past it. ``inline``
    says the sending thread is the caller itself, blocked until the answer: a transport may
    do the whole exchange on it (HTTP POSTs there instead of handing off to a worker).
    """

    payload: dict[str, Any]
    data: bytes
    # The deadline by which the write must be done; None: the transport's own bound.
    deadline: Deadline | None = None
    # True once the caller gave up (timed out, cancelled): then nothing is sent.
    given_up: Callable[[], bool] | None = None
    # True when the sending thread is the caller itself, blocked until the answer: a
    # transport may do the whole exchange on it (HTTP POSTs there, no worker hand-off).
    inline: bool = False

    def abandoned(self) -> bool:
        """True when the caller no longer waits for this message: do not send it."""
        return self.given_up is not None and self.given_up()

    @property
    def is_request(self) -> bool:
        return "method" in self.payload and "id" in self.payload

    @property
    def is_notification(self) -> bool:
        return "method" in self.payload and "id" not in self.payload


class Transport(Protocol):
    """See the module docstring for the contract: the three calls every transport makes
    real, then what the connection and the client also call (``TransportBase``'s
    defaults do nothing)."""

    def start(
        self, on_message: OnMessage, on_close: OnClose, *, deadline: Deadline | None = None
    ) -> None: ...

    def send(self, message: Outgoing) -> None: ...

    def close(self) -> None: ...

    # True when a blocking caller may read its own answer on its thread (``lead``).
    can_lead: bool

    def lead(self, stop: Callable[[], bool], deadline: Deadline, cap: float = 0.5) -> bool: ...

    def want_reader(self, wanted: bool) -> None: ...

    def negotiated(self, protocol_version: str) -> None: ...

    def cancel_request(self, request_id: int | str) -> bool: ...

    def dead(self) -> McpError | None: ...

    @property
    def pid(self) -> int | None: ...

    @property
    def session_id(self) -> str | None: ...


class TransportBase:
    """The defaults of ``Transport``'s optional members: a transport that does not lead,
    negotiates nothing, cancels with ``notifications/cancelled``, has no process and no
    session. A transport inherits it and overrides what it does."""

    can_lead = False

    def lead(self, stop: Callable[[], bool], deadline: Deadline, cap: float = 0.5) -> bool:
        """Read one's own answer on the calling thread until ``stop()`` or ``deadline``;
        False: this transport cannot (the caller waits for the reader thread)."""
        return False

    def want_reader(self, wanted: bool) -> None:
        """Whether the reader thread must read (True) or a leader may (False)."""

    def negotiated(self, protocol_version: str) -> None:
        """The handshake agreed on ``protocol_version``."""

    def cancel_request(self, request_id: int | str) -> bool:
        """Cancel ``request_id`` the transport's own way; True: no notification needed."""
        return False

    def dead(self) -> McpError | None:
        """A death the reader has not reported yet (no I/O, no system call); None: none."""
        return None

    @property
    def pid(self) -> int | None:
        """The server's process id (stdio), else None."""
        return None

    @property
    def session_id(self) -> str | None:
        """The server's session id (Streamable HTTP), else None."""
        return None
