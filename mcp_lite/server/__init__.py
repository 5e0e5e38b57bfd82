"""A small MCP server for demos, tests and in-process use — a correct peer for both eras.

The package, bottom up (each module imports only the ones before it):

- ``_tools``: turns plain functions into tools, resources and prompts (the registry);
- ``_context``: the ``Context`` a handler gets, the request record, the worker pool;
- ``_connection``: ``ServerConnection``, the JSON-RPC session with one client;
- ``_http``: Streamable HTTP at ``/mcp`` (stdlib ``http.server``, threads);
- ``_server``: ``Server``, the registration decorators, ``run_stdio()`` and ``run_http()``.
"""

from __future__ import annotations

from ._connection import ServerConnection
from ._context import Context
from ._http import HttpServer
from ._server import Server

__all__ = ["Context", "HttpServer", "Server", "ServerConnection"]
