"""A Celery app for a prefork worker: one module-level Hub, built (and warmed up) at import in
the worker's parent, then used by every forked pool process: the fork case.

    FLEET_CONFIG=mcp.json FLEET_BROKER=redis://... [MCP_LITE_GATEWAY=unix:///path.sock] \
        celery -A fleet_celery worker --pool=prefork --concurrency=8

Task ``fleet.call(tool, arguments)`` returns ``{"text", "is_error", "pid", "via"}``; a failed
call fails the task with the error the Hub raised. Each call has a bounded timeout.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import worker_process_shutdown

from mcp_lite import Hub

BROKER = os.environ["FLEET_BROKER"]
app = Celery("fleet_celery", broker=BROKER, backend=os.environ.get("FLEET_BACKEND", BROKER))
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
)

hub = Hub.from_config(config_files=[os.environ["FLEET_CONFIG"]])
if os.environ.get("FLEET_WARM_UP", "1") == "1":
    hub.call_tool("mcp__plain__add", {"a": 0, "b": 0}, timeout=60)  # the parent's connection


@worker_process_shutdown.connect
def _close_hub(**kwargs: Any) -> None:
    hub.close()


@app.task(name="fleet.call")
def call(tool: str, arguments: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    result = hub.call_tool(tool, arguments, timeout=timeout)
    return {"text": result.text, "is_error": result.is_error, "pid": os.getpid(),
            "via": hub.status()[tool.split("__")[1]].via}
