"""A small MCP server for demos, tests and in-process use, a correct peer for both eras: ``Server``
and ``Context``; each module of the package imports only the ones below it (see
docs/explanation/server.md).
"""

from __future__ import annotations

from ._connection import ServerConnection
from ._context import Context
from ._server import Server
from .http.server import HttpServer

__all__ = ["Context", "HttpServer", "Server", "ServerConnection"]
