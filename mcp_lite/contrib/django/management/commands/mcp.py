"""``manage.py mcp servers | tools [SERVER] | call TOOL [JSON]``, on the app's Hub."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_lite import errors
from mcp_lite.errors import McpError


class Command(BaseCommand):  # type: ignore[misc]
    help = "List the MCP servers and tools of settings.MCP_LITE, or call a tool."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("servers", help="each server and its state (connects them)")
        tools = sub.add_parser("tools", help="the tools, named mcp__<server>__<tool>")
        tools.add_argument("server", nargs="?", help="only this server's tools")
        call = sub.add_parser("call", help="call a tool and print its result")
        call.add_argument("tool", help="mcp__<server>__<tool>")
        call.add_argument("arguments", nargs="?", default="{}", help="a JSON object")
        call.add_argument("--timeout", type=float, default=None, help="seconds")
        call.add_argument("--json", action="store_true", help="print the whole result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        from mcp_lite.contrib.django import get_hub

        try:
            hub = get_hub()
            action = options["action"]
            if action == "servers":
                for name, status in sorted(hub.connect_all().items()):
                    line = f"{name}\t{status.state}"
                    if status.tools_count is not None:
                        line += f"\t{status.tools_count} tools"
                    if status.error:
                        line += f"\t{status.error}"
                    self.stdout.write(line)
            elif action == "tools":
                for tool in hub.tools():
                    if options["server"] in (None, tool.server):
                        summary = (tool.description or "").strip().split("\n", 1)[0]
                        self.stdout.write(f"{tool.name}\t{summary}")
            else:
                self._call(hub, options)
        except McpError as exc:
            raise CommandError(str(exc), returncode=_exit_code(exc)) from None

    def _call(self, hub: Any, options: dict[str, Any]) -> None:
        try:
            arguments = json.loads(options["arguments"])
        except ValueError as exc:
            raise CommandError(f"arguments are not JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise CommandError("arguments must be a JSON object")
        result = hub.call_tool(options["tool"], arguments, timeout=options["timeout"])
        if options["json"]:
            self.stdout.write(json.dumps(result.model_dump(by_alias=True, exclude_none=True)))
        else:
            self.stdout.write(result.text or "")
        if result.is_error:
            raise CommandError(f"the tool returned an error: {result.text}", returncode=1)


def _exit_code(exc: McpError) -> int:
    """The exit codes of ``mcp-lite`` (DESIGN §2): 2 configuration or permission, 3
    connection, 4 authorization, 5 protocol, 124 timeout."""
    if isinstance(exc, errors.RequestTimeout):
        return 124
    if isinstance(exc, errors.AuthRequired):
        return 4
    if isinstance(exc, (errors.ConfigError, errors.PermissionDenied)):
        return 2
    if isinstance(exc, errors.TransportError):
        return 3
    return 5
