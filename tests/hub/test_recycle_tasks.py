"""A recycle never loses a live task: ``idle_timeout`` / ``max_lifetime`` wait while a task
started (or seen) through the Hub or its gateway may still be collected, ``Hub.status()``
says so, and the server is recycled once the result is collected (or the task's bound, its
ttl, runs out). Real stdio task servers (tests/peers/task_server.py) in both eras.

Nothing here times anything: the tasks run until cancelled or until the test collects them,
and waits are "until the state shows, within a generous bound"."""

from __future__ import annotations

import gc
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite import Gateway
from mcp_lite.hub import Hub

ROOT = Path(__file__).resolve().parents[2]
TASK_SERVER = str(ROOT / "tests" / "peers" / "task_server.py")
ERAS = ["2025-11-25", "2026-07-28"]
IDLE = 0.2
BOUND = 30.0  # generous: each wait ends as soon as the state shows


def _tasks(era: str) -> dict[str, Any]:
    version = "2025-11-25" if era == "2025-11-25" else "all"
    return {"command": sys.executable, "args": [TASK_SERVER, "stdio", version]}


def _wait(what: Callable[[], bool], timeout: float = BOUND) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if what():
            return True
        time.sleep(0.02)
    return what()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def _cancel(task: Any) -> None:
    """Cancel ``task`` and see it cancelled (2026-07-28 acknowledges first; the task ends
    once the tool sees it); the answer that shows it is the last request to its server."""
    task.cancel(timeout=10)
    if task.last_status.status != "cancelled":
        assert _wait(lambda: task.status(timeout=10).status == "cancelled")


@pytest.fixture
def short_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="mcprt", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("era", ERAS)
def test_an_idle_timeout_waits_for_a_hub_task_and_recycles_after_it(
    era: str, no_leftover_processes: Any
) -> None:
    options = {"protocol_version": era}
    with Hub({"tasks": _tasks(era)}, idle_timeout=IDLE, client_options=options) as hub:
        task = hub.call_tool_as_task("mcp__tasks__hold", {}, timeout=20)
        first = hub.status()["tasks"]
        assert first.live_tasks == 1 and first.pid is not None
        # the server is unused for longer than its idle_timeout: the recycle waits
        assert _wait(lambda: hub.status()["tasks"].recycle_deferred is not None)
        held = hub.status()["tasks"]
        assert (held.state, held.recycles, held.pid) == ("connected", 0, first.pid)
        assert "idle_timeout" in (held.recycle_deferred or "")
        assert "1 live task" in (held.recycle_deferred or "")
        assert _running(first.pid)
        # collected (a cancelled task has nothing more to collect): then it recycles
        _cancel(task)
        assert _wait(lambda: hub.status()["tasks"].state == "idle")
        after = hub.status()["tasks"]
        assert (after.recycles, after.live_tasks, after.recycle_deferred) == (1, 0, None)
        assert _wait(lambda: not _running(first.pid))


@pytest.mark.parametrize("era", ERAS)
def test_a_task_started_on_a_kept_client_holds_its_server_too(
    era: str, no_leftover_processes: Any
) -> None:
    """A task started (or resumed) on a Client from hub.client(), not through the Hub, is a
    live task of the Hub's as well: the recycle waits for it."""
    options = {"protocol_version": era}
    with Hub({"tasks": _tasks(era)}, idle_timeout=IDLE, client_options=options) as hub:
        kept = hub.client("tasks")
        task = kept.call_tool_as_task("hold", {}, timeout=20)
        first = hub.status()["tasks"]
        assert first.live_tasks == 1 and first.pid is not None
        assert _wait(lambda: hub.status()["tasks"].recycle_deferred is not None)
        held = hub.status()["tasks"]
        assert (held.state, held.recycles, held.pid) == ("connected", 0, first.pid)
        assert not kept.closed and _running(first.pid)
        again = kept.resume_task(task.id, timeout=20)  # a second handle: still one task
        assert again.last_status.status == "working" and hub.status()["tasks"].live_tasks == 1
        _cancel(task)
        assert _wait(lambda: hub.status()["tasks"].state == "idle")
        assert hub.status()["tasks"].recycles == 1 and kept.closed
        assert _wait(lambda: not _running(first.pid))


@pytest.mark.parametrize("era", ERAS)
def test_a_dropped_handle_s_task_is_still_there_to_resume(
    era: str, no_leftover_processes: Any
) -> None:
    options = {"protocol_version": era}
    with Hub({"tasks": _tasks(era)}, idle_timeout=IDLE, client_options=options) as hub:
        task = hub.call_tool_as_task("mcp__tasks__slow", {"seconds": 600}, timeout=20)
        task_id, pid = task.id, hub.status()["tasks"].pid
        del task
        gc.collect()  # the handle is gone; its id is all the caller kept
        assert _wait(lambda: hub.status()["tasks"].recycle_deferred is not None)
        again = hub.resume_task("tasks", task_id, timeout=20)
        assert again.last_status.status == "working"
        assert hub.status()["tasks"].pid == pid and hub.status()["tasks"].recycles == 0
        _cancel(again)
        assert _wait(lambda: hub.status()["tasks"].state == "idle")


def test_the_result_of_a_task_longer_than_the_idle_timeout_is_collected(
    no_leftover_processes: Any,
) -> None:
    # 2025-11-25: a completed task holds its server until tasks/result has fetched it
    options = {"protocol_version": "2025-11-25"}
    with Hub({"tasks": _tasks("2025-11-25")}, idle_timeout=IDLE, client_options=options) as hub:
        task = hub.call_tool_as_task("mcp__tasks__slow", {"seconds": 1.0}, timeout=20)
        assert _wait(lambda: task.status(timeout=10).status == "completed")
        assert hub.status()["tasks"].live_tasks == 1  # ended, not collected yet
        assert _wait(lambda: hub.status()["tasks"].recycle_deferred is not None)
        assert task.result(timeout=20).text == "slept 1.0"
        assert hub.status()["tasks"].recycles == 0  # the same process answered
        assert _wait(lambda: hub.status()["tasks"].state == "idle")
        assert hub.status()["tasks"].recycles == 1


def test_a_task_holds_its_server_no_longer_than_its_ttl(no_leftover_processes: Any) -> None:
    options = {"protocol_version": "2025-11-25"}
    with Hub({"tasks": _tasks("2025-11-25")}, idle_timeout=IDLE, client_options=options) as hub:
        task = hub.call_tool_as_task("mcp__tasks__hold", {}, ttl=500, timeout=20)
        assert task.last_status.ttl_ms == 500
        # past its ttl the server may drop it anyway: the recycle goes ahead
        assert _wait(lambda: hub.status()["tasks"].state == "idle")
        assert hub.status()["tasks"].live_tasks == 0
        # the handle's client went with the process, and the handle says why
        with pytest.raises(mcp_lite.ConnectionClosed, match="recycled MCP server 'tasks'"):
            task.status(timeout=10)


def test_max_lifetime_waits_for_a_task_too(no_leftover_processes: Any) -> None:
    options = {"protocol_version": "2025-11-25"}
    with Hub({"tasks": _tasks("2025-11-25")}, max_lifetime=IDLE, client_options=options) as hub:
        task = hub.call_tool_as_task("mcp__tasks__hold", {}, timeout=20)
        pid = hub.status()["tasks"].pid
        assert _wait(lambda: hub.status()["tasks"].recycle_deferred is not None)
        assert "max_lifetime" in (hub.status()["tasks"].recycle_deferred or "")
        assert hub.resume_task("tasks", task.id, timeout=20).last_status.status == "working"
        assert hub.status()["tasks"].pid == pid
        _cancel(task)
        assert _wait(lambda: hub.status()["tasks"].recycles == 1)


@pytest.mark.parametrize("era", ERAS)
def test_the_gateway_waits_for_a_task_started_through_it(
    era: str, short_dir: Path, no_leftover_processes: Any
) -> None:
    hub = Hub({"mcpServers": {"tasks": _tasks(era)}}, gateway=False, idle_timeout=IDLE)
    with Gateway(hub).start(str(short_dir / "t.sock")) as gw:
        url = f"{gw.url}/servers/tasks/mcp"
        with mcp_lite.connect(url, protocol_version=era, timeout=20) as client:
            task_id = client.call_tool_as_task("slow", {"seconds": 600}).id
        pid = hub.status()["tasks"].pid
        # nobody uses the server now; the worker that started the task has gone
        assert _wait(lambda: hub.status()["tasks"].recycle_deferred is not None)
        assert hub.status()["tasks"].live_tasks == 1
        with mcp_lite.connect(url, protocol_version=era, timeout=20) as client:
            task = client.resume_task(task_id, timeout=20)
            assert task.last_status.status == "working"
            assert (hub.status()["tasks"].pid, hub.status()["tasks"].recycles) == (pid, 0)
            _cancel(task)
        assert _wait(lambda: hub.status()["tasks"].state == "idle")
        assert hub.status()["tasks"].live_tasks == 0
