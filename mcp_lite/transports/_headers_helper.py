"""A remote server's ``headersHelper``: the shell command a config entry may give to print the
HTTP headers of each connect, run within the connect's deadline, in a small environment, its
bounded output a secret (see docs/explanation/security.md, "Headers from a helper").
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from .._deadline import Deadline
from .._secrets import header_problem
from ..errors import ConnectError, McpError

if TYPE_CHECKING:
    import subprocess

__all__ = ["MAX_OUTPUT", "helper_refused", "run_headers_helper"]

log = logging.getLogger("mcp_lite.transports")

MAX_OUTPUT = 64 * 1024
"""The most bytes a helper may print; more is refused (the helper is killed)."""
_CHUNK = 16 * 1024
# After SIGKILL the exit is reaped within this (a killed process cannot delay it).
_REAP_WAIT = 1.0


def helper_refused(target: Any, error: McpError) -> bool:
    """``error`` is an HTTP 401 or 403 answer from a server (``target``) whose headers a
    headersHelper makes: the helper runs again with a new connection, once."""
    return (
        isinstance(target, Mapping)
        and bool(target.get("headersHelper"))
        and error._http_status in (401, 403)
    )


class _TooBig(Exception):
    pass


def run_headers_helper(
    command: str, *, server: str, url: str, deadline: Deadline
) -> dict[str, str]:
    """Run ``command`` for the server ``server`` at ``url`` and return the headers it printed.

    Raises:
        ConnectError: it could not start, exited with an error, printed more than
            ``MAX_OUTPUT`` bytes or something that is not a JSON object of string headers.
        RequestTimeout: it did not finish before ``deadline`` (it was killed).
    """
    import subprocess  # here: ``import mcp_lite`` does not need it

    phase = f"MCP server {server!r}: headersHelper"
    deadline.check(phase, "the helper was not started")
    from .stdio import safe_environment  # the allow-list a stdio server gets

    env = safe_environment(
        {"CLAUDE_CODE_MCP_SERVER_NAME": server, "CLAUDE_CODE_MCP_SERVER_URL": url}
    )
    posix = sys.platform != "win32"
    argv = (
        ["/bin/sh", "-c", command]
        if posix
        else [os.environ.get("COMSPEC", "cmd.exe"), "/c", command]
    )
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # may echo a token: never read, never logged
            env=env,
            start_new_session=posix,  # its own group: a timeout kills all it started
            close_fds=True,
            bufsize=0,
        )
    except OSError as exc:
        raise ConnectError(f"{phase}: the command could not be started ({exc.strerror})") from None
    assert proc.stdout is not None
    try:
        try:
            raw = _read(proc.stdout, deadline)
        except _TooBig:
            raise ConnectError(
                f"{phase}: it printed more than {MAX_OUTPUT // 1024} KiB (refused)"
            ) from None
        if raw is None:
            raise deadline.error(phase, "the helper did not finish")
        try:
            code = proc.wait(_seconds(deadline))
        except subprocess.TimeoutExpired:
            raise deadline.error(phase, "the helper did not exit") from None
    except BaseException:
        _kill(proc)
        raise
    finally:
        proc.stdout.close()
    if code != 0:
        raise ConnectError(f"{phase}: the command failed (exit code {code})")
    headers = _parse(raw, phase)
    log.debug("%s: %d header(s) made", phase, len(headers))
    return headers


def _read(stream: IO[bytes], deadline: Deadline) -> bytes | None:
    """All of ``stream`` (None when the deadline came first), at most ``MAX_OUTPUT`` bytes
    held: one byte more raises ``_TooBig`` before the rest is read."""
    if sys.platform == "win32":  # no select() on pipes there
        return _read_in_thread(stream, deadline)
    import selectors

    out = bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        while True:
            if not sel.select(_seconds(deadline)):
                if deadline.expired():
                    return None
                continue
            chunk = os.read(stream.fileno(), min(_CHUNK, MAX_OUTPUT + 1 - len(out)))
            if not chunk:
                return bytes(out)
            out += chunk
            if len(out) > MAX_OUTPUT:
                raise _TooBig


def _read_in_thread(stream: IO[bytes], deadline: Deadline) -> bytes | None:
    got: list[bytes | None] = [None]
    too_big = threading.Event()

    def pump() -> None:
        out = bytearray()
        while chunk := stream.read(min(_CHUNK, MAX_OUTPUT + 1 - len(out))):
            out += chunk
            if len(out) > MAX_OUTPUT:
                too_big.set()
                return
        got[0] = bytes(out)

    reader = threading.Thread(target=pump, name="mcp-lite-headers-helper", daemon=True)
    reader.start()
    reader.join(_seconds(deadline))
    if too_big.is_set():
        raise _TooBig
    return got[0]


def _seconds(deadline: Deadline) -> float | None:
    """What is left of ``deadline`` for a wait (None: no deadline, wait for the end)."""
    left = deadline.remaining()
    return None if left > threading.TIMEOUT_MAX else left


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the helper and everything in its process group, and reap it."""
    import signal
    import subprocess

    try:
        if sys.platform == "win32":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(_REAP_WAIT)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        log.warning("headersHelper pid %s did not die after SIGKILL", proc.pid)


def _parse(raw: bytes, phase: str) -> dict[str, str]:
    """The headers in ``raw``; the errors name what is wrong, never what was printed."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ConnectError(
            f"{phase}: its output is not JSON (expected an object of headers)"
        ) from None
    if not isinstance(data, dict):
        raise ConnectError(
            f"{phase}: its output is a JSON {type(data).__name__}, not an object of headers"
        )
    for name, value in data.items():
        if not isinstance(value, str):
            raise ConnectError(
                f"{phase}: its output has a header whose value is a JSON "
                f"{type(value).__name__}, not a string"
            )
        if header_problem(name, value) is not None:
            raise ConnectError(
                f"{phase}: its output has a header with an invalid name, or a line break or "
                "NUL in a value (refused)"
            )
    return data
