"""The Hub's own tools as the model calls them (``OwnTools``, a base of ``Hub``): reading
and listing resources and searching tools (built by ``_for_model.own_tools``, run here,
under the permissions of the model's calls), and which tools stay loaded when tool search
defers the rest."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import (
    PermissionDenied,
    RpcError,
)
from ._for_model import own_tools as own
from ._for_model.permissions import parse_rule, rules_match
from ._for_model.results import ResultProcessor
from ._for_model.search import rank_tools
from ._for_model.tools import (
    McpTool,
    ToolFormat,
    check_format,
)
from ._for_model.tools import tool_definitions as pool_definitions
from ._lookup import ToolLookup
from ._runtime.server_status import ServerStatus

if TYPE_CHECKING:
    from ..protocol.types import CallToolResult, ReadResourceResult

__all__ = ["OwnTools"]


class OwnTools(ToolLookup):
    """The Hub's own tools and deferred loading (``Hub`` sets the parts declared here)."""

    _always_load: list[tuple[str, str | None]]
    _config_always_load: dict[str, bool | frozenset[str]]
    _results: ResultProcessor
    _search_format: ToolFormat

    def status(self) -> dict[str, ServerStatus]:
        raise NotImplementedError

    def read_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None
    ) -> ReadResourceResult:
        raise NotImplementedError

    def _call_own(self, name: str, args: dict[str, Any]) -> CallToolResult:
        """Run one of the Hub's own tools (resource listing and reading, tool search). A bad
        argument from the model is an ``isError`` result the model can read (as a server
        would answer), never an exception."""
        server = args.get("server")
        known = self.status()
        if server is not None and (not isinstance(server, str) or server not in known):
            return own.refusal(f"no MCP server named {server!r}; known: {', '.join(known)}")
        if name == own.LIST_RESOURCES:
            if server is not None:  # asked before the server is reached
                self._check_own(name, server, {"server": server})
                return own.resource_list_result(self._server_list("resources", server))
            resources = self._visible_resources()
            refused: list[str] = []
            for owner in sorted({r.server for r in resources}):
                try:
                    self._check_own(name, owner, {"server": owner})
                except PermissionDenied:
                    refused.append(owner)
            allowed = [r for r in resources if r.server not in refused]
            return own.resource_list_result(allowed, refused)
        if name == own.READ_RESOURCE:
            uri = args.get("uri")
            if not isinstance(server, str) or not isinstance(uri, str):
                return own.refusal(f"{own.READ_RESOURCE} needs 'server' and 'uri' strings")
            self._check_own(name, server, {"server": server, "uri": uri})
            try:
                read = self.read_resource(uri, server=server)
            except RpcError as exc:
                return own.refusal(f"could not read {uri!r} from {server!r}: {exc}")
            return self._results.process(server, name, own.resource_read_result(read))
        query, limit = args.get("query"), args.get("max_results", own.DEFAULT_SEARCH_RESULTS)
        if not isinstance(query, str) or not query.strip():
            return own.refusal(f"{own.TOOL_SEARCH} needs a non-empty 'query' string")
        if not isinstance(limit, int) or isinstance(limit, bool):
            return own.refusal("'max_results' must be an integer")
        tools = self._offered()
        names = dict(zip((t.name for t in tools), self._llm_names(tools), strict=True))
        found = rank_tools(tools, query, max(1, min(limit, own.MAX_SEARCH_RESULTS)), aliases=names)
        fmt = self._search_format
        return own.search_result(
            [t.definition(fmt, name=names[t.name]) for t in found], [names[t.name] for t in found]
        )

    def _check_own(self, name: str, server: str, args: dict[str, Any]) -> None:
        """The permission layer for own tool ``name`` reaching ``server``.

        Raises:
            PermissionDenied: a deny rule, the handler or the default policy refused.
        """
        tool = own.resource_permission(name, server)
        in_process = self._conns.spec(server).in_process
        self._permissions.check_own(tool, args, in_process=in_process)

    def _definitions(
        self, format: ToolFormat, deferred: bool, always_load: Iterable[str]
    ) -> list[dict[str, Any]]:
        """``tool_definitions`` (see there)."""
        check_format(format)
        extra = [parse_rule(r) for r in always_load]
        tools = self._offered()
        names = self._llm_names(tools)
        if not deferred:
            out = pool_definitions(tools, format, names)
        else:
            keep = [i for i, t in enumerate(tools) if self._always_loaded(t, extra)]
            out = [tools[i].definition(format, name=names[i]) for i in keep]
            self._search_format = format
            if len(keep) < len(tools):
                out.append(own.search_tool_definition(format, len(tools) - len(keep)))
        if self._visible_resources():
            out.extend(own.resource_tool_definitions(format))
        return out

    def _always_loaded(self, tool: McpTool, extra: list[tuple[str, str | None]]) -> bool:
        """By the server (``_meta["anthropic/alwaysLoad"]``), by the Hub's or this call's
        rules, or by the server's config entry (``"alwaysLoad": true`` or a list of tool
        names)."""
        if tool.always_load:
            return True
        if rules_match(self._always_load, tool.server, tool.tool_name):
            return True
        if rules_match(extra, tool.server, tool.tool_name):
            return True
        configured = self._config_always_load.get(tool.server)
        return configured is True or (
            isinstance(configured, frozenset) and tool.tool_name in configured
        )
