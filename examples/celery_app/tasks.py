"""Celery tasks that call MCP tools through one Hub per worker process.

Run a worker (prefork: each of the 4 processes builds its own Hub on its first task and
starts its own MCP server processes; the parent starts none)::

    export MCP_LITE_CELERY_BROKER=redis://127.0.0.1:6379/0      # the default
    celery -A tasks worker --pool=prefork --concurrency=4       # from examples/celery_app

and call tools from anywhere that can reach the broker::

    from tasks import call_tool
    print(call_tool.delay("mcp__demo__add", {"a": 1, "b": 2}).get(timeout=30)["text"])

Configuration, all from the environment:

- ``MCP_LITE_CELERY_BROKER``: the broker URL (default ``redis://127.0.0.1:6379/0``);
  ``MCP_LITE_CELERY_BACKEND``: where results go (default: the broker);
- ``MCP_LITE_CELERY_CONFIG``: a JSON file with the ``MCP_LITE`` mapping of
  ``mcp_lite.contrib.settings`` (``{"servers": {...}, "allow": [...], ...}``); default: the demo
  server over stdio.

Every call has a deadline (``timeout``, seconds): a server that hangs fails its task with
``RequestTimeout`` at that deadline, and the worker process goes on with the next task. When
a worker process stops, its Hub closes and its MCP servers stop with it. For OAuth-protected
servers shared by the fleet, give the servers' ``auth`` a ``RedisTokenStore`` (README,
"Scaling out").
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import worker_process_shutdown

from mcp_lite.contrib import ProcessHub, hub_from_settings

BROKER = os.environ.get("MCP_LITE_CELERY_BROKER", "redis://127.0.0.1:6379/0")
BACKEND = os.environ.get("MCP_LITE_CELERY_BACKEND", BROKER)
DEMO_SERVER = str(Path(__file__).resolve().parent.parent / "demo_server.py")

app = Celery("tasks", broker=BROKER, backend=BACKEND)
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    worker_prefetch_multiplier=1,  # a task waiting on a slow server holds no others back
    broker_connection_retry_on_startup=True,
)


def _settings() -> dict[str, Any]:
    path = os.environ.get("MCP_LITE_CELERY_CONFIG")
    if path:
        with open(path, encoding="utf-8") as f:
            settings: dict[str, Any] = json.load(f)
        return settings
    return {"servers": {"demo": {"command": sys.executable, "args": [DEMO_SERVER]}}}


# Built by each worker process on its first task (never in the parent before the fork).
hub = ProcessHub(lambda: hub_from_settings(_settings()))


@worker_process_shutdown.connect
def _close_hub(**kwargs: Any) -> None:
    hub.close()  # this process's MCP servers stop with it


@app.task(name="mcp.call_tool")
def call_tool(name: str, arguments: dict[str, Any] | None = None,
              timeout: float = 30.0) -> dict[str, Any]:
    """Call ``mcp__<server>__<tool>``; the task fails (``RequestTimeout``...) as the call does."""
    result = hub.get().call_tool(name, arguments or {}, timeout=timeout)
    return {
        "text": result.text,
        "is_error": result.is_error,
        "structured": result.structured_content,
        "pid": os.getpid(),
    }


@app.task(name="mcp.tools")
def list_tools() -> list[str]:
    """The names of every tool of every server that is up."""
    return [tool.name for tool in hub.get().tools()]
