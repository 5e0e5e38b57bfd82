"""Permission rules for Hub tool calls: deny and allow lists, then the host's callback or default
policy; ``check_own`` applies them to the Hub's own tools that reach a server. A refusal raises
``PermissionDenied``; the order of the steps is in docs/explanation/inside-the-hub.md."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..._accel import normalize_name
from ...errors import ConfigError, PermissionDenied

if TYPE_CHECKING:
    from .tools import McpTool

__all__ = ["PermissionHandler", "Permissions", "parse_rule", "rules_match"]

PermissionHandler = Callable[["McpTool", Mapping[str, Any]], Any]
Decision = Literal["allow", "deny"]


Rule = tuple[str, str | None]
_MAX_VERDICTS = 4096  # the tools whose rule verdicts a Permissions remembers


def rules_match(rules: Iterable[Rule], server: str, tool: str) -> bool:
    """True when one of the parsed ``rules`` names ``server`` (all its tools) or this tool."""
    s, t = normalize_name(server), normalize_name(tool)
    return any(rs == s and (rt is None or rt == t) for rs, rt in rules)


def parse_rule(rule: str) -> tuple[str, str | None]:
    """``(server, tool)`` of a rule; ``tool`` None means every tool of the server.

    Raises:
        ConfigError: not ``mcp__server``, ``mcp__server__*`` or ``mcp__server__tool``.
    """
    return _rule(rule)


def _rule(rule: str) -> tuple[str, str | None]:
    """``(server, tool)`` of a rule; ``tool`` None means every tool of the server."""
    if not isinstance(rule, str) or not rule.startswith("mcp__") or len(rule) <= 5:
        raise ConfigError(
            f"permission rule {rule!r} must look like mcp__server or mcp__server__tool"
        )
    body = rule[5:]
    server, sep, tool = body.partition("__")
    if not server:
        raise ConfigError(f"permission rule {rule!r} has an empty server part")
    if not sep or tool in ("", "*"):
        return normalize_name(server), None
    return normalize_name(server), normalize_name(tool)


class Permissions:
    """The rules and policy of one Hub (see the module docstring).

    Args:
        allow, deny: rules (``mcp__server`` / ``mcp__server__*`` / ``mcp__server__tool``).
        handler: ``fn(tool: McpTool, arguments) -> bool`` for calls no rule decides.
        default: the decision without a handler: ``"allow"`` (default) or ``"deny"``.
        on_always: called with the tool when the handler answers ``"always"``.
        own_granted: the servers (normalized names) whose resources are already permitted.

    Raises:
        ConfigError: a malformed rule or an unknown ``default``.
    """

    def __init__(
        self,
        allow: Iterable[str] | None = None,
        deny: Iterable[str] | None = None,
        handler: PermissionHandler | None = None,
        default: Decision = "allow",
        *,
        on_always: Callable[[McpTool], Any] | None = None,
        own_granted: set[str] | None = None,
    ) -> None:
        if isinstance(allow, str) or isinstance(deny, str):
            raise ConfigError("allow and deny take a list of rules, not one string")
        if default not in ("allow", "deny"):
            raise ConfigError(f"default_permission must be 'allow' or 'deny', not {default!r}")
        self.allow = tuple(allow or ())
        self.deny = tuple(deny or ())
        self._allow = [_rule(r) for r in self.allow]
        self._deny = [_rule(r) for r in self.deny]
        self.handler = handler
        self.default: Decision = default
        self.on_always = on_always
        # Servers whose resources an "always" answer permitted (normalized names); the Hub
        # hands the set on when it adopts a new configuration.
        self.own_granted = own_granted if own_granted is not None else set()
        # (server, tool) -> (a deny rule matches, an allow rule matches): what the rules say
        # of a tool never changes until they do (``grant``: cleared); bounded.
        self._verdicts: dict[tuple[str, str], tuple[bool, bool]] = {}

    def grant(self, rule: str) -> None:
        """Add an allow rule from now on (an "always" answer)."""
        self._allow = [*self._allow, _rule(rule)]
        self.allow = (*self.allow, rule)
        self._verdicts = {}

    def _verdict(self, server: str, tool: str) -> tuple[bool, bool]:
        """``(denied, allowed)`` by the rules for this tool, remembered."""
        key = (server, tool)
        verdicts = self._verdicts
        hit = verdicts.get(key)
        if hit is None:
            hit = (rules_match(self._deny, server, tool), rules_match(self._allow, server, tool))
            if len(verdicts) >= _MAX_VERDICTS:
                verdicts.clear()
            verdicts[key] = hit
        return hit

    @staticmethod
    def _matches(rules: list[tuple[str, str | None]], server: str, tool: str) -> bool:
        return rules_match(rules, server, tool)

    def server_denied(self, server: str) -> bool:
        """True when a deny rule names the whole server (its resources are hidden too)."""
        s = normalize_name(server)
        return any(rs == s and rt is None for rs, rt in self._deny)

    def denied_by_rule(self, server: str, tool: str) -> bool:
        """True when a deny rule matches: refuse before even connecting."""
        return self._verdict(server, tool)[0]

    def check(self, tool: McpTool, arguments: Mapping[str, Any], *, in_process: bool) -> None:
        """Return when the call may go ahead.

        Raises:
            PermissionDenied: a deny rule, the handler or the default policy refused.
        """
        denied, allowed = self._verdict(tool.server, tool.tool_name)
        if denied:
            raise PermissionDenied(f"{tool.name} is denied by a deny rule", tool.name)
        if allowed or in_process:
            return

        def remember() -> None:
            if self.on_always is not None:
                self.on_always(tool)

        self._ask(tool, arguments, tool.name, remember)

    def check_own(self, tool: McpTool, arguments: Mapping[str, Any], *, in_process: bool) -> None:
        """Return when the Hub's own tool ``tool`` may reach ``tool.server`` (see the module
        docstring): whole-server rules, then in-process servers, then the handler or default.

        Raises:
            PermissionDenied: a deny rule, the handler or the default policy refused.
        """
        server = normalize_name(tool.server)
        what = f"{tool.name} on MCP server {tool.server!r}"
        if self.server_denied(tool.server):
            raise PermissionDenied(f"{what} is denied by a deny rule", tool.name)
        whole = any(rs == server and rt is None for rs, rt in self._allow)
        if whole or in_process or server in self.own_granted:
            return
        self._ask(tool, arguments, what, lambda: self.own_granted.add(server))

    def _ask(
        self,
        tool: McpTool,
        arguments: Mapping[str, Any],
        what: str,
        remember: Callable[[], Any],
    ) -> None:
        """No rule decided: the handler, else the default policy."""
        if self.handler is not None:
            answer = self.handler(tool, arguments)
            if not answer:
                raise PermissionDenied(f"{what} was refused by the permission handler", tool.name)
            if isinstance(answer, str) and answer == "always":
                remember()
            return
        if self.default == "deny":
            raise PermissionDenied(
                f"{what} is not in the allow list (the default policy is deny)", tool.name
            )
