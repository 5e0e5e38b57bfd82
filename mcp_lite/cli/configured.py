"""The CLI's commands on the configured servers (a ``Hub`` read like Claude Code
reads its configuration): servers, tools, call, resources, read, prompts, prompt."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .. import errors
from .common import (
    CLI_TRUST_HINT,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    UsageError,
    _emit,
    _first_line,
    _remaining,
    safe,
)
from .render import (
    _check_any_up,
    _did_you_mean,
    _emit_listing,
    _listing_time,
    _print_event,
    _prompt_text,
    _read_text,
    _server_row,
)
from .tasks import _hub_task_command

if TYPE_CHECKING:
    from .._options import ClientOptions


def _run_configured(args: argparse.Namespace, arguments: dict[str, Any]) -> int:
    """The commands on the configured servers (a Hub)."""
    import shutil
    import tempfile

    from ..hub import Backoff, Hub

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
