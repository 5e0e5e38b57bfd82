"""A small MCP server for demos, tests and in-process use — a correct peer for both eras.

The package, bottom up (each module imports only the ones before it):

- ``_tools``: turns plain functions into tools, resources and prompts (the registry);
- ``_context``: the ``Context`` a handler gets, the request record, the worker pool;
- ``_connection``: ``ServerConnection``, the JSON-RPC session with one client;
- ``_server``: ``Server``, the registration decorators and ``run_stdio()``.
"""

from __future__ import annotations

from ._connection import ServerConnection
from ._context import Context
from ._server import Server

__all__ = ["Context", "Server", "ServerConnection"]
