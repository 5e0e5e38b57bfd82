"""``Gateway``: one Hub's servers, served to every process of the machine on a Unix socket
(``mcp-lite gateway``). Only ``Gateway`` is public (also as ``mcp_lite.Gateway``); the
modules here hold the server and its endpoints, the forwarding of requests, the server's
requests routed back to their worker (``asks``), resource subscriptions, task ownership,
the socket's folder checks and the start-failure ledger. See
``docs/explanation/inside-the-hub.md``."""

from __future__ import annotations

from .server import Gateway

__all__ = ["Gateway"]
