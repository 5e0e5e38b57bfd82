"""``mcp-lite``: MCP from the shell and from cron (``docs/reference/cli.md`` has every
command, option and exit code). ``main`` is the console script's entry point; the modules
here hold the parser, the run of one command, the commands on the configured servers, the
task, auth and gateway commands, and the printing of what servers answer."""

from __future__ import annotations

from .common import (
    CLI_TRUST_HINT,
    EXIT_AUTH,
    EXIT_BROKEN_PIPE,
    EXIT_CONNECT,
    EXIT_OK,
    EXIT_PROTOCOL,
    EXIT_TIMEOUT,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
    UsageError,
    safe,
)
from .parser import COMMANDS, version_text
from .run import main

__all__ = [
    "CLI_TRUST_HINT",
    "COMMANDS",
    "EXIT_AUTH",
    "EXIT_BROKEN_PIPE",
    "EXIT_CONNECT",
    "EXIT_OK",
    "EXIT_PROTOCOL",
    "EXIT_TIMEOUT",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "UsageError",
    "main",
    "safe",
    "version_text",
]
