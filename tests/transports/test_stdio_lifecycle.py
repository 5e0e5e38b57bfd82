"""stdio lifecycle guarantees: threads, fork, forgotten clients, interpreter exit."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import mcp_lite

REPO = Path(__file__).resolve().parents[2]
ECHO = [sys.executable, str(REPO / "tests" / "peers" / "fault_server.py"), "echo"]
DEMO = [sys.executable, str(REPO / "examples" / "demo_server.py")]



def test_sixteen_threads_by_two_hundred_calls_over_stdio(no_leftover_processes):
    wrong: list = []
    with mcp_lite.connect(DEMO) as client:

        def worker(n: int) -> None:
            for i in range(200):
                got = client.call_tool("add", {"a": n, "b": i}).structured_content
                if got != {"result": n + i}:
                    wrong.append((n, i, got))

        threads = [threading.Thread(target=worker, args=(n * 1000,)) for n in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
    assert wrong == []
    no_leftover_processes()


def test_fork_child_reconnects_and_parent_keeps_working(in_fork, pid_gone, no_leftover_processes):
    client = mcp_lite.connect(ECHO)
    parent_server = client.transport.pid
    assert client.call_tool("echo", {"text": "before"}).text == "before"

    def child() -> str:
        text = client.call_tool("echo", {"text": "child"}).text
        child_server = client.transport.pid
        client.close()
        return f"{text} {child_server}"

    report = in_fork(child)
    text, child_server = report.split()
    assert text == "child"
    assert int(child_server) != parent_server  # the child started its own server...
    assert pid_gone(int(child_server))  # ...and stopped it
    # The parent's connection was never touched by the child.
    assert client.transport.pid == parent_server
    assert client.call_tool("echo", {"text": "after"}).text == "after"
    client.close()
    assert pid_gone(parent_server)
    no_leftover_processes()


def test_a_forgotten_client_is_closed_when_collected(pid_gone):
    client = mcp_lite.connect(ECHO)
    pid = client.transport.pid
    del client
    gc.collect()
    assert pid_gone(pid)


def test_interpreter_exit_stops_the_server(pid_gone):
    script = textwrap.dedent(f"""
        import mcp_lite, sys
        client = mcp_lite.connect({ECHO!r})
        print(client.transport.pid, flush=True)
        # no close(): the exit backstop must stop the server
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert out.returncode == 0, out.stderr
    assert pid_gone(int(out.stdout.strip()))


def test_a_dead_server_is_replaced_on_the_next_call(pid_gone):
    with mcp_lite.connect(ECHO) as client:
        first = client.transport.pid
        os.kill(first, 9)
        assert pid_gone(first)
        # The reader saw the death; the next call starts a new server transparently.
        assert client.call_tool("echo", {"text": "back"}).text == "back"
        assert client.transport.pid != first


def test_environment_is_an_allow_list_plus_configured_env():
    probe = [
        sys.executable,
        "-c",
        textwrap.dedent("""
        import json, os, sys
        for line in sys.stdin:
            msg = json.loads(line)
            if "id" not in msg:
                continue
            if msg["method"] == "initialize":
                result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                          "serverInfo": {"name": "env", "version": "1"}}
            elif msg["method"] == "tools/call":
                result = {"content": [{"type": "text", "text": json.dumps(dict(os.environ))}]}
            else:
                print(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                  "error": {"code": -32601, "message": "nope"}}), flush=True)
                continue
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
    """),
    ]
    os.environ["MCP_LITE_TEST_SECRET"] = "do-not-leak"
    try:
        with mcp_lite.connect(probe, env={"EXTRA": "1"}) as client:
            import json

            env = json.loads(client.call_tool("env").text)
    finally:
        del os.environ["MCP_LITE_TEST_SECRET"]
    assert env["EXTRA"] == "1" and "PATH" in env
    assert "MCP_LITE_TEST_SECRET" not in env


def test_closed_is_true_only_after_close_and_is_read_only(pid_gone, no_leftover_processes):
    client = mcp_lite.Client(ECHO, auto_reconnect=False)
    assert client.closed is False and client.connected is False  # not opened yet
    client.open(timeout=20)
    assert client.call_tool("echo", {"text": "x"}).text == "x"
    assert (client.closed, client.connected) == (False, True)
    pid = client.transport.pid
    os.kill(pid, 9)  # the server dies: the client is not closed, only disconnected
    assert pid_gone(pid)
    for _ in range(200):
        if not client.connected:
            break
        threading.Event().wait(0.02)
    assert (client.closed, client.connected) == (False, False)
    with pytest.raises(AttributeError):
        client.closed = True  # type: ignore[misc]
    client.close()
    assert client.closed is True
    client.close()  # idempotent
    assert client.closed is True
    no_leftover_processes()
