"""The CLI's command line: the argparse parser with its help and examples, the
version text, and the argv fix-ups (``--trust-project [NAME]``, a task id after
the options)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from .common import EXIT_USAGE

if TYPE_CHECKING:
    pass

__all__ = ["COMMANDS", "version_text"]


COMMANDS = (
    "servers", "tools", "call", "task", "resources", "read", "prompts", "prompt", "auth", "gateway"
)  # fmt: skip


_EPILOG = """\
examples:
  mcp-lite tools --stdio "python server.py"
  mcp-lite call --stdio "python server.py" add '{"a": 1, "b": 2}' --json
  mcp-lite read --url https://mcp.example.com/mcp file:///logo.png --output logo.png
  mcp-lite servers --json                      the servers of ./.mcp.json and ~/.claude.json
  mcp-lite --project /srv/app call mcp__db__query '{"sql": "select 1"}'
  mcp-lite auth https://mcp.example.com/mcp    log in once; cron jobs then use the tokens
  mcp-lite call --url URL build '{}' --as-task  prints a task id; later, in another run:
  mcp-lite task result --url URL TASK_ID        waits (--timeout) and prints the result

Options go before or after the command. Without --stdio/--url the commands work on the
configured servers (.mcp.json and .claude/ of --project, ~/.claude.json, --config FILE).

defaults: --timeout 60 seconds for the whole run (starting or reaching the server, every
request, every page), --protocol-version auto, --project . (the current directory); project
servers start only with --trust-project.

exit codes:
  0    success
  1    the tool returned isError
  2    usage or configuration error
  3    connection failure (refused, no such host, TLS, the server exited)
  4    authorization needed (run: mcp-lite auth URL)
  5    protocol error
  124  timeout: --timeout passed (while connecting or waiting for an answer; a listing of
       the configured servers it cut short is partial)
  141  stdout was closed before all output was written (e.g. piped into head)

With --json a failure also prints {"error": {"type", "message", "exit_code"}} on stdout.
"""


class _Parser(argparse.ArgumentParser):
    """argparse with a "did you mean" for a misspelt command, and exit code 2."""

    def error(self, message: str) -> NoReturn:
        match = re.search(r"invalid choice: '([^']*)'", message)
        if match and self.prog == "mcp-lite":
            import difflib

            close = difflib.get_close_matches(match.group(1), COMMANDS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            message = f"unknown command {match.group(1)!r}{hint} (commands: {', '.join(COMMANDS)})"
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"mcp-lite: error: {message}\n")


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(version_text())
        parser.exit()


def version_text() -> str:
    """``mcp-lite 0.1.0 (Python 3.11.7, speedups: compiled)``; says why when pure Python."""
    import platform

    from .. import __version__, _accel

    speedups = "compiled" if _accel.USE_EXTENSIONS else f"pure Python ({_accel.PURE_REASON})"
    return (
        f"mcp-lite {__version__} (Python {platform.python_version()} "
        f"{platform.python_implementation()}, speedups: {speedups})"
    )


def _add_common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """The options every command takes. On the subcommands they default to SUPPRESS so a
    value given before the command is not overwritten by the subcommand's default."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    # the repeatable options collect into their own list on each side, merged after parsing
    prefix = "sub_" if suppress else ""
    target = parser.add_argument_group("server")
    target.add_argument(
        "--stdio", metavar="CMD", default=default(None), help="run this command as a stdio server"
    )
    target.add_argument(
        "--url", default=default(None), help="connect to a remote server at this URL"
    )
    target.add_argument(
        "--env",
        metavar="KEY=VALUE",
        action="append",
        dest=prefix + "env",
        default=default([]),
        help="environment variable for a --stdio server (repeatable)",
    )
    config = parser.add_argument_group("configured servers (without --stdio/--url)")
    config.add_argument(
        "--config",
        metavar="FILE",
        action="append",
        dest=prefix + "config",
        default=default([]),
        help="read this mcpServers file too (repeatable; trusted, wins)",
    )
    config.add_argument(
        "--project",
        metavar="DIR",
        default=default("."),
        help="the project whose .mcp.json and .claude/ are read (default: .)",
    )
    config.add_argument(
        "--trust-project",
        metavar="NAME",
        nargs="?",
        const="*",
        action="append",
        dest=prefix + "trust_project",
        default=default([]),
        help="start the project's (.mcp.json) servers without approval: all of them, or "
        "only server NAME (repeatable)",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--json", action="store_true", default=default(False), help="print JSON on stdout"
    )
    output.add_argument(
        "--output",
        metavar="FILE",
        default=default(None),
        help="write an image, audio or binary result to FILE (else a summary is printed)",
    )
    output.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=default(60.0),
        help="seconds for the whole run, connecting included (default: 60)",
    )
    output.add_argument(
        "--protocol-version",
        metavar="VERSION",
        default=default("auto"),
        help="'auto' or a protocol version to pin (default: auto)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mcp-lite",
        description="MCP from the shell and from cron: list and call the tools, resources and "
        "prompts of one server (--stdio CMD, --url URL) or of the configured servers.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="print the version, Python and speedups"
    )
    _add_common(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, example: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(
            name,
            help=help,
            description=help[:1].upper() + help[1:] + ".",
            epilog=f"example:\n  {example}\n\nexit codes: see mcp-lite --help",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_common(cmd, suppress=True)
        return cmd

    command(
        "servers",
        "list the configured servers, their states and tool counts",
        "mcp-lite servers --json",
    )
    tools = command("tools", "list the tools", 'mcp-lite tools --stdio "python server.py"')
    tools.add_argument("server", nargs="?", help="only this configured server's tools")
    call = command(
        "call", "call a tool", """mcp-lite call --stdio "python server.py" add '{"a": 1, "b": 2}'"""
    )
    call.add_argument("name", help="the tool (mcp__<server>__<tool> for configured servers)")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object (default: {})")
    call.add_argument(
        "--as-task",
        action="store_true",
        help="start the call as a task, print its id and exit (see: mcp-lite task)",
    )
    task = command(
        "task",
        "look at, wait for or cancel a task started by call --as-task",
        "mcp-lite task result --url http://127.0.0.1:8000/mcp TASK_ID --timeout 300",
    )
    task.add_argument("action", choices=("status", "result", "cancel"))
    task.add_argument("task_id", metavar="TASK_ID")
    task.add_argument("--server", help="the configured server that runs the task")
    command(
        "resources", "list resources and templates", 'mcp-lite resources --stdio "python server.py"'
    )
    read = command(
        "read",
        "read a resource",
        'mcp-lite read --stdio "python server.py" demo://readme',
    )
    read.add_argument("uri")
    read.add_argument("--server", help="the configured server to read from")
    command("prompts", "list the prompts", 'mcp-lite prompts --stdio "python server.py"')
    prompt = command(
        "prompt",
        "get a prompt",
        """mcp-lite prompt --stdio "python server.py" greet '{"name": "Ada"}'""",
    )
    prompt.add_argument("name")
    prompt.add_argument(
        "arguments", nargs="?", default="{}", help="JSON object of strings (default: {})"
    )
    auth = command(
        "auth", "log in to a remote server (OAuth)", "mcp-lite auth https://mcp.example.com/mcp"
    )
    auth.add_argument("server", help="a server URL, or a configured http/sse server's name")
    auth.add_argument("--logout", action="store_true", help="forget its stored tokens")
    gateway = command(
        "gateway",
        "serve the configured servers to every process of this machine on a Unix socket",
        "mcp-lite gateway --socket /run/mcp-lite/gateway.sock --config mcp.json",
    )
    gateway.add_argument(
        "--socket",
        required=True,
        metavar="PATH",
        help="the socket file, in a folder only you (and root) can write",
    )
    gateway.add_argument(
        "--group", metavar="G", help="let this group's members connect too (socket 0660)"
    )
    gateway.add_argument(
        "--idle-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="stop a stdio server nobody used for this long; the next call starts it again",
    )
    gateway.add_argument(
        "--max-lifetime",
        type=_seconds,
        metavar="SECONDS",
        help="restart a stdio server after this long, between calls",
    )
    return parser


def _seconds(text: str) -> float:
    """A positive number of seconds (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"a positive number of seconds, not {text!r}")
    return value


_COMMANDS = COMMANDS


def _trust_args(argv: Sequence[str]) -> list[str]:
    """``--trust-project NAME`` takes NAME only when it can be a server name (no ``__``, no
    JSON, no URL, not the command itself), so ``call --trust-project mcp__db__q`` keeps
    its tool name; a bare ``--trust-project`` trusts every project server."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            out.extend(argv[i:])
            break
        if token != "--trust-project":
            out.append(token)
            i += 1
            continue
        following = argv[i + 1] if i + 1 < len(argv) else ""
        command_seen = any(t in _COMMANDS for t in out)
        if _server_name_ok(following) and (command_seen or following not in _COMMANDS):
            out.append(f"--trust-project={following}")
            i += 2
        else:
            out.append("--trust-project=*")
            i += 1
    return out


def _server_name_ok(name: str) -> bool:
    from ..hub.config._sources import name_problem

    return bool(name) and not name.startswith("-") and name_problem(name) is None


# The options that take a value (a token after one of them is its value, not a task id).
_VALUED = {
    "--stdio", "--url", "--env", "--config", "--project", "--output", "--timeout",
    "--protocol-version", "--server",
}  # fmt: skip


def _task_id_last(argv: list[str]) -> list[str]:
    """``task ACTION TASK_ID``: a server's task id may start with ``-`` (any string is an
    id), which argparse would take for an option; such an id (a ``-x...`` token that is no
    option nor an option's value) moves behind ``--``."""
    if "--" in argv:
        return argv
    for i, token in enumerate(argv[:-2]):
        if token == "task" and argv[i + 1] in ("status", "result", "cancel"):
            for j in range(i + 2, len(argv)):
                tok = argv[j]
                if (
                    tok.startswith("-")
                    and not tok.startswith("--")
                    and tok != "-h"
                    and argv[j - 1] not in _VALUED
                    and not _number(tok)
                ):
                    return [*argv[:j], *argv[j + 1 :], "--", tok]
            break
    return argv


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    raw = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(_trust_args(_task_id_last(raw)))
    # repeatable options given before and after the command
    for name in ("env", "config", "trust_project"):
        setattr(args, name, getattr(args, name) + getattr(args, "sub_" + name, []))
    names = [n for n in args.trust_project if n != "*"]
    args.trust_project = True if "*" in args.trust_project else (names or False)
    return args
