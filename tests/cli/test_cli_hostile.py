"""What ``mcp-lite`` does with a hostile or failing server, run as the console script a cron job
runs: escape sequences in what the server names are shown escaped (tool result text stays
data), a closed stdout ends the run quietly, a failure in ``--json`` mode is also a JSON object
on stdout, and ``--timeout`` bounds the whole run with the exit code its ``--help`` names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_lite import cli

ROOT = Path(__file__).resolve().parents[2]
ESC = "\x1b"
# Clear the line, move up, and write the clipboard (OSC 52): what a server could make a
# terminal do if its strings were printed as they are.
EVIL = f"{ESC}[2K{ESC}[1A{ESC}]52;c;ZXZpbA=={chr(7)}"

HOSTILE_SERVER = f'''
import sys
sys.path.insert(0, {str(ROOT)!r})
import mcp_lite

server = mcp_lite.Server("hostile")

@server.tool(name="ok{EVIL!s}", description="adds{EVIL!s}\\nsecond line")
def add(a: int = 1) -> str:
    return "result{EVIL!s}"

for n in range(300):
    server.tool(name=f"filler_{{n}}", description="x" * 200)(lambda: "x")

server.run_stdio()
'''


def _script(tmp_path: Path, text: str, name: str = "server.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return f"{sys.executable} {path}"


def _cli(*argv: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "mcp_lite", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
        stdin=stdin,
    )


def test_escape_sequences_from_the_server_are_shown_escaped(tmp_path: Path) -> None:
    server = _script(tmp_path, HOSTILE_SERVER)
    done = _cli("tools", "--stdio", server)
    assert done.returncode == 0, done.stderr
    assert ESC not in done.stdout and chr(7) not in done.stdout
    first = done.stdout.splitlines()[0]
    assert first.startswith("ok\\x1b[2K\\x1b[1A\\x1b]52;c;ZXZpbA==\\x07\t"), first
    # JSON stays data: the exact string, JSON-escaped
    as_json = _cli("tools", "--json", "--stdio", server)
    assert json.loads(as_json.stdout)[0]["name"] == f"ok{EVIL}"
    # the tool's result text is data too: printed as the server sent it
    called = _cli("call", "--stdio", server, f"ok{EVIL}")
    assert called.returncode == 0, called.stderr
    assert called.stdout == f"result{EVIL}\n"


def test_safe_escapes_controls_but_keeps_text() -> None:
    assert cli.safe("plain ünïcode") == "plain ünïcode"
    assert cli.safe("a\tb\nc\rd\x00\x7f\x9b") == "a\\tb\\nc\\rd\\x00\\x7f\\x9b"
    assert cli.safe("line 1\nline\t2\r", keep_lines=True) == "line 1\nline\t2\\r"


def test_error_messages_from_the_server_are_escaped(tmp_path: Path) -> None:
    server = _script(tmp_path, f"import sys\nsys.stderr.write({EVIL!r})\nsys.exit(3)\n")
    done = _cli("tools", "--stdio", server)
    assert done.returncode == cli.EXIT_CONNECT, done.stderr
    assert ESC not in done.stderr and "\\x1b" in done.stderr


def test_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    server = _script(tmp_path, HOSTILE_SERVER)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = f"{sys.executable} -m mcp_lite tools --json --stdio '{server}' | head -c 100"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    assert len(done.stdout) == 100
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode in (0, cli.EXIT_BROKEN_PIPE)


def test_json_mode_prints_the_failure_as_json_too(tmp_path: Path) -> None:
    server = _script(tmp_path, "import sys\nsys.exit(3)\n")
    done = _cli("call", "--json", "--stdio", server, "add")
    assert done.returncode == cli.EXIT_CONNECT
    error = json.loads(done.stdout)["error"]
    assert error["exit_code"] == cli.EXIT_CONNECT
    assert error["type"] and error["message"]
    assert done.stderr.startswith("mcp-lite: connection failed:")


NEVER_ANSWERS = "import sys, time\nsys.stdin.read()\ntime.sleep(3600)\n"
ANSWERS_HANDSHAKE_ONLY = f'''
import sys
sys.path.insert(0, {str(ROOT)!r})
import time
import mcp_lite

server = mcp_lite.Server("slow")

@server.tool()
def wait() -> str:
    time.sleep(3600)
    return "never"

server.run_stdio()
'''


# Answers the handshake late (2.5 s), then never answers a call: with --timeout 3 the call
# gets only what the handshake left, so the run ends near 3 s (not 2.5 + 3 s).
SLOW_HANDSHAKE = """
import json, sys, time
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        time.sleep(2.5)
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities":
                  {"tools": {}}, "serverInfo": {"name": "slow", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
    elif msg["method"] != "tools/call":
        error = {"code": -32601, "message": "no such method"}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}), flush=True)
"""


@pytest.mark.parametrize(
    ("script", "argv", "timeout"),
    [
        (NEVER_ANSWERS, ["tools"], "1.5"),
        (ANSWERS_HANDSHAKE_ONLY, ["call", "wait"], "1.5"),
        (SLOW_HANDSHAKE, ["call", "wait"], "3"),
    ],
    ids=["connecting", "calling", "one-total"],
)
def test_timeout_bounds_the_whole_run(
    tmp_path: Path, script: str, argv: list[str], timeout: str
) -> None:
    server = _script(tmp_path, script)
    started = time.monotonic()
    done = _cli(argv[0], "--timeout", timeout, "--json", "--stdio", server, *argv[1:])
    elapsed = time.monotonic() - started
    assert done.returncode == cli.EXIT_TIMEOUT, (done.returncode, done.stderr)
    assert elapsed < float(timeout) + 1.0 + 1.0, elapsed  # timeout + slack + start-up
    assert "timeout" in done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["error"]["exit_code"] == cli.EXIT_TIMEOUT


def test_help_names_the_exit_codes_it_uses() -> None:
    from mcp_lite.cli import parser

    text = parser._EPILOG
    for code in (cli.EXIT_OK, cli.EXIT_TOOL_ERROR, cli.EXIT_USAGE, cli.EXIT_CONNECT):
        assert f"\n  {code}    " in text
    for code in (cli.EXIT_TIMEOUT, cli.EXIT_BROKEN_PIPE):
        assert f"\n  {code}  " in text
    assert "timeout while connecting" not in text  # a connect timeout is 124, not 3


FAST_SERVER = f'''
import sys
sys.path.insert(0, {str(ROOT)!r})
import mcp_lite

server = mcp_lite.Server("fast")

@server.tool()
def add(a: int = 1) -> int:
    return a

server.run_stdio()
'''


# Answers the handshake at once, then nothing more: its tools/list never comes back.
LISTS_NOTHING = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities":
                  {"tools": {}}, "serverInfo": {"name": "stuck", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


@pytest.mark.usefixtures("no_leftover_processes")
@pytest.mark.parametrize(
    ("script", "says"),
    [(NEVER_ANSWERS, "server 'slow' is failed"), (LISTS_NOTHING, "'slow': could not list")],
    ids=["never-connects", "never-lists"],
)
def test_a_listing_cut_short_by_the_timeout_exits_124(
    tmp_path: Path, script: str, says: str
) -> None:
    """``tools`` over configured servers, one of which never answers (its handshake, or its
    tools/list): the run's ``--timeout`` cuts the listing short. The partial list is printed
    and marked so, and the run ends as a timeout (124), not as a success with a warning."""
    config = tmp_path / "servers.json"
    servers = {
        "fast": {"command": sys.executable, "args": [str(tmp_path / "fast.py")]},
        "slow": {"command": sys.executable, "args": [str(tmp_path / "slow.py")]},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    _script(tmp_path, FAST_SERVER, "fast.py")
    _script(tmp_path, script, "slow.py")
    project = ("--project", str(tmp_path), "--config", str(config), "--timeout", "6")
    started = time.monotonic()
    done = _cli("tools", *project)
    elapsed = time.monotonic() - started
    assert done.returncode == cli.EXIT_TIMEOUT, (done.returncode, done.stderr)
    # the timeout, the CLI's 1 s backstop grace, and its start-up and close three times slower
    # than on an idle machine (about 0.7 s there); a run the timeout did not cut never ends
    assert elapsed < 6 + 1.0 + 2.0, elapsed
    assert done.stdout.startswith("mcp__fast__add\t"), done.stderr  # what was listed stays
    assert says in done.stderr
    assert "the list printed is partial" in done.stderr
    # --json: one JSON object on stdout, the error (a partial list is not a list)
    as_json = _cli("tools", *project, "--json")
    assert as_json.returncode == cli.EXIT_TIMEOUT, as_json.stderr
    (line,) = as_json.stdout.splitlines()
    assert json.loads(line)["error"]["exit_code"] == cli.EXIT_TIMEOUT


def test_a_listing_within_the_timeout_exits_0(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    servers = {"fast": {"command": sys.executable, "args": [str(tmp_path / "fast.py")]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    _script(tmp_path, FAST_SERVER, "fast.py")
    whole = _cli("tools", "--project", str(tmp_path), "--config", str(config), "--timeout", "6")
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout.startswith("mcp__fast__add\t")
