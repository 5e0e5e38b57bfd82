"""``_live_tasks.LiveTasks``: which answers start, refresh and end a task's hold on its
server, in both eras' wire shapes, and its bounds (the task's ttl, ``HOLD_MAX``, the
number of tasks); and the note an unknown task gets behind the gateway."""

from __future__ import annotations

import time

import pytest

from mcp_lite.errors import InternalError, InvalidParams
from mcp_lite.hub._runtime import live_tasks as _live_tasks
from mcp_lite.hub._runtime.live_tasks import LiveTasks, unknown_task_note


def _held(tasks: LiveTasks) -> int:
    return tasks.hold()[0]


def test_a_2025_task_holds_until_tasks_result_has_fetched_it() -> None:
    tasks = LiveTasks()
    created = {"task": {"taskId": "t1", "status": "working", "ttl": 60_000}}
    assert not tasks.answer("tools/call", {"name": "x", "task": {}}, created)
    assert _held(tasks) == 1
    assert not tasks.answer("tasks/get", {"taskId": "t1"}, {"taskId": "t1", "status": "working"})
    # completed, but its result is fetched with tasks/result: still held
    done = {"taskId": "t1", "status": "completed"}
    assert not tasks.answer("tasks/get", {"taskId": "t1"}, done)
    assert _held(tasks) == 1
    assert tasks.answer("tasks/result", {"taskId": "t1"}, {"content": []})
    assert _held(tasks) == 0


def test_a_2026_task_holds_until_a_tasks_get_carries_its_result() -> None:
    tasks = LiveTasks()
    created = {"resultType": "task", "taskId": "m1", "status": "working", "ttlMs": 60_000}
    tasks.answer("tools/call", {"name": "x"}, created)
    tasks.answer("tasks/update", {"taskId": "m1", "inputResponses": {}}, {})
    assert _held(tasks) == 1
    final = {"taskId": "m1", "status": "completed", "result": {"content": []}}
    assert tasks.answer("tasks/get", {"taskId": "m1"}, final)
    assert _held(tasks) == 0


def test_cancelled_and_unknown_tasks_stop_holding_other_errors_do_not() -> None:
    tasks = LiveTasks()
    for task_id in ("a", "b", "c"):
        tasks.started(task_id)
    assert tasks.answer("tasks/cancel", {"taskId": "a"}, {"taskId": "a", "status": "cancelled"})
    assert tasks.answer("tasks/get", {"taskId": "b"}, InvalidParams("Unknown task"))
    assert not tasks.answer("tasks/get", {"taskId": "c"}, InternalError("busy"))
    assert _held(tasks) == 1
    # a plain tool call's answer, and methods that are not about tasks, change nothing
    assert not tasks.answer("tools/call", {"name": "x"}, {"content": []})
    assert not tasks.answer("tools/list", {}, {"tools": []})
    assert _held(tasks) == 1


def test_the_hold_is_bounded_by_the_ttl_and_by_hold_max(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = LiveTasks()
    tasks.started("short", {"ttl": 1})  # 1 ms
    time.sleep(0.01)
    assert tasks.hold() == (0, None)
    monkeypatch.setattr(_live_tasks, "HOLD_MAX", 0.001)
    tasks.started("unpolled")
    time.sleep(0.01)
    assert tasks.hold() == (0, None)
    tasks.started("unpolled")  # asked about again: held again
    monkeypatch.setattr(_live_tasks, "HOLD_MAX", 3600.0)
    assert _held(tasks) == 1  # "short" stays past its ttl (the server may have dropped it)
    tasks.started("short")
    assert _held(tasks) == 1  # asking again does not stretch a ttl


def test_the_number_of_tasks_is_bounded_and_lost_ones_are_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_live_tasks, "MAX_TASKS", 3)
    tasks = LiveTasks()
    for n in range(5):
        tasks.started(f"t{n}")
    assert _held(tasks) == 3
    assert tasks.process_ended() == 3
    assert _held(tasks) == 0
    assert tasks.was_lost("t4") and not tasks.was_lost("t0")  # t0 was dropped, never lost


def test_the_unknown_task_note_names_the_restart() -> None:
    lost = unknown_task_note("db", "t1", lost=True, stdio=True, started_wall=None, recycles=0)
    assert "earlier process" in lost and "stdio server's tasks end with its process" in lost
    fresh = unknown_task_note(
        "db", "t1", lost=False, stdio=True, started_wall=time.time(), recycles=2
    )
    assert "started at" in fresh and "2 recycle(s)" in fresh and "restart" in fresh
    remote = unknown_task_note("db", "t1", lost=False, stdio=False, started_wall=None, recycles=0)
    assert "restarted" in remote and "stdio" not in remote
