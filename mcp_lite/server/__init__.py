"""A small MCP server for demos, tests and in-process use — a correct peer for both eras.

The package, bottom up (each module imports only the ones before it):

- ``_skills``: skills published from directories (extension ``io.modelcontextprotocol/skills``);
- ``_context``: the ``Context`` a handler gets, the request record, the worker pool;
- ``_state``: the signed ``requestState`` of 2026-07-28 multi round-trip requests;
- ``_tasks``: tool calls run as tasks (2025-11-25 core, 2026-07-28 extension);
- ``_tools``: turns plain functions into tools, resources and prompts (the registry);
- ``_connection``: ``ServerConnection``, the JSON-RPC session with one client;
- ``_http_streams``, ``_http_headers``, ``_http``: Streamable HTTP at ``/mcp`` (stdlib
  ``http.server``, threads);
- ``_server``: ``Server``, the registration decorators, ``run_stdio()`` and ``run_http()``.
"""

from __future__ import annotations

from ._connection import ServerConnection
from ._context import Context
from ._server import Server
from .http.server import HttpServer

__all__ = ["Context", "HttpServer", "Server", "ServerConnection"]
