"""Tasks that outlive the process: a task started by one process (a subprocess that prints
``task.id`` and exits) is collected, watched or cancelled by another (this test process) with
``Client.resume_task`` / ``Hub.resume_task``, over Streamable HTTP on 127.0.0.1, in both eras;
a stdio server cannot resume an earlier process's task, and says so. Where the other process
is not the subject (the Hub's routing, deadlines, input asked after the starter left), the
starter is a client of this process that closed before the resume."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import InvalidParams, McpError, RequestTimeout
from mcp_lite.server import Context, Server

sys.path.insert(0, str(Path(__file__).parent.parent / "peers"))
from task_server import tools

ERAS = ["2025-11-25", "2026-07-28"]
PEER = Path(__file__).parent.parent / "peers" / "task_server.py"
REPO = Path(__file__).parent.parent.parent
SLACK = 1.0

START = """
import json, sys
import mcp_lite
url, era, tool, args = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
with mcp_lite.connect(url, protocol_version=era) as client:
    print(client.call_tool_as_task(tool, args).id)
"""


def start_elsewhere(url: str, era: str, tool: str, args: dict[str, Any] | None = None) -> str:
    """Start ``tool`` as a task in another process, which prints the id and exits."""
    done = subprocess.run(
        [sys.executable, "-c", START, url, era, tool, json.dumps(args or {})],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    task_id = done.stdout.strip()
    assert task_id
    return task_id


def start_here(url: str, era: str, tool: str, args: dict[str, Any] | None = None) -> str:
    """Start ``tool`` as a task on a client of this process, closed before this returns."""
    with mcp_lite.connect(url, protocol_version=era) as client:
        return client.call_tool_as_task(tool, args or {}).id


@pytest.fixture
def seen() -> list[str]:
    return []


@pytest.fixture
def url(seen: list[str]) -> Iterator[str]:
    server = tools(Server("tasks"))

    @server.tool(task_support="required")
    def watched(ctx: Context) -> str:
        """Runs until cancelled, and records that it saw the cancel."""
        while not ctx.cancelled.is_set():
            time.sleep(0.02)
        seen.append("cancelled")
        return "watched"

    @server.tool(task_support="required")
    def approve(ctx: Context) -> str:
        """Asks the client, from inside the task (after a moment, so the starter is gone)."""
        time.sleep(0.5)
        answer = ctx.elicit(
            "Approve?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        )
        return f"approved={answer.get('content', {}).get('ok')}"

    with server.serve_http(port=0) as http:
        yield http.url


@pytest.mark.parametrize("era", ERAS)
def test_collected_by_another_process(url: str, era: str) -> None:
    task_id = start_elsewhere(url, era, "build", {"steps": 3})
    with mcp_lite.connect(url, protocol_version=era) as client:
        task = client.resume_task(task_id, timeout=10)
        assert task.id == task_id and task.tool == ""
        assert task.last_status.task_id == task_id
        assert task.result(timeout=10).text == "built in 3 steps"
        assert task.status().status == "completed"
        assert task.result(timeout=10).text == "built in 3 steps"  # kept


@pytest.mark.parametrize("era", ERAS)
def test_cancelled_from_another_process(url: str, era: str, seen: list[str]) -> None:
    task_id = start_elsewhere(url, era, "watched")
    with mcp_lite.connect(url, protocol_version=era) as client:
        task = client.resume_task(task_id, timeout=10)
        assert task.last_status.status == "working"  # the starter's exit ended nothing
        task.cancel(timeout=10)
        assert task.status(timeout=10).status == "cancelled"
        with pytest.raises(McpError, match="cancelled"):
            task.result(timeout=10)
    for _ in range(100):
        if seen:
            break
        time.sleep(0.05)
    assert seen == ["cancelled"]  # the handler saw ctx.cancelled


@pytest.mark.parametrize("era", ERAS)
def test_input_asked_after_the_starter_left(url: str, era: str) -> None:
    # the task's elicitation reaches the process that resumed it (2025-11-25: on its
    # tasks/result stream; 2026-07-28: as inputRequests answered with tasks/update)
    task_id = start_here(url, era, "approve")
    accept = {"action": "accept", "content": {"ok": True}}
    with mcp_lite.connect(url, protocol_version=era, elicitation_handler=lambda p: accept) as c:
        assert c.resume_task(task_id, timeout=10).result(timeout=20).text == "approved=True"


@pytest.mark.parametrize("era", ERAS)
def test_unknown_task_id(url: str, era: str) -> None:
    with mcp_lite.connect(url, protocol_version=era) as client:
        with pytest.raises(InvalidParams) as info:
            client.resume_task("no-such-task", timeout=10)
        message = str(info.value)
        assert "task no-such-task is unknown to MCP server" in message
        assert client.name in message and "expired" in message
        assert info.value.code == -32602


@pytest.mark.parametrize("era", ERAS)
def test_hub_resume_task(url: str, era: str) -> None:
    task_id = start_here(url, era, "build")
    config = {"mcpServers": {"jobs": {"type": "http", "url": url}}}
    with mcp_lite.Hub(config, client_options={"protocol_version": era}) as hub:
        task = hub.resume_task("jobs", task_id, timeout=10)
        assert task.result(timeout=10).text == "built in 1 steps"
        with pytest.raises(mcp_lite.errors.ConfigError):
            hub.resume_task("nope", task_id)


@pytest.mark.parametrize("era", ERAS)
def test_result_deadline_against_a_task_that_never_ends(url: str, era: str) -> None:
    task_id = start_here(url, era, "hold")
    with mcp_lite.connect(url, protocol_version=era) as client:
        started = time.monotonic()
        task = client.resume_task(task_id, timeout=1)
        with pytest.raises(RequestTimeout, match=f"task {task_id} did not finish"):
            task.result(timeout=1)
        assert time.monotonic() - started < 2 + SLACK
        task.cancel(timeout=10)


def test_resume_deadline_against_a_silent_server() -> None:
    # a server that accepts and never answers: resume_task ends on its one deadline
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        target = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        client = mcp_lite.Client(target, timeout=30)  # connects on first use: in resume_task
        try:
            started = time.monotonic()
            with pytest.raises(RequestTimeout, match="1 s timeout"):
                client.resume_task("some-task", timeout=1)
            assert time.monotonic() - started < 1 + SLACK
        finally:
            client.close()
    finally:
        stop.set()
        thread.join(5)
        for s in held:
            s.close()
        listener.close()


STDIO_START = """
import json, sys
import mcp_lite
command, era = json.loads(sys.argv[1]), sys.argv[2]
with mcp_lite.connect(command, protocol_version=era) as client:
    task = client.call_tool_as_task("hold")
    assert task.status().status == "working"
    print(task.id, client.transport.pid)
"""


@pytest.mark.usefixtures("no_leftover_processes")
@pytest.mark.parametrize("era", ERAS)
def test_stdio_task_died_with_the_process_that_started_it(era: str) -> None:
    # process A starts a task on its own stdio server and exits; the server dies with it
    command = [sys.executable, str(PEER), "stdio"]
    done = subprocess.run(
        [sys.executable, "-c", STDIO_START, json.dumps(command), era],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    task_id, pid = done.stdout.split()
    for _ in range(100):  # A's server ended with A
        if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text():
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"process A's stdio server {pid} outlived it")
    with (
        mcp_lite.connect(command, protocol_version=era) as client,
        pytest.raises(InvalidParams) as info,
    ):
        client.resume_task(task_id, timeout=10)
    message = str(info.value)
    assert f"task {task_id} is unknown to MCP server" in message
    assert "a stdio server's tasks end with the process that started it" in message
    assert "run the server behind the gateway or over HTTP to resume tasks" in message


@pytest.mark.usefixtures("no_leftover_processes")
def test_stdio_server_cannot_resume_an_earlier_process_task() -> None:
    command = [sys.executable, str(PEER), "stdio"]
    with mcp_lite.connect(command, protocol_version="2025-11-25") as first:
        task = first.call_tool_as_task("hold")
        assert task.status().status == "working"
    # a new client starts a new server process, which never heard of that task
    with (
        mcp_lite.connect(command, protocol_version="2025-11-25") as second,
        pytest.raises(InvalidParams) as info,
    ):
        second.resume_task(task.id, timeout=10)
    message = str(info.value)
    assert f"task {task.id} is unknown to MCP server" in message
    assert "a stdio server's tasks end with the process that started it" in message
    assert "behind the gateway or over HTTP" in message


@pytest.mark.usefixtures("no_leftover_processes")
def test_hub_stdio_server_says_it_cannot_resume() -> None:
    config = {"mcpServers": {"jobs": {"command": sys.executable, "args": [str(PEER), "stdio"]}}}
    with (
        mcp_lite.Hub(config, client_options={"protocol_version": "2025-11-25"}) as hub,
        pytest.raises(InvalidParams, match="a stdio server's tasks end with the process"),
    ):
        hub.resume_task("jobs", "from-an-earlier-process", timeout=30)


@pytest.mark.usefixtures("no_leftover_processes")
def test_hub_task_holds_its_server_against_an_idle_recycle() -> None:
    # a task is a call in flight: the idle timer must not stop its server while it runs,
    # even with no request outstanding between the start and the result
    config = {"mcpServers": {"jobs": {"command": sys.executable, "args": [str(PEER), "stdio"]}}}
    with mcp_lite.Hub(config, idle_timeout=0.2) as hub:
        task = hub.call_tool_as_task("mcp__jobs__slow", {"seconds": 1.0}, timeout=30)
        pid = hub.status()["jobs"].pid
        time.sleep(0.6)  # three idle timeouts with no request in flight
        assert hub.status()["jobs"].recycles == 0
        assert task.result(timeout=10).text == "slept 1.0"
        assert hub.status()["jobs"].pid == pid
        # the task ended: its hold is released, and the idle server is stopped
        deadline = time.monotonic() + 5
        while hub.status()["jobs"].recycles == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hub.status()["jobs"].recycles == 1
        # a handle dropped before its task ended still holds its server: the id may be
        # resumed (the hold is bounded by the task's ttl); once cancelled, the server goes
        dropped = hub.call_tool_as_task("mcp__jobs__hold", {}, timeout=30)
        assert dropped.last_status.status == "working"
        task_id = dropped.id
        del dropped
        gc.collect()
        deadline = time.monotonic() + 5
        while hub.status()["jobs"].recycle_deferred is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hub.status()["jobs"].recycles == 1
        again = hub.resume_task("jobs", task_id, timeout=10)
        again.cancel(timeout=10)
        deadline = time.monotonic() + 5
        while again.last_status.status != "cancelled" and time.monotonic() < deadline:
            again.status(timeout=10)
        deadline = time.monotonic() + 5
        while hub.status()["jobs"].recycles == 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hub.status()["jobs"].recycles == 2
