"""Running one CLI command: ``main`` parses, sets the run's one deadline and its
backstop on the process timer, dispatches the command (a server given by ``--stdio`` or
``--url``, or the configured ones) and maps the library's errors to exit codes."""

from __future__ import annotations

import argparse
import contextlib
import logging
import shlex
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

# What only some commands need (difflib, tempfile, shutil, base64, pathlib) is imported where
# it is used: a one-shot `call` starts faster (pathlib alone costs ~5 ms).
from .. import errors
from .._secrets import redact_url
from .auth_command import _run_auth
from .common import (
    _BACKSTOP_GRACE,
    EXIT_AUTH,
    EXIT_BROKEN_PIPE,
    EXIT_CONNECT,
    EXIT_OK,
    EXIT_PROTOCOL,
    EXIT_TIMEOUT,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
    UsageError,
    _emit,
    _fail,
    _first_line,
    _json_object,
    _print_json_error,
    _remaining,
    safe,
)
from .configured import _run_configured
from .gateway_command import _run_gateway
from .parser import _parse
from .render import (
    _none_if_unsupported,
    _print_progress,
    _prompt_text,
    _read_text,
    _result_text,
    _unknown_tool,
)
from .tasks import _task_command

if TYPE_CHECKING:
    pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    try:
        args = _parse(argv)
    except SystemExit as exc:  # argparse already printed the usage message
        return EXIT_USAGE if exc.code not in (0, None) else EXIT_OK
    if not args.timeout > 0:
        return _fail("usage error: --timeout must be a positive number of seconds", EXIT_USAGE)
    from .._deadline import Deadline

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


def _backstop(args: argparse.Namespace) -> Any:
    """An entry on the process timer that ends the process shortly after the deadline,
    whatever is still blocked (every step already gets the remaining time, so this fires
    only if one forgot). Servers the run started are stopped by their watcher when this
    process is gone. Returns the timer handle (``cancel()`` withdraws it)."""
    import os

    from .. import _timer

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
    from ..client import connect

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
            from ..protocol.apps import visible_to

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


# --- tasks: call --as-task, task status|result|cancel -------------------------------------


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
