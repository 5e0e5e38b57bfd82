"""How the Hub opens a ``Client`` for one server (``OpenClient``, the default
``_open_client``): the entry's target and options, with the attempt's deadline
handed over under ``DEADLINE_OPTION``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._deadline import Deadline
from .spec import Spec

if TYPE_CHECKING:
    from ...client import Client

__all__ = ["DEADLINE_OPTION", "OpenClient"]


# The options key that hands an attempt's deadline to ``open_client`` (popped there).
DEADLINE_OPTION = "_deadline"


OpenClient = Callable[[Spec, dict[str, Any]], "Client"]


def _open_client(spec: Spec, options: dict[str, Any]) -> Client:
    from ...client import Client

    # The attempt's deadline (the caller's, capped by connect_timeout / MCP_TIMEOUT) bounds
    # the start and the handshake; requests keep the client's `timeout`.
    deadline: Deadline | None = options.pop(DEADLINE_OPTION, None)
    connect_timeout = options.pop("connect_timeout", None)
    client = Client(spec.target, auto_reconnect=False, **options)
    if deadline is None:
        deadline = Deadline.after(connect_timeout if connect_timeout else client.timeout)
    try:
        client._connect_by(deadline)
    except BaseException:
        client.close()
        raise
    return client
