"""The CLI's task commands: ``call --as-task`` and ``task status|result|cancel``,
on a server given on the command line or a configured one."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .common import EXIT_OK, EXIT_TOOL_ERROR, UsageError, _emit, _remaining, safe
from .render import _result_text

if TYPE_CHECKING:
    pass


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
