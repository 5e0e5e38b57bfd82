"""What every command of the CLI shares: the exit codes, ``UsageError``, the run's
remaining time, printing a server's text safely (control characters escaped),
one-line errors and the JSON output."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

__all__ = [
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "EXIT_CONNECT",
    "EXIT_AUTH",
    "EXIT_PROTOCOL",
    "EXIT_TIMEOUT",
    "EXIT_BROKEN_PIPE",
    "UsageError",
    "CLI_TRUST_HINT",
    "safe",
]


EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, EXIT_CONNECT, EXIT_AUTH, EXIT_PROTOCOL = 0, 1, 2, 3, 4, 5


EXIT_TIMEOUT = 124


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what the shell reports for `yes | head`


# After the deadline, the process ends even if some path is still blocked (a backstop: every
# call already has the remaining time as its own timeout).
_BACKSTOP_GRACE = 1.0


class UsageError(Exception):
    """Bad command-line input: exit code 2."""


CLI_TRUST_HINT = "start it with --trust-project {name} (or --trust-project for all of them)"


def _remaining(args: argparse.Namespace) -> float:
    """What is left of the run's ``--timeout``, as the timeout of the next step."""
    left: float = args.deadline.remaining()
    if left <= 0:
        raise args.deadline.error("mcp-lite", "the command did not finish")
    return left


def _print_json_error(kind: str, message: str, code: int) -> None:
    error = {"type": kind, "message": message, "exit_code": code}
    json.dump({"error": error}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    sys.stdout.flush()


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


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    elif text:  # nothing to show prints nothing, never a blank line
        print(text)
