"""``Server``: what is registered (tools, resources, templates, prompts, a completion function)
and the ways to serve it (``run_stdio()``, ``run_http()``, ``serve_http()``, in-process), with
server-to-client requests made by re-execution in the stateless era (see
docs/explanation/server.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from .._text import plural
from ..protocol import versions as pv
from ..protocol.extensions import check_extensions
from ._connection import ServerConnection
from ._context import Context, F, RoutedSend, Send
from ._prompt_specs import PromptSpec
from ._registry import Registry
from ._resource_specs import TemplateSpec, build_resource
from ._tool_specs import ToolSpec
from .http.endpoint import MAX_BODY
from .http.server import HttpServer

__all__ = ["Context", "Server", "ServerConnection"]


class Server:
    """A small MCP server: register handlers with the decorators, then serve.

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        instructions: optional guidance for the client's LLM.
        versions: protocol versions spoken (default: every version mcp_lite knows).
        page_size: when set, list results are paginated with opaque cursors.
        client_request_timeout: seconds a handler waits for the client's answer to a
            server → client request (handshake era) before ``RequestTimeout``.
        extensions: ``{id: settings}`` declared in ``capabilities.extensions`` as given,
            besides the ones the server's registrations imply (skills, tasks); a handler
            reads the client's in ``ctx.client_capabilities["extensions"]``.

    Raises:
        ValueError: an unknown protocol version, or an empty ``versions``.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        instructions: str | None = None,
        versions: tuple[str, ...] | list[str] | None = None,
        page_size: int | None = None,
        client_request_timeout: float = 60.0,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        chosen = tuple(pv.SUPPORTED_VERSIONS if versions is None else versions)
        unknown = [v for v in chosen if v not in pv.SUPPORTED_VERSIONS]
        if unknown or not chosen:
            raise ValueError(
                f"unsupported protocol versions {unknown or chosen!r}; "
                f"known: {pv.SUPPORTED_VERSIONS}"
            )
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.name = name
        self.version = version
        self.instructions = instructions
        self.versions = tuple(v for v in pv.SUPPORTED_VERSIONS if v in chosen)
        self.page_size = page_size
        self.client_request_timeout = client_request_timeout
        self._registry = Registry(page_size)
        # declared as given ({id: settings}); the client's are in ctx.client_capabilities
        self._registry.extensions = check_extensions(extensions)
        self._connections: set[ServerConnection] = set()
        self._lock = threading.Lock()
        self._secret = os.urandom(32)

    # --- registration ----------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        annotations: dict[str, Any] | None = None,
        *,
        input_schema: dict[str, Any] | None = None,
        task_support: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Register a tool; ``inputSchema`` from the signature, description from the docstring.

        ``input_schema`` publishes a hand-written schema verbatim instead (any JSON Schema
        2020-12, e.g. with ``x-mcp-header`` annotations); arguments are still validated
        against the function's signature.

        ``task_support`` (``"optional"`` or ``"required"``) publishes
        ``execution.taskSupport``: the call may (must) run as a task — 2025-11-25
        ``params.task``, or the 2026-07-28 extension ``io.modelcontextprotocol/tasks`` (the
        server makes a task of a ``"required"`` tool for a client declaring the extension).

        ``meta`` is published as the tool's ``_meta`` (e.g. MCP Apps'
        ``{"ui": {"resourceUri": "ui://...", "visibility": ["app"]}}``).

        A parameter annotated ``Context`` is injected and left out of the schema. See
        ``server._tool_specs.ToolSpec`` for how the return annotation maps to ``outputSchema``.
        Exceptions become ``isError`` results, except ``RpcError``s, which are sent as
        JSON-RPC errors.
        """
        if callable(name):  # bare ``@server.tool``
            fn, name = name, None
            self.tool()(fn)
            return fn

        def decorator(fn: F) -> F:
            spec = ToolSpec.build(
                fn,
                Context,
                name,
                description,
                title,
                annotations,
                input_schema,
                task_support,
                meta,
            )
            with self._registry.lock:
                self._registry.tools[spec.name] = spec
            return fn

        return decorator

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (then call ``notify_tools_changed()``); unknown names are ignored."""
        with self._registry.lock:
            self._registry.tools.pop(name, None)

    def resource(
        self,
        uri: str,
        name: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
    ) -> Callable[[F], F]:
        """Register a resource, or a URI template when ``uri`` contains ``{var}``.

        The function returns ``str`` (text; ``mime_type`` defaults to ``text/plain``),
        ``bytes`` (a base64 blob) or a dict with ``contents``. A template's variables are
        passed as keyword arguments. Raise ``ResourceNotFound`` for a URI that matches a
        template but names nothing.
        """

        def decorator(fn: F) -> F:
            spec = build_resource(fn, Context, uri, name, title, description, mime_type)
            with self._registry.lock:
                if isinstance(spec, TemplateSpec):
                    self._registry.templates[spec.uri_template] = spec
                else:
                    self._registry.resources[spec.uri] = spec
            return fn

        return decorator

    def prompt(
        self, name: str | None = None, description: str | None = None, title: str | None = None
    ) -> Callable[[F], F]:
        """Register a prompt: arguments from the signature; returns a str or a message list."""

        def decorator(fn: F) -> F:
            spec = PromptSpec.build(fn, Context, name, title, description)
            with self._registry.lock:
                self._registry.prompts[spec.name] = spec
            return fn

        return decorator

    def add_skill(self, directory: str | os.PathLike[str], *, path: str | None = None) -> str:
        """Publish the skill in ``directory`` (a ``SKILL.md`` and its files); returns its URI.

        The skill is served at ``skill://<path>/SKILL.md`` (``path`` defaults to the skill's
        ``name``; a longer path must end with it) through ``skills/list``, ``skills/get`` and
        ``resources/read``, with the ``io.modelcontextprotocol/skills`` extension declared.
        Files are read from disk when asked for, digests computed at listing time.

        Raises:
            ValueError: no valid ``SKILL.md`` frontmatter, or a path not ending in the name.
        """
        return self._registry.skills.add(directory, path)

    def completion(self) -> Callable[[F], F]:
        """Register ``fn(ref, argument, context) -> list[str]`` for ``completion/complete``.

        ``ref`` is ``{"type": "ref/prompt", "name"}`` or ``{"type": "ref/resource", "uri"}``,
        ``argument`` is ``{"name", "value"}``, ``context`` is ``{"arguments": {...}}`` or None.
        """

        def decorator(fn: F) -> F:
            self._registry.completion = fn
            return fn

        return decorator

    # --- serving ---------------------------------------------------------------------

    def __repr__(self) -> str:
        reg = self._registry
        parts = [
            plural(len(reg.tools), "tool"),
            plural(len(reg.resources), "resource"),
            plural(len(reg.templates), "resource template"),
            plural(len(reg.prompts), "prompt"),
        ]
        return f"<mcp_lite.Server {self.name!r} {self.version}: {', '.join(parts)}>"

    def open_connection(self, send: Send | RoutedSend, *, routed: bool = False) -> ServerConnection:
        """A new connection whose outgoing messages go to ``send`` (one JSON-RPC dict each).

        ``send`` is called under the connection's write lock, from worker threads and from
        the thread calling ``receive()``; it must not call back into the connection. With
        ``routed=True`` it is called as ``send(message, related)``, ``related`` being the
        key of the request the message belongs to (None for none).
        """
        conn = ServerConnection(self, send, routed=routed)
        with self._lock:
            self._connections.add(conn)
        return conn

    def run_stdio(self) -> None:
        """Serve one client on stdin/stdout (NDJSON) until stdin reaches EOF.

        While serving, ``sys.stdout`` points at stderr so a stray ``print`` cannot corrupt
        the protocol stream. At EOF new requests are refused, in-flight ones get up to one
        second to finish, and the function returns.
        """
        out = sys.stdout
        stdin = sys.stdin
        write_lock = threading.Lock()

        def send(msg: dict[str, Any]) -> None:
            line = json.dumps(msg, separators=(",", ":")) + "\n"
            with write_lock:
                out.write(line)
                out.flush()

        conn = self.open_connection(send)
        with contextlib.redirect_stdout(sys.stderr):
            try:
                for line in stdin:
                    if line.strip():
                        conn.receive(line)
            finally:
                conn.close(timeout=1.0)

    def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        stateless: bool = False,
        *,
        max_body_size: int = MAX_BODY,
        socket: str | os.PathLike[str] | None = None,
        socket_mode: int = 0o600,
    ) -> HttpServer:
        """Start serving Streamable HTTP at ``http://host:port/mcp`` on a background thread.

        Returns the running ``HttpServer`` (``.url``, ``.port``, ``close()``, a context
        manager); ``port=0`` picks a free port. ``stateless=True`` keeps no handshake-era
        sessions (no ``Mcp-Session-Id``, no GET stream); 2026-07-28 requests are stateless
        either way. Request bodies above ``max_body_size`` bytes are refused with 413.

        ``socket="/path/srv.sock"`` serves the same endpoint (``/mcp``) on a Unix domain
        socket instead of TCP (``host``/``port`` unused; clients connect to
        ``unix:///path/srv.sock``). The file is created with ``socket_mode`` (0600: only this
        user) and is never briefly more open; a stale socket file left by a dead server is
        replaced, a live one or another kind of file raises ``FileExistsError``; ``close()``
        removes the file.
        """
        if socket is not None:
            return HttpServer(
                self,
                "",
                0,
                stateless,
                max_body_size,
                socket_path=os.fspath(socket),
                socket_mode=socket_mode,
            )
        return HttpServer(self, host, port, stateless, max_body_size)

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        stateless: bool = False,
        *,
        max_body_size: int = MAX_BODY,
        socket: str | os.PathLike[str] | None = None,
        socket_mode: int = 0o600,
    ) -> None:
        """Serve Streamable HTTP at ``http://host:port/mcp`` (or on the Unix socket
        ``socket``) until interrupted (Ctrl-C).

        See ``serve_http`` for the options; the URL is printed on stderr.
        """
        http = self.serve_http(
            host,
            port,
            stateless,
            max_body_size=max_body_size,
            socket=socket,
            socket_mode=socket_mode,
        )
        print(f"mcp-lite: server {self.name!r} on {http.url}", file=sys.stderr, flush=True)
        try:
            http.wait()
        except KeyboardInterrupt:
            pass
        finally:
            http.close()

    def _tool_schema(self, name: str) -> dict[str, Any] | None:
        """The ``inputSchema`` of a registered tool (None when unknown)."""
        with self._registry.lock:
            spec = self._registry.tools.get(name)
        return spec.definition()["inputSchema"] if spec is not None else None

    def notify_tools_changed(self) -> None:
        """Tell every client the tool list changed."""
        self._broadcast("notifications/tools/list_changed", "toolsListChanged")

    def notify_prompts_changed(self) -> None:
        """Tell every client the prompt list changed."""
        self._broadcast("notifications/prompts/list_changed", "promptsListChanged")

    def notify_resources_changed(self) -> None:
        """Tell every client the resource list changed."""
        self._broadcast("notifications/resources/list_changed", "resourcesListChanged")

    def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed."""
        for conn in self._open():
            conn._resource_updated(uri)

    def _broadcast(self, method: str, flag: str) -> None:
        for conn in self._open():
            conn._list_changed(method, flag)

    def _open(self) -> list[ServerConnection]:
        with self._lock:
            return list(self._connections)

    def _forget(self, conn: ServerConnection) -> None:
        with self._lock:
            self._connections.discard(conn)

    def capabilities(self) -> dict[str, Any]:
        """The ``ServerCapabilities``: one entry per kind that has something registered."""
        return self._registry.capabilities()
