"""``mcp-lite``: MCP from the shell and from cron.

    mcp-lite tools   --stdio "python server.py"
    mcp-lite call    --stdio "python server.py" add '{"a": 1, "b": 2}' --json --timeout 30
    mcp-lite resources | read URI | prompts | prompt NAME '{"arg": "value"}'

Without ``--stdio``/``--url`` the commands work on the configured servers, read like Claude
Code reads them (``.mcp.json`` and ``.claude/`` of ``--project DIR``, default the current
directory; the user's ``~/.claude.json`` and ``~/.claude/settings.json``; ``--config FILE``):

    mcp-lite servers                       name, scope, type, state of every server
    mcp-lite tools [SERVER]                mcp__<server>__<tool> names
    mcp-lite call mcp__db__query '{"sql": "select 1"}'
    mcp-lite resources | read URI [--server S] | prompts | prompt mcp__srv__name '{...}'

Tasks outlive the run (cron): ``call ... --as-task`` prints the task id and exits;
``task status|result|cancel TASK_ID`` (same server options; ``--server S`` for a configured
server) look at it, wait for its result (exit codes as ``call``) or cancel it.

Exit codes (stable, for scripts): 0 success, 1 the tool returned ``isError``, 2 usage or
configuration error, 3 connection failure, 4 authorization needed, 5 protocol error,
124 timeout (``--timeout`` bounds the whole run, connecting included), 141 stdout closed early
(``| head``). Errors go to stderr as one line; with ``--json`` stdout also gets a JSON error
object. What a server sends (names, descriptions, messages) is printed with its control
characters escaped, so it cannot move the cursor, rewrite lines or set the clipboard.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import re
import shlex
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

# What only some commands need (difflib, tempfile, shutil, base64, pathlib) is imported where
# it is used: a one-shot `call` starts faster (pathlib alone costs ~5 ms).
from . import errors
from ._secrets import redact_url
from ._text import human_size, plural

if TYPE_CHECKING:
    from ._options import ClientOptions

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, EXIT_CONNECT, EXIT_AUTH, EXIT_PROTOCOL = 0, 1, 2, 3, 4, 5
EXIT_TIMEOUT = 124
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what the shell reports for `yes | head`
# After the deadline, the process ends even if some path is still blocked (a backstop: every
# call already has the remaining time as its own timeout).
_BACKSTOP_GRACE = 1.0


class UsageError(Exception):
    """Bad command-line input: exit code 2."""


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

    from . import __version__, _accel

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
CLI_TRUST_HINT = "start it with --trust-project {name} (or --trust-project for all of them)"


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
    from .hub.config._sources import name_problem

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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    try:
        args = _parse(argv)
    except SystemExit as exc:  # argparse already printed the usage message
        return EXIT_USAGE if exc.code not in (0, None) else EXIT_OK
    if not args.timeout > 0:
        return _fail("usage error: --timeout must be a positive number of seconds", EXIT_USAGE)
    from ._deadline import Deadline

    args.deadline = Deadline.after(args.timeout)  # one deadline for the whole run
    # The console script only (a program calling main() keeps its process); not for `auth`,
    # whose login waits for a person in a browser.
    backstop = (
        _backstop(args) if argv is None and args.command not in ("auth", "gateway") else None
    )  # (the gateway runs until a signal)
    try:
        with _library_logs_prefixed():
            return _run_mapped(args)
    except BrokenPipeError:
        return _stdout_closed()
    finally:
        if backstop is not None:
            backstop.cancel()


def _remaining(args: argparse.Namespace) -> float:
    """What is left of the run's ``--timeout``, as the timeout of the next step."""
    left: float = args.deadline.remaining()
    if left <= 0:
        raise args.deadline.error("mcp-lite", "the command did not finish")
    return left


def _backstop(args: argparse.Namespace) -> Any:
    """An entry on the process timer that ends the process shortly after the deadline,
    whatever is still blocked (every step already gets the remaining time, so this fires
    only if one forgot). Servers the run started are stopped by their watcher when this
    process is gone. Returns the timer handle (``cancel()`` withdraws it)."""
    import os

    from . import _timer

    def expire() -> None:  # (on the timer thread; the process ends here)
        _fail(
            f"timeout: the command did not finish within the {args.deadline.describe()}",
            EXIT_TIMEOUT,
        )
        if args.json:
            _print_json_error("RequestTimeout", "the command did not finish in time", EXIT_TIMEOUT)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(EXIT_TIMEOUT)

    return _timer.schedule(args.deadline.at + _BACKSTOP_GRACE, expire)


def _stdout_closed() -> int:
    """The reader of stdout went away (``| head``): stop quietly, no traceback. stdout is
    pointed at /dev/null so the interpreter's last flush does not fail again."""
    import os

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return EXIT_BROKEN_PIPE


def _run_mapped(args: argparse.Namespace) -> int:
    """Run one command, mapping the library's errors to a one-line message and exit code."""
    try:
        return _run(args)
    except UsageError as exc:
        return _failed(args, exc, "usage error", EXIT_USAGE)
    except errors.RequestTimeout as exc:
        return _failed(args, exc, "timeout", EXIT_TIMEOUT)
    except errors.AuthRequired as exc:
        return _failed(args, exc, "authorization needed", EXIT_AUTH)
    except errors.ConfigError as exc:
        return _failed(args, exc, "configuration error", EXIT_USAGE)
    except errors.TransportError as exc:
        return _failed(args, exc, "connection failed", EXIT_CONNECT)
    except errors.McpError as exc:
        return _failed(args, exc, "error", EXIT_PROTOCOL)
    except KeyboardInterrupt:
        return 130


def _failed(args: argparse.Namespace, exc: Exception, what: str, code: int) -> int:
    """One line on stderr; with ``--json`` also a JSON error object on stdout."""
    if args.json:
        _print_json_error(type(exc).__name__, str(exc), code)
    return _fail(f"{what}: {exc}", code)


def _print_json_error(kind: str, message: str, code: int) -> None:
    error = {"type": kind, "message": message, "exit_code": code}
    json.dump({"error": error}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    sys.stdout.flush()


class _PrefixFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = safe(super().format(record), keep_lines=True)  # may quote what a server sent
        return f"mcp-lite: {record.levelname.lower()}: {text}"


@contextlib.contextmanager
def _library_logs_prefixed() -> Iterator[None]:
    """The library's warnings on stderr as ``mcp-lite: ...`` lines (not Python's bare
    last-resort output), so a cron mail says where each line comes from. Undone on return, so
    ``main()`` called from a program leaves its logging as it was."""
    logger = logging.getLogger("mcp_lite")
    if logger.handlers or logging.getLogger().handlers:
        yield  # the program configured logging itself: its format wins
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PrefixFormatter())
    handler.setLevel(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _fail(message: str, code: int) -> int:
    print(f"mcp-lite: {safe(message, keep_lines=True)}", file=sys.stderr)
    return code


# C0 controls but tab and newline, DEL and the C1 controls (0x80-0x9f: CSI, OSC... on some
# terminals): what lets a string move the cursor, erase lines or write the clipboard (OSC 52).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_ALL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def safe(text: Any, *, keep_lines: bool = False) -> str:
    """A server-supplied string made harmless for a terminal: control characters shown as
    ``\\x1b``-style escapes. Newlines and tabs are kept only with ``keep_lines`` (messages);
    a name or a table cell escapes them too, so it cannot fake a row."""
    text = str(text)
    pattern = _CONTROL if keep_lines else _CONTROL_ALL
    return pattern.sub(lambda m: repr(m.group())[1:-1], text)


def _first_line(text: str | None) -> str:
    return safe(text.strip().splitlines()[0]) if text and text.strip() else ""


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def _target(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    if bool(args.stdio) == bool(args.url):
        raise UsageError("give exactly one of --stdio CMD or --url URL")
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--env wants KEY=VALUE, got {item!r}")
        env[key] = value
    if args.stdio:
        # The one place a command is a string: split like a shell would (no shell runs).
        try:
            argv = shlex.split(args.stdio)
        except ValueError as exc:
            raise UsageError(f"--stdio: {exc}") from None
        if not argv:
            raise UsageError("--stdio needs a command")
        return argv, {"env": env or None}
    if "://" not in args.url:
        raise UsageError(
            f"--url wants a URL with a scheme (http://, https://, ws://, wss://), got "
            f"{redact_url(args.url)!r}; to run a command use --stdio"
        )
    return args.url, {}


def _run(args: argparse.Namespace) -> int:
    if args.command == "auth":
        return _run_auth(args)
    if args.command == "gateway":
        return _run_gateway(args)
    if args.command == "task" and not args.task_id:
        raise UsageError(f"task {args.action} needs a TASK_ID (the id `call --as-task` printed)")
    arguments = _json_object(args.arguments, "arguments") if hasattr(args, "arguments") else {}
    if not args.stdio and not args.url:
        return _run_configured(args, arguments)
    if args.command == "servers":
        raise UsageError("'servers' lists configured servers: drop --stdio/--url")
    if getattr(args, "server", None):
        raise UsageError("a SERVER name needs configured servers: drop --stdio/--url")
    target, options = _target(args)
    from .client import connect

    if args.command == "task" or getattr(args, "as_task", False):
        with connect(
            target, timeout=_remaining(args), protocol_version=args.protocol_version, **options
        ) as client:
            where = redact_url(args.url) if args.url else args.stdio
            return _task_command(args, client, where, client, arguments)
    show_progress = sys.stderr.isatty()
    with connect(
        target, timeout=_remaining(args), protocol_version=args.protocol_version, **options
    ) as client:
        if args.command == "tools":
            from .protocol.apps import visible_to

            # as a model would be offered them: no tool only an MCP App may call
            tools = client.list_tools(timeout=_remaining(args))
            tools = [t for t in tools if visible_to(t.meta, "model")]
            _emit(
                args,
                [t.to_wire() for t in tools] if args.json else None,  # (pydantic: --json only)
                "\n".join(f"{safe(t.name)}\t{_first_line(t.description)}" for t in tools),
            )
        elif args.command == "call":
            # The raw result dict: a one-shot call never needs the pydantic models.
            try:
                result = client.request(
                    "tools/call",
                    {"name": args.name, "arguments": arguments},
                    timeout=_remaining(args),
                    on_progress=_print_progress if show_progress else None,
                )
            except errors.RpcError as exc:
                _unknown_tool(client, args.name, exc, args)
                raise
            finally:
                if show_progress:
                    sys.stderr.write("\r\033[K")
            if result.get("isError"):
                _unknown_tool(client, args.name, None, args)
            _emit(args, result, _result_text(args, result))
            return EXIT_TOOL_ERROR if result.get("isError") else EXIT_OK
        elif args.command == "resources":
            resources = _none_if_unsupported(client.list_resources, args)
            templates = _none_if_unsupported(client.list_resource_templates, args)
            _emit(
                args,
                {
                    "resources": [r.to_wire() for r in resources],
                    "resourceTemplates": [t.to_wire() for t in templates],
                },
                "\n".join(
                    [f"{safe(r.uri)}\t{safe(r.name)}" for r in resources]
                    + [f"{safe(t.uri_template)}\t{safe(t.name)} (template)" for t in templates]
                ),
            )
        elif args.command == "read":
            read = client.read_resource(args.uri, timeout=_remaining(args))
            wire = read.to_wire()
            _emit(args, wire, _read_text(args, wire))
        elif args.command == "prompts":
            prompts = client.list_prompts(timeout=_remaining(args))
            _emit(
                args,
                [p.to_wire() for p in prompts],
                "\n".join(f"{safe(p.name)}\t{_first_line(p.description)}" for p in prompts),
            )
        elif args.command == "prompt":
            got = client.get_prompt(
                args.name, {k: str(val) for k, val in arguments.items()}, timeout=_remaining(args)
            )
            _emit(args, got.to_wire(), _prompt_text(got))
    return EXIT_OK


def _run_configured(args: argparse.Namespace, arguments: dict[str, Any]) -> int:
    """The commands on the configured servers (a Hub)."""
    import shutil
    import tempfile

    from .hub import Backoff, Hub

    # Every server's connect and requests get what is left of the run (the backstop ends the
    # process at the deadline whatever still blocks).
    options: ClientOptions = {
        "timeout": _remaining(args),
        "protocol_version": args.protocol_version,
    }
    # --output: binary results land in a scratch directory first, then move to FILE
    scratch = tempfile.mkdtemp(prefix="mcp-lite-") if args.output else None
    # One attempt per server: a script wants a quick, clear answer, not a backoff schedule.
    hub = Hub.from_config(
        args.project,
        trust_project=args.trust_project,
        config_files=args.config,
        client_options=options,
        backoff=Backoff(max_attempts=1),
        **_hub_output(scratch),
        trust_hint=CLI_TRUST_HINT,
    )
    try:
        with hub:
            for issue in hub.issues:
                print(f"mcp-lite: warning: {safe(issue, keep_lines=True)}", file=sys.stderr)
            if not hub.status():
                raise UsageError(
                    f"no MCP servers are configured for {args.project!r} (add a "
                    ".mcp.json, or use --config FILE, --stdio CMD or --url URL)"
                )
            try:
                return _configured_command(hub, args, arguments, scratch)
            except errors.ConfigError as exc:
                raise errors.ConfigError(f"{exc}{_did_you_mean(hub, args)}") from None
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def _run_gateway(args: argparse.Namespace) -> int:
    """Serve the configured servers on ``--socket`` until SIGTERM or SIGINT; exits 0 having
    stopped every server it started."""
    import signal

    from .gateway import Gateway
    from .hub import Hub

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # serve() closes: servers stopped, socket file removed

    hub = Hub.from_config(
        args.project,
        trust_project=args.trust_project,
        config_files=args.config,
        gateway=False,  # the gateway runs its servers itself, whatever MCP_LITE_GATEWAY says
        trust_hint=CLI_TRUST_HINT,
        idle_timeout=args.idle_timeout,
        max_lifetime=args.max_lifetime,
    )
    for issue in hub.issues:
        print(f"mcp-lite: warning: {safe(issue, keep_lines=True)}", file=sys.stderr)
    gateway = Gateway(hub)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        gateway.start(args.socket, group=args.group)
    except errors.ConfigError:
        hub.close()
        raise  # a folder others can write: exit 2, the message says what to do
    except (OSError, KeyError) as exc:
        # A path held by another process, a folder that cannot be written, an unknown
        # group: a setting to change, not a connection that failed (exit 2).
        hub.close()
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        if isinstance(exc, KeyError):
            why = f"no group {args.group!r}"
        raise errors.ConfigError(f"the gateway cannot listen on {args.socket}: {why}") from None
    names = ", ".join(s["name"] for s in gateway.servers()) or "(none)"
    print(f"mcp-lite: gateway on {gateway.url} serving {names}", flush=True)
    try:
        gateway.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        gateway.close()
    return EXIT_OK


def _hub_output(scratch: str | None) -> dict[str, Any]:
    return {"output_dir": scratch} if scratch else {}


def _configured_command(
    hub: Any, args: argparse.Namespace, arguments: dict[str, Any], scratch: str | None
) -> int:
    """One command on the Hub's servers."""
    command = args.command
    if command == "task" or getattr(args, "as_task", False):
        return _hub_task_command(hub, args, arguments)
    if command == "servers":
        states = hub.connect_all()
        counts: dict[str, int] = {}
        if any(s.state == "connected" for s in states.values()):
            for tool in hub.tools():
                counts[tool.server] = counts.get(tool.server, 0) + 1
        rows = [
            {
                "name": s.name,
                "scope": s.scope,
                "type": s.type,
                "state": s.state,
                "error": s.error,
                "tools": counts.get(s.name, 0) if s.state == "connected" else s.tools_count,
            }
            for s in states.values()
        ]
        _emit(
            args,
            rows,
            "\n".join(_server_row(r) for r in rows),
        )
        return EXIT_OK
    if command == "tools" and args.server:
        hub.client(args.server)  # raises why it cannot connect
        tools = [t for t in hub.tools(timeout=_listing_time(args)) if t.server == args.server]
    elif command in ("tools", "resources", "prompts"):
        hub.connect_all()  # each server's start and handshake within the run's time
        tools = hub.tools(timeout=_listing_time(args)) if command == "tools" else []
        _check_any_up(hub, cut_short=args.deadline.expired())
    if command == "tools":
        _emit_listing(
            args,
            "tools",
            [t.definition("anthropic") | {"server": t.server} for t in tools],
            "\n".join(f"{safe(t.name)}\t{_first_line(t.description)}" for t in tools),
        )
    elif command == "call":
        show_progress = sys.stderr.isatty()
        result = hub.call_tool(
            args.name,
            arguments,
            timeout=_remaining(args),
            on_event=_print_event if show_progress else None,
        )
        if show_progress:
            sys.stderr.write("\r\033[K")
        text = _move_outputs(args, scratch, result.text)
        _emit(args, result.to_wire(), text)
        return EXIT_TOOL_ERROR if result.is_error else EXIT_OK
    elif command == "resources":
        resources = hub.resources(timeout=_listing_time(args))
        _emit_listing(
            args,
            "resources",
            [
                {"server": r.server, **(r.resource.to_wire() if r.resource else {})}
                for r in resources
            ],
            "\n".join(f"{safe(r.server)}\t{safe(r.uri)}\t{safe(r.name)}" for r in resources),
        )
    elif command == "read":
        read = hub.read_resource(args.uri, server=args.server)
        wire = read.to_wire()
        _emit(args, wire, _read_text(args, wire))
    elif command == "prompts":
        prompts = hub.prompts(timeout=_listing_time(args))
        _emit_listing(
            args,
            "prompts",
            [{"name": p.name, "server": p.server, "description": p.description} for p in prompts],
            "\n".join(f"{safe(p.name)}\t{_first_line(p.description)}" for p in prompts),
        )
    elif command == "prompt":
        got = hub.get_prompt(args.name, arguments)
        _emit(args, got.to_wire(), _prompt_text(got))
    return EXIT_OK


# --- tasks: call --as-task, task status|result|cancel -------------------------------------


def _hub_task_command(hub: Any, args: argparse.Namespace, arguments: dict[str, Any]) -> int:
    """The task commands on a configured server (``--server``, or the only one)."""
    if args.command == "call":
        server = hub._resolve(args.name)[0]  # ConfigError when it names no server
    else:
        names = sorted(hub.status())
        server = args.server or (names[0] if len(names) == 1 else None)
        if server is None:
            raise UsageError(
                f"say which configured server runs the task: --server ({', '.join(names)})"
            )
    return _task_command(args, hub, server, hub.client(server), arguments, on=server)


def _task_command(
    args: argparse.Namespace,
    source: Any,
    where: str,
    client: Any,
    arguments: dict[str, Any],
    *,
    on: str | None = None,
) -> int:
    """``call --as-task`` (start, print the id, exit) or ``task ACTION TASK_ID`` on a
    ``Client`` or a ``Hub`` (``source``, then ``on`` is the server); ``client`` is the
    server's connected client; ``where`` names the server in the output."""
    if _started_by_us(client):
        what = "the task could not be collected" if args.command == "call" else "no earlier task"
        raise UsageError(
            f"{what}: a stdio server started by mcp-lite ends with the run, and its tasks "
            "with it; run the server over HTTP (--url) or behind the gateway to use tasks "
            "across runs"
        )
    if args.command == "call":
        # (a Hub takes the qualified name and checks its permissions)
        task = source.call_tool_as_task(args.name, arguments, timeout=_remaining(args))
        if not task.id:  # 2026-07-28: the server chose to answer at once, as for call
            print("mcp-lite: note: the server answered at once (no task)", file=sys.stderr)
            result = task.result(timeout=_remaining(args)).to_wire()
            _emit(args, result, _result_text(args, result))
            return EXIT_TOOL_ERROR if result.get("isError") else EXIT_OK
        status = task.last_status
        _emit(
            args,
            {"taskId": task.id, "server": where, "status": status.status},
            safe(task.id),
        )
        return EXIT_OK
    if on is not None:
        task = source.resume_task(on, args.task_id, timeout=_remaining(args))
    else:
        task = source.resume_task(args.task_id, timeout=_remaining(args))
    if args.action == "status":
        status = task.last_status  # resume_task's tasks/get: a fresh look
        _emit(args, _status_wire(status, where), _status_text(status))
        return EXIT_OK
    if args.action == "cancel":
        task.cancel(timeout=_remaining(args))
        status = task.last_status
        _emit(args, _status_wire(status, where), _status_text(status))
        return EXIT_OK
    result = task.result(timeout=_remaining(args)).to_wire()
    _emit(args, result, _result_text(args, result))
    return EXIT_TOOL_ERROR if result.get("isError") else EXIT_OK


def _started_by_us(client: Any) -> bool:
    """A stdio server this run started (its tasks die with this process)."""
    return getattr(client.transport, "pid", None) is not None


def _status_wire(status: Any, where: str) -> dict[str, Any]:
    out = {"taskId": status.task_id, "server": where, "status": status.status}
    for key, value in (
        ("statusMessage", status.status_message),
        ("createdAt", status.created_at),
        ("lastUpdatedAt", status.last_updated_at),
        ("ttlMs", status.ttl_ms),
        ("pollIntervalMs", status.poll_interval_ms),
    ):
        if value is not None:
            out[key] = value
    return out


def _status_text(status: Any) -> str:
    message = f"\t{safe(status.status_message)}" if status.status_message else ""
    return f"{safe(status.task_id)}\t{safe(status.status)}{message}"


def _move_outputs(args: argparse.Namespace, scratch: str | None, text: str) -> str:
    """The Hub saved the binary blocks of a result in ``scratch``: move them to ``--output``
    (FILE, FILE-2.ext...) and say so in the text."""
    if not scratch:
        return text
    import shutil
    from pathlib import Path

    saved = sorted(Path(scratch).iterdir(), key=lambda path: path.stat().st_mtime_ns)
    for n, path in enumerate(saved, 1):
        target = Path(args.output)
        if n > 1:
            target = target.with_name(f"{target.stem}-{n}{target.suffix}")
        try:
            shutil.move(str(path), target)
        except OSError as exc:
            raise UsageError(f"cannot write --output {str(target)!r}: {exc}") from None
        text = text.replace(str(path), str(target))
    return text


def _did_you_mean(hub: Any, args: argparse.Namespace) -> str:
    """``; did you mean 'mcp__demo__add'?`` for a misspelt tool, server or prompt name."""
    try:
        if args.command in ("tools", "read") and getattr(args, "server", None):
            wrong, known = args.server, list(hub.status())
        elif args.command == "call":
            wrong, known = args.name, [t.name for t in hub.tools()]
        elif args.command == "prompt":
            wrong, known = args.name, [p.name for p in hub.prompts()]
        else:
            return ""
    except errors.McpError:
        return ""
    return _suggestion(wrong, known)


def _unknown_tool(
    client: Any, name: str, error: Exception | None, args: argparse.Namespace
) -> None:
    """When a call failed because the server has no such tool, say so (usage error, exit 2)
    with the closest name; otherwise return and let the failure speak for itself."""
    try:
        known = [tool.name for tool in client.list_tools(timeout=_remaining(args))]
    except errors.McpError:
        return
    if name in known:
        return
    hint = _suggestion(name, known) or f" (tools: {', '.join(known[:20]) or 'none'})"
    raise UsageError(f"the server has no tool {name!r}{hint}") from error


def _suggestion(wrong: str, known: Sequence[str]) -> str:
    if wrong in known:
        return ""
    import difflib

    close = difflib.get_close_matches(wrong, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _run_auth(args: argparse.Namespace) -> int:
    """``mcp-lite auth SERVER``: log in once (browser + loopback redirect), tokens to the
    store; ``--logout`` forgets them. Output never contains a token."""
    from .auth import OAuth

    url, options = args.server, dict[str, Any]()
    if "://" not in url:
        from .hub.config import HttpServerConfig, SseServerConfig, load_config

        loaded = load_config(
            args.project,
            trust_project=args.trust_project,
            config_files=args.config,
            trust_hint=CLI_TRUST_HINT,
        )
        entry = loaded.servers.get(url)
        config = entry.config if entry is not None else None
        if not isinstance(config, (HttpServerConfig, SseServerConfig)):
            raise UsageError(f"{url!r} is neither a URL nor a configured http/sse server")
        if entry is not None and entry.disabled_reason:
            # An untrusted project's server is not contacted, not even to log in.
            raise UsageError(f"server {url!r} is not usable: {entry.disabled_reason}")
        url, oauth = str(config.url), config.oauth
        if oauth is not None:
            scopes = oauth.scopes
            options = {
                "client_id": oauth.clientId,
                "scope": " ".join(scopes) if isinstance(scopes, list) else scopes,
            }
            if oauth.callbackPort:
                options["redirect_uri"] = f"http://127.0.0.1:{oauth.callbackPort}/callback"
    provider = OAuth(url, **{k: v for k, v in options.items() if v}, timeout=args.timeout)
    shown = redact_url(url)  # a query may hold an API key: never printed
    if args.logout:
        provider.logout()
        _emit(args, {"server": shown, "authorized": False}, f"logged out of {shown}")
        return EXIT_OK
    needed = provider.login()
    text = f"authorized for {shown}" if needed else f"{shown} does not ask for authorization"
    _emit(args, {"server": shown, "authorized": provider.authorized, "required": needed}, text)
    return EXIT_OK


def _server_row(row: dict[str, Any]) -> str:
    """``name scope type state`` then ``4 tools`` (connected) or the error's first line (the
    whole error, stderr tail included, is in ``--json``), tab-separated."""
    cells = [safe(row["name"]), str(row["scope"]), str(row["type"]), row["state"]]
    if row["state"] == "connected":
        cells.append(plural(row["tools"], "tool"))
    if row["error"]:
        cells.append(_first_line(row["error"]))
    return "\t".join(cells)


def _none_if_unsupported(list_them: Any, args: argparse.Namespace) -> list[Any]:
    """A list method's answer, or ``[]`` when the server does not have that method
    (-32601): a server without resource templates simply has none."""
    try:
        return list(list_them(timeout=_remaining(args)))
    except errors.MethodNotFound:
        return []


def _check_any_up(hub: Any, *, cut_short: bool = False) -> None:
    """Warn about servers that are down; when none is up, fail with the right exit code
    (``cut_short``: the run's time is up; warn only, connecting nothing more)."""
    states = hub.status() if cut_short else hub.connect_all()
    down = [s for s in states.values() if s.state in ("failed", "needs-auth", "disabled")]
    for s in down:
        if s.state == "disabled" and (s.error or "").startswith("disabled in its config"):
            continue  # switched off on purpose: nothing to warn about
        print(
            f"mcp-lite: warning: server {safe(s.name)!r} is {s.state}: "
            f"{safe(s.error, keep_lines=True)}",
            file=sys.stderr,
        )
    if cut_short:
        return  # the timeout is the outcome
    if down and not any(s.state == "connected" for s in states.values()):
        if all(s.state == "disabled" for s in down):
            raise errors.ConfigError("no configured server may start (see the warnings)")
        if any(s.state == "needs-auth" for s in down):
            raise errors.AuthRequired("no configured server is usable: authorization needed")
        raise errors.ConnectError("no configured server could be connected")


def _print_event(event: Any) -> None:
    if event.status == "progress":
        _print_progress(event)


def _prompt_text(got: Any) -> str:
    """A ``GetPromptResult`` for a terminal: one ``[role] text`` paragraph per message."""
    return "\n\n".join(
        f"[{safe(m.role)}] {m.content.text if m.content.text is not None else safe(m.content.type)}"
        for m in got.messages
    )


def _blocks_text(args: argparse.Namespace, blocks: list[Any], written: list[str]) -> list[str]:
    """Content blocks (tool results or resource contents, as wire dicts) for a terminal: text
    as is; images, audio and blobs written to ``--output`` or summarised as
    ``[image/png, 12 KB]``, never dropped."""
    lines: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        inner = block.get("resource") if kind == "resource" else block
        if not isinstance(inner, dict):
            continue
        if isinstance(inner.get("text"), str):
            lines.append(inner["text"])
        elif kind in ("image", "audio") and isinstance(block.get("data"), str):
            lines.append(_binary(args, block["data"], block.get("mimeType"), kind, written))
        elif isinstance(inner.get("blob"), str):
            lines.append(_binary(args, inner["blob"], inner.get("mimeType"), "blob", written))
        elif kind == "resource_link":
            lines.append(f"[link: {safe(block.get('uri', ''))}]")
    return lines


def _binary(args: argparse.Namespace, data: str, mime: Any, kind: str, written: list[str]) -> str:
    """``[image/png, 12 KB]``, or ``[image/png, 12 KB] written to FILE`` with ``--output``
    (a second binary block goes to FILE-2.ext, and so on)."""
    import base64
    import binascii
    from pathlib import Path

    default = {"image": "image/png", "audio": "audio/wav"}.get(kind, "application/octet-stream")
    mime = safe(mime or default)
    try:
        raw = base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return f"[{mime}: invalid base64 data]"
    label = f"[{mime}, {human_size(len(raw))}]"
    if not args.output:
        return label
    path = Path(args.output)
    if written:
        path = path.with_name(f"{path.stem}-{len(written) + 1}{path.suffix}")
    try:
        path.write_bytes(raw)
    except OSError as exc:
        raise UsageError(f"cannot write --output {str(path)!r}: {exc.strerror or exc}") from None
    written.append(str(path))
    return f"{label} written to {path}"


def _result_text(args: argparse.Namespace, result: dict[str, Any]) -> str:
    """A ``CallToolResult`` dict for a terminal: its blocks (see ``_blocks_text``), else its
    structured content as JSON."""
    written: list[str] = []
    lines = _blocks_text(args, list(result.get("content") or []), written)
    if not lines and result.get("structuredContent") is not None:
        return json.dumps(result["structuredContent"], ensure_ascii=False)
    return "\n".join(lines)


def _read_text(args: argparse.Namespace, read: dict[str, Any]) -> str:
    """A ``ReadResourceResult`` dict for a terminal."""
    return "\n".join(_blocks_text(args, list(read.get("contents") or []), []))


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    elif text:  # nothing to show prints nothing, never a blank line
        print(text)


def _listing_time(args: argparse.Namespace) -> float:
    """The time the servers' lists share: what is left of the run, and at least a moment
    for the servers that connected just before the deadline to answer (the backstop's
    grace allows it), so what can be listed at once is printed."""
    left: float = args.deadline.remaining()
    return max(left, _BACKSTOP_GRACE / 4)


def _emit_listing(args: argparse.Namespace, kind: str, data: Any, text: str) -> None:
    """A list gathered from the configured servers; when the run's deadline cut the listing
    short it is partial: printed (not with ``--json``: the JSON error is the whole output),
    then the run ends as a timeout (124), never as a success a cron job would trust."""
    if not args.deadline.expired():
        _emit(args, data, text)
        return
    message = f"listing the {kind} of the configured servers did not finish within the "
    message += args.deadline.describe()
    if not args.json and text:
        print(text)
        message += "; the list printed is partial"
    raise errors.RequestTimeout(message, args.deadline.timeout)


def _print_progress(progress: Any) -> None:
    total = f"/{progress.total:g}" if progress.total else ""
    message = f" {safe(progress.message)}" if progress.message else ""
    sys.stderr.write(f"\r\033[K… {progress.progress:g}{total}{message}")
    sys.stderr.flush()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
