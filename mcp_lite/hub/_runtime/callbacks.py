"""The server -> client side of the Hub's connections (``Callbacks``, a base of
``Connections``): the client options each server's connection gets (elicitation and
sampling told which server asks, the gateway's handlers, cache invalidation on
``list_changed``), and the ``subscriptions/listen`` stream a 2026-07-28 server sends its
``list_changed`` on."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ...errors import (
    ConnectionClosed,
    McpError,
)
from .elicitation import Elicitation
from .slot import _Slot
from .spec import Spec

if TYPE_CHECKING:
    from ...client import Client
    from ...protocol.types import Params
    from .._for_model.tools import Catalog

__all__ = ["Callbacks", "SamplingHandler"]

log = logging.getLogger("mcp_lite.hub")
_LISTEN_FLAGS = (
    ("toolsListChanged", "tools"),
    ("promptsListChanged", "prompts"),
    ("resourcesListChanged", "resources"),
)
_LISTEN_TIMEOUT = 86400.0  # a listen stream lasts as long as its connection
_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
SamplingHandler = Callable[[str, "Params"], Any]
"""``fn(server, params)`` for ``sampling/createMessage``: told which server asks."""


class Callbacks:
    """Client options and listen streams of ``Connections`` (which sets the parts declared here)."""

    _client_options: dict[str, Any]
    catalog: Catalog
    elicitation: Elicitation
    sampling_handler: SamplingHandler | None
    server_requests: Callable[[str], dict[str, Any]] | None

    def _listen(self, slot: _Slot, client: Client) -> None:
        """2026-07-28 servers send ``list_changed`` only on a ``subscriptions/listen`` stream:
        open one for the lists the server says can change. The stream ends when the
        connection does, which also tells us to forget the server's lists at once."""
        try:
            info = client.session
        except McpError:
            return
        if info.era != "stateless":
            return
        flags = {
            flag: True
            for flag, kind in _LISTEN_FLAGS
            if isinstance(info.capabilities.get(kind), dict)
            and info.capabilities[kind].get("listChanged")
        }
        if not flags:
            return
        try:
            future = client.submit(
                "subscriptions/listen", {"notifications": flags}, timeout=_LISTEN_TIMEOUT
            )
        except McpError as exc:
            log.debug("MCP server %r: no subscriptions/listen stream: %s", slot.spec.name, exc)
            return
        name = slot.spec.name

        def ended(future: Future[dict[str, Any]]) -> None:
            if (
                slot.client is client
                and not future.cancelled()
                and isinstance(future.exception(), ConnectionClosed)
            ):
                self.catalog.invalidate(name)

        future.add_done_callback(ended)

    def _options_for(self, spec: Spec) -> dict[str, Any]:
        options = dict(self._client_options)
        user_notify = options.pop("notification_handler", None)
        name = spec.name

        def on_notification(method: str, params: Params) -> None:
            kind = _LIST_CHANGED.get(method)
            if kind is not None:
                self.catalog.invalidate(name, kind)  # type: ignore[arg-type]
            elif method == "notifications/elicitation/complete":
                eid = getattr(params, "elicitation_id", None)
                if isinstance(eid, str):
                    self.elicitation.completed(eid)
            if user_notify is not None:
                user_notify(method, params)

        options["notification_handler"] = on_notification
        if self.elicitation.enabled and "elicitation_handler" not in options:
            options["elicitation_handler"] = lambda params: self.elicitation.answer(name, params)
        sampling = self.sampling_handler
        if sampling is not None:  # told the server, as elicitation is
            options["sampling_handler"] = lambda params: sampling(name, params)
        options.setdefault("name", name)
        if spec.timeout is not None:
            options["timeout"] = spec.timeout
        if spec.extensions:
            options["extensions"] = {**(options.get("extensions") or {}), **spec.extensions}
        if self.server_requests is not None:  # a gateway's: asked of the worker who called
            options.update(self.server_requests(name))
        return options
