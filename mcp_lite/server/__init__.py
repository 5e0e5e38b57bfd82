"""A small MCP server for demos, tests and in-process use, a correct peer for both eras:
``Server`` and its decorators (``_server``), the session with one client (``_connection``),
the handler's ``Context`` (``_context``), the registry of tools, resources and prompts
(``_registry`` with ``_handlers``, ``_tool_specs``, ``_resource_specs``,
``_prompt_specs``), tasks (``_tasks``), skills (``_skills``), the signed ``requestState``
(``_request_state``) and Streamable HTTP (``http/``)."""

from __future__ import annotations

from ._connection import ServerConnection
from ._context import Context
from ._server import Server
from .http.server import HttpServer

__all__ = ["Context", "HttpServer", "Server", "ServerConnection"]
