"""The transport interface every transport (stdio, HTTP, WebSocket, in-process) offers: it moves
framed JSON-RPC messages and reports its own death, never interpreting MCP (see
docs/explanation/architecture.md, "Transports").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .._deadline import Deadline
from ..errors import McpError, MessageTooLarge

__all__ = ["OnClose", "OnMessage", "Outgoing", "SendFailed", "Transport"]

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
    ``deadline`` (``time.monotonic()``) is the latest moment the request's caller still
    waits: a transport never sends it later, nor blocks on its behalf past it. ``inline``
    says the sending thread is the caller itself, blocked until the answer: a transport may
    do the whole exchange on it (HTTP POSTs there instead of handing off to a worker).
    """

    payload: dict[str, Any]
    data: bytes
    # ``time.monotonic()`` by which the write must be done; None: the transport's own bound.
    deadline: float | None = None
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
    """See the module docstring for the contract."""

    def start(
        self, on_message: OnMessage, on_close: OnClose, *, deadline: Deadline | None = None
    ) -> None: ...

    def send(self, message: Outgoing) -> None: ...

    def close(self) -> None: ...
