"""How the Hub finds things on its servers (``ToolLookup``, a base of ``Hub``): the pool of
tools, resources and prompts (each server's list from the catalogue or the server, within
the operation's deadline), the LLM-safe name aliases, and resolving a tool's name to its
server and tool (with a per-server name index and a bounded memo of resolved names)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .._accel import normalize_name
from .._deadline import Deadline
from ..errors import (
    ConfigError,
    ConnectionClosed,
    InvalidRequest,
    McpError,
    PermissionDenied,
    TransportError,
)
from ..protocol.tool_specs import for_model
from ._ambient_deadline import _current
from ._for_model import own_tools as own
from ._for_model.llm_names import llm_names
from ._for_model.permissions import Permissions
from ._for_model.tools import (
    Catalog,
    McpResource,
    McpTool,
    to_mcp_prompt,
    to_mcp_resource,
    to_mcp_tool,
)
from ._runtime.connections import Connections, capped

if TYPE_CHECKING:
    from ..client import Client

__all__ = ["ToolLookup"]

log = logging.getLogger("mcp_lite.hub")
_T = TypeVar("_T")
_MAX_RESOLVED = 4096  # qualified names whose server the Hub remembers (cleared on update)
_MAX_INDEXES = 4096  # servers whose tool-name index the Hub keeps (cleared on update)
OWN_TOOLS = (*own.RESOURCE_TOOLS, own.TOOL_SEARCH)


class ToolLookup:
    """Lists and name resolution of ``Hub`` (which sets the caches and parts declared here)."""

    _aliases: dict[str, tuple[str, str]]
    _catalog: Catalog
    _conns: Connections
    _indexes: dict[str, tuple[tuple[McpTool, ...], dict[str, list[McpTool]]]]
    _permissions: Permissions
    _resolved: dict[str, tuple[str, str]]

    def _headers_refused(self, server: str, exc: McpError) -> bool:
        raise NotImplementedError

    def _offered(self, deadline: Deadline | None = None) -> list[McpTool]:
        """The pool minus what a deny rule refuses, through the model filter (``for_model``)."""
        deny = self._permissions.denied_by_rule
        return for_model(
            t for t in self._pool("tools", deadline) if not deny(t.server, t.tool_name)
        )

    def _llm_names(self, tools: list[McpTool]) -> list[str]:
        """LLM-safe names for ``tools``; the ones that differ are remembered for call_tool."""
        names = llm_names(tools, reserved=OWN_TOOLS)
        self._aliases = {
            n: (t.server, t.tool_name) for n, t in zip(names, tools, strict=True) if n != t.name
        }
        return names

    def _visible_resources(self, deadline: Deadline | None = None) -> list[McpResource]:
        hidden = self._permissions.server_denied
        return [r for r in self._pool("resources", deadline) if not hidden(r.server)]

    def _pool(
        self, kind: Literal["tools", "resources", "prompts"], deadline: Deadline | None = None
    ) -> list[Any]:
        deadline = _current(deadline)
        self._conns.connect_all(deadline=deadline)
        out: list[Any] = []
        for name, status in self._conns.status().items():
            if status.state in ("connected", "pending", "idle"):
                out.extend(self._server_list(kind, name, deadline))
        return for_model(out) if kind == "tools" else out

    def _server_list(
        self,
        kind: Literal["tools", "resources", "prompts"],
        name: str,
        deadline: Deadline | None = None,
        *,
        strict: bool = False,
        retried: bool = False,
    ) -> list[Any]:
        """One server's list from the cache or the server, within ``deadline`` (capped by
        the client's timeout, a list's total); [] when it cannot be had, unless ``strict``
        (then the connection's or the list's error is raised). Through the gateway, a
        refusal that ran nothing (it restarted) is retried once on a new connection."""
        deadline = _current(deadline)
        if self._conns.stopped(name):  # recycled: its lists hold until it starts again
            cached = self._catalog.cached(kind, name)
            if cached is not None:
                return cached
        try:
            lease = self._conns.lease(name, deadline)
        except McpError:
            if strict:
                raise
            return []
        with lease as client:

            def fetch() -> list[Any]:
                within = capped(deadline, client.timeout)
                if kind == "tools":
                    return [to_mcp_tool(name, t) for t in client._list_tools(within)]
                if kind == "resources":
                    return [to_mcp_resource(name, r) for r in client._list_resources(within)]
                return [to_mcp_prompt(name, p) for p in client._list_prompts(within)]

            try:
                return self._catalog.get(kind, name, fetch)
            except (TransportError, InvalidRequest) as exc:
                if not retried and self._headers_refused(name, exc):
                    return self._relisted(kind, name, client, deadline, strict)
                if self._conns.through_gateway(name):
                    phase = f"listing the {kind} of MCP server {name!r}"
                    error = self._conns.lost_through_gateway(name, client, exc, phase)
                    if error is None and not retried:  # the gateway restarted: once more
                        return self._server_list(kind, name, deadline, strict=strict, retried=True)
                    if strict:
                        raise (error or exc) from None
                    return []
                if not isinstance(exc, ConnectionClosed):
                    if strict:
                        raise
                    log.warning("MCP server %r: could not list %s: %s", name, kind, exc)
                    return []
                self._conns.connection_lost(name, client)
                if strict:
                    raise
            except McpError as exc:
                if not retried and self._headers_refused(name, exc):
                    return self._relisted(kind, name, client, deadline, strict)
                if strict:
                    raise
                log.warning("MCP server %r: could not list %s: %s", name, kind, exc)
        return []

    def _relisted(
        self,
        kind: Literal["tools", "resources", "prompts"],
        name: str,
        client: Client,
        deadline: Deadline | None,
        strict: bool,
    ) -> list[Any]:
        """The list again on a new connection, whose headersHelper runs again (the server
        refused the headers it made last)."""
        self._conns.connection_lost(name, client)
        log.info("MCP server %r refused its headers; re-running its headersHelper", name)
        return self._server_list(kind, name, deadline, strict=strict, retried=True)

    def _app_tool(self, server: str, name: str, deadline: Deadline | None) -> McpTool:
        """The tool an app of ``server`` may call by ``name`` (see ``app_call_tool``)."""
        found: list[McpTool] = []
        for attempt in range(2):  # a miss on a cached list: fetch it anew once
            if attempt:
                self._catalog.invalidate(server, "tools")
            tools = self._server_list("tools", server, deadline, strict=True)
            found = [t for t in tools if name in (t.tool_name, t.name)]
            if found:
                break
        if not found:
            try:
                other = self._resolve(name)[0]
            except ConfigError:
                other = server
            if normalize_name(other) != normalize_name(server):
                raise PermissionDenied(
                    f"an app of MCP server {server!r} may call only that server's tools, "
                    f"not {name!r} of {other!r}",
                    name,
                )
            raise ConfigError(f"MCP server {server!r} has no tool {name!r}")
        # the server's own name first: "a.b" is its tool, not the one normalized to it
        tool = min(found, key=lambda t: t.tool_name != name)
        ui = tool.ui
        if ui is not None and "app" not in ui.visibility:
            raise PermissionDenied(
                f"{tool.name} is not visible to apps (its _meta.ui.visibility is "
                f"{list(ui.visibility)!r})",
                tool.name,
            )
        return tool

    def _tool_for(self, name: str, deadline: Deadline | None = None) -> tuple[str, McpTool]:
        """The server and tool behind a qualified name or a name ``tool_definitions`` gave,
        for the model.

        Raises:
            PermissionDenied: a deny rule names it (checked before connecting), or the tool
                is visible only to apps.
            ConfigError: no such server or tool.
        """
        server, tool = self._named_tool(name, deadline)
        if not for_model([tool]):
            raise PermissionDenied(
                f"{tool.name} is visible only to apps (its _meta.ui.visibility leaves out "
                f"'model'): an app calls it through app_call_tool",
                tool.name,
            )
        return server, tool

    def _named_tool(self, name: str, deadline: Deadline | None = None) -> tuple[str, McpTool]:
        """``_tool_for`` without the visibility check."""
        hit = self._aliases.get(name)
        if hit is None:
            try:
                return self._lookup(deadline, name, *self._resolve(name))
            except ConfigError:
                # A shortened name from another process: the names are stable, recompute.
                self._llm_names(self._offered(deadline))
                hit = self._aliases.get(name)
                if hit is None:
                    raise
        server, tool_name = hit
        part = normalize_name(tool_name)
        return self._lookup(
            deadline, f"mcp__{normalize_name(server)}__{part}", server, part, tool_name
        )

    def _lookup(
        self,
        deadline: Deadline | None,
        name: str,
        server: str,
        tool_part: str,
        tool_name: str | None = None,
    ) -> tuple[str, McpTool]:
        if self._permissions.denied_by_rule(server, tool_part):
            raise PermissionDenied(f"{name} is denied by a deny rule", name)
        cached = self._catalog.peek("tools", server)
        if cached is not None and self._conns.ready(server):  # what _server_list would give
            same = self._indexed(server, cached).get(name, ())
            if tool_name is not None:
                same = [t for t in same if t.tool_name == tool_name]
            if same:
                return server, same[0]
            return server, self._find(list(cached), name, server, "tools", deadline)
        items = self._server_list("tools", server, deadline, strict=True)
        # Two tools may share a qualified name ("a.b", "a_b"): the plain name belongs to
        # the one needing no normalization, as in tool_definitions; an alias names its tool.
        same = sorted(
            (t for t in items if t.name == name and tool_name in (None, t.tool_name)),
            key=lambda t: (normalize_name(t.tool_name) != t.tool_name, t.tool_name),
        )
        return server, same[0] if same else self._find(items, name, server, "tools", deadline)

    def _indexed(self, server: str, tools: tuple[McpTool, ...]) -> dict[str, list[McpTool]]:
        """``tools`` (the cached list of ``server``) by qualified name, each name's tools in
        ``_lookup``'s order; built once per list."""
        indexes = self._indexes
        entry = indexes.get(server)
        if entry is not None and entry[0] is tools:
            return entry[1]
        index: dict[str, list[McpTool]] = {}
        for t in sorted(
            tools, key=lambda t: (normalize_name(t.tool_name) != t.tool_name, t.tool_name)
        ):
            index.setdefault(t.name, []).append(t)
        if len(indexes) >= _MAX_INDEXES:
            indexes.clear()
        indexes[server] = (tools, index)
        return index

    def _on_server(
        self, server: str, deadline: Deadline | None, work: Callable[[Client], _T]
    ) -> _T:
        """``work(client)`` on the server's connection; when the server refused the headers
        its headersHelper made, once more on a new connection (the helper runs again)."""
        for attempt in range(2):
            with self._conns.lease(server, deadline) as client:
                try:
                    return work(client)
                except McpError as exc:
                    if attempt or not self._headers_refused(server, exc):
                        raise
                    self._conns.connection_lost(server, client)
        raise AssertionError("unreachable")  # pragma: no cover

    def _resolve(self, name: str) -> tuple[str, str]:
        """``(server, tool part)`` of a qualified name: the longest configured server prefix."""
        resolved = self._resolved  # taken first: an update after this clears another dict
        hit = resolved.get(name)
        if hit is not None:
            return hit
        best: tuple[str, str] | None = None
        for server in self._conns.names():
            prefix = f"mcp__{normalize_name(server)}__"
            if name.startswith(prefix) and (best is None or len(server) > len(best[0])):
                best = (server, name[len(prefix) :])
        if best is None:
            raise ConfigError(
                f"{name!r} names no configured MCP server (expected mcp__<server>__<name>)"
            )
        if len(resolved) >= _MAX_RESOLVED:
            resolved.clear()
        resolved[name] = best
        return best

    def _find(
        self, items: list[Any], name: str, server: str, kind: str, deadline: Deadline | None
    ) -> Any:
        for item in items:
            if item.name == name:
                return item
        self._catalog.invalidate(server, kind)  # type: ignore[arg-type]
        # strict: the connection's or the list's problem is raised, if that is the cause
        for item in self._server_list(kind, server, deadline, strict=True):  # type: ignore[arg-type]
            if item.name == name:
                return item
        raise ConfigError(f"MCP server {server!r} has no {kind[:-1]} named {name!r}")
