"""Another user's mcp_lite worker of a gateway, run under ``setpriv`` as that user.

    python other_user_client.py URL ERA TASK_ID

Starts a task of its own (``slow``), then tries to resume TASK_ID (another user's) and to
cancel it; prints ``{"own": id, "listed": [ids] or None, "resume": error, "cancel": error}``
as JSON (``listed``: 2025-11-25 only, 2026-07-28 has no tasks/list).
"""

from __future__ import annotations

import json
import sys

import mcp_lite
from mcp_lite.errors import InvalidParams, McpError


def main() -> None:
    url, era, victim = sys.argv[1:4]
    out: dict[str, object] = {}
    with mcp_lite.connect(url, protocol_version=era, timeout=20) as client:
        out["own"] = client.call_tool_as_task("slow", {"seconds": 30}).id
        out["listed"] = (
            [t.task_id for t in client.list_tasks()] if era == "2025-11-25" else None
        )
        for what in ("resume", "cancel"):
            try:
                if what == "resume":
                    client.resume_task(victim)
                else:
                    client.request("tasks/cancel", {"taskId": victim})
                out[what] = None
            except InvalidParams as exc:  # an unknown task id's answer
                out[what] = f"InvalidParams: {exc}"
            except McpError as exc:
                out[what] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
