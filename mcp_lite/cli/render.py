"""How the CLI prints what servers answer: tool results and their content blocks
(binary content to files), prompts, resources, progress and events, listings and
server rows, and did-you-mean suggestions for unknown tools."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import errors
from .._text import human_size, plural
from .common import _BACKSTOP_GRACE, UsageError, _emit, _first_line, _remaining, safe

if TYPE_CHECKING:
    pass


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
