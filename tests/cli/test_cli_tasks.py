"""``mcp-lite call ... --as-task`` and ``mcp-lite task status|result|cancel TASK_ID``: each a
separate process (as in a cron job), against mcp_lite's small server over Streamable HTTP on
127.0.0.1 in both eras; exit codes as ``call``; ``--json``; the ``--timeout`` of ``task
result`` against a task that never ends; a stdio server refuses tasks across runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_lite import cli
from mcp_lite.server import Server

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "peers"))
from task_server import tools  # noqa: E402

ERAS = ["2025-11-25", "2026-07-28"]
PEER = ROOT / "tests" / "peers" / "task_server.py"
SLACK = 1.0


def mcp_lite(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_lite", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ},
        check=False,
    )


def start(*argv: str) -> str:
    """``mcp-lite call ... --as-task``: the task id it printed."""
    started = mcp_lite("call", *argv, "--as-task")
    assert started.returncode == 0, started.stderr
    return started.stdout.strip()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = tools(Server("tasks"))

    @server.tool(task_support="required")
    def broken() -> str:
        """A tool error (isError), inside a task."""
        raise ValueError("the build broke")

    @server.tool(task_support="optional")
    def quick(a: int) -> int:
        """May run as a task (2026-07-28: the server runs it at once)."""
        return a * 2

    with server.serve_http(port=0) as http:
        yield http.url


def test_server_that_answers_at_once(url: str) -> None:
    # 2026-07-28: the server decides; an answer without a task prints as call does
    done = mcp_lite(
        "call",
        "--url",
        url,
        "--protocol-version",
        "2026-07-28",
        "quick",
        '{"a": 4}',
        "--as-task",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"] == {"result": 8}
    assert "answered at once (no task)" in done.stderr


@pytest.mark.parametrize("era", ERAS)
def test_start_then_collect_in_separate_runs(url: str, era: str) -> None:
    pin = ("--url", url, "--protocol-version", era)
    started = mcp_lite("call", *pin, "build", '{"steps": 2}', "--as-task")
    assert started.returncode == 0, started.stderr
    task_id = started.stdout.strip()
    assert task_id and "\n" not in task_id  # the id alone: ID=$(mcp-lite call ... --as-task)

    collected = mcp_lite("task", "result", *pin, task_id)
    assert collected.returncode == 0, collected.stderr
    assert collected.stdout.strip() == "built in 2 steps"

    status = mcp_lite("task", "status", *pin, task_id)
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip().split("\t")[:2] == [task_id, "completed"]


@pytest.mark.parametrize("era", ERAS)
def test_json_output(url: str, era: str) -> None:
    pin = ("--url", url, "--protocol-version", era, "--json")
    started = mcp_lite("call", *pin, "build", "--as-task")
    assert started.returncode == 0, started.stderr
    out = json.loads(started.stdout)
    assert set(out) == {"taskId", "server", "status"}
    assert out["server"] == url and out["status"] in ("working", "completed")

    result = json.loads(mcp_lite("task", "result", *pin, out["taskId"]).stdout)
    assert result["content"][0]["text"] == "built in 1 steps"
    status = json.loads(mcp_lite("task", "status", *pin, out["taskId"]).stdout)
    assert status["taskId"] == out["taskId"] and status["status"] == "completed"
    assert status["server"] == url and "createdAt" in status


@pytest.mark.parametrize("era", ERAS)
def test_cancel_in_another_run(url: str, era: str) -> None:
    pin = ("--url", url, "--protocol-version", era)
    task_id = start(*pin, "hold")
    cancelled = mcp_lite("task", "cancel", *pin, task_id)
    assert cancelled.returncode == 0, cancelled.stderr
    assert mcp_lite("task", "status", *pin, task_id).stdout.strip().split("\t")[1] == "cancelled"
    collected = mcp_lite("task", "result", *pin, task_id)
    assert collected.returncode == cli.EXIT_PROTOCOL
    assert "cancelled" in collected.stderr


@pytest.mark.parametrize("era", ERAS)
def test_tool_error_exits_1_and_unknown_id_exits_5(url: str, era: str) -> None:
    pin = ("--url", url, "--protocol-version", era)
    task_id = start(*pin, "broken")
    failed = mcp_lite("task", "result", *pin, task_id)
    assert failed.returncode == cli.EXIT_TOOL_ERROR, failed.stderr
    assert "the build broke" in failed.stdout

    # an id may start with "-" (any string is a task id): still the id, not an option
    for argv in (("-no-such-task", *pin), (*pin, "-no-such-task", "--timeout", "30")):
        dashed = mcp_lite("task", "status", *argv)
        assert dashed.returncode == cli.EXIT_PROTOCOL, dashed.stderr
        assert "task -no-such-task is unknown to MCP server" in dashed.stderr

    unknown = mcp_lite("task", "status", *pin, "no-such-task", "--json")
    assert unknown.returncode == cli.EXIT_PROTOCOL
    assert "task no-such-task is unknown to MCP server" in unknown.stderr
    assert json.loads(unknown.stdout)["error"]["exit_code"] == cli.EXIT_PROTOCOL


@pytest.mark.parametrize("era", ERAS)
def test_result_timeout_exits_124_in_time(
    url: str, era: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pin = ("--url", url, "--protocol-version", era)
    task_id = start(*pin, "hold")
    try:
        started = time.monotonic()
        code = cli.main(["task", "result", *pin, task_id, "--timeout", "1"])
        assert time.monotonic() - started < 1 + SLACK
        assert code == cli.EXIT_TIMEOUT
        assert f"task {task_id} did not finish" in capsys.readouterr().err
        assert mcp_lite("task", "result", *pin, task_id, "--timeout", "1").returncode == 124
    finally:
        mcp_lite("task", "cancel", *pin, task_id)


def test_configured_server(url: str, tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"jobs": {"type": "http", "url": url}}}))
    project = ("--project", str(tmp_path), "--config", str(config))
    started = mcp_lite("call", *project, "mcp__jobs__build", '{"steps": 4}', "--as-task")
    assert started.returncode == 0, started.stderr
    task_id = started.stdout.strip()
    # the only configured server needs no --server; naming it works too
    for extra in ((), ("--server", "jobs")):
        collected = mcp_lite("task", "result", *project, *extra, task_id)
        assert collected.returncode == 0, collected.stderr
        assert collected.stdout.strip() == "built in 4 steps"
    wrong = mcp_lite("task", "status", *project, "--server", "nope", task_id)
    assert wrong.returncode == cli.EXIT_USAGE


@pytest.mark.usefixtures("no_leftover_processes")
def test_stdio_server_refuses_tasks_across_runs() -> None:
    stdio = ("--stdio", f"{sys.executable} {PEER} stdio", "--protocol-version", "2025-11-25")
    started = mcp_lite("call", *stdio, "build", "--as-task")
    assert started.returncode == cli.EXIT_USAGE
    assert "a stdio server started by mcp-lite ends with the run" in started.stderr
    assert "--url" in started.stderr and started.stdout == ""
    status = mcp_lite("task", "status", *stdio, "some-id")
    assert status.returncode == cli.EXIT_USAGE
    assert "no earlier task" in status.stderr


ESC = "\x1b"
EVIL = f"{ESC}[2K{ESC}]52;c;ZXZpbA=={chr(7)}"


@pytest.mark.parametrize("era", ERAS)
def test_a_hostile_task_id_and_status_are_printed_escaped(
    era: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's task id and task status are server-sent strings like any name: shown with
    their control characters escaped by ``call --as-task`` and ``task status|cancel``."""
    from mcp_lite.server import _tasks

    ids = iter(range(1000))
    monkeypatch.setattr(
        _tasks, "secrets", SimpleNamespace(token_hex=lambda n: f"t{next(ids)}{EVIL}")
    )
    wire = _tasks.TaskRecord.wire

    def hostile_wire(self: Any, detailed: bool) -> dict[str, Any]:
        out: dict[str, Any] = wire(self, detailed)
        if out["status"] == "working":  # (the terminal ones keep their meaning)
            out["status"] += EVIL
        return out

    monkeypatch.setattr(_tasks.TaskRecord, "wire", hostile_wire)
    with tools(Server("hostile-tasks")).serve_http(port=0) as http:
        pin = ("--url", http.url, "--protocol-version", era)
        started = mcp_lite("call", *pin, "hold", "--as-task")
        assert started.returncode == 0, started.stderr
        assert ESC not in started.stdout and chr(7) not in started.stdout
        shown = started.stdout.strip()
        assert shown.startswith("t") and shown.endswith("\\x1b[2K\\x1b]52;c;ZXZpbA==\\x07")
        task_id = shown.split("\\", 1)[0] + EVIL  # what the server sent
        status = mcp_lite("task", "status", *pin, task_id)
        assert status.returncode == 0, status.stderr
        assert ESC not in status.stdout and chr(7) not in status.stdout
        shown_status = status.stdout.rstrip("\n").split("\t")[1]
        assert shown_status == "working\\x1b[2K\\x1b]52;c;ZXZpbA==\\x07"
        cancelled = mcp_lite("task", "cancel", *pin, task_id)
        assert cancelled.returncode == 0, cancelled.stderr
        assert ESC not in cancelled.stdout and chr(7) not in cancelled.stdout


@pytest.mark.parametrize("action", ["status", "result", "cancel"])
def test_an_empty_task_id_is_a_usage_error(url: str, action: str) -> None:
    done = mcp_lite("task", action, "--url", url, "")
    assert done.returncode == cli.EXIT_USAGE, done.stderr
    assert "Traceback" not in done.stderr
    assert "needs a TASK_ID" in done.stderr
