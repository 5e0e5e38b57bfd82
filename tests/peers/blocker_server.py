"""A stdio MCP server whose one tool never returns, with a grandchild: for the kill tests.

    python blocker_server.py MARKER RECORD

At start it spawns a grandchild (same process group; it ignores SIGTERM, so only SIGKILL
stops it) whose argv carries ``MARKER-grandchild``, and writes the grandchild's pid to
``RECORD.grandchild``. ``tools/list`` offers ``block``; a ``tools/call`` writes
``RECORD.called`` and then sleeps for an hour: it never answers and never reads its input
again, so it does not notice its client going away (as a server busy in a long call would not).
"""

import json
import subprocess
import sys
import time

marker, record = sys.argv[1], sys.argv[2]
grandchild = subprocess.Popen(
    [sys.executable, "-c",
     "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)",
     marker + "-grandchild"],
    stdin=subprocess.DEVNULL,
)
with open(record + ".grandchild", "w") as f:
    f.write(str(grandchild.pid))
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue
    if method == "initialize":
        answer = {"result": {"protocolVersion": msg["params"]["protocolVersion"],
                             "capabilities": {"tools": {}},
                             "serverInfo": {"name": "blocker", "version": "1"}}}
    elif method == "tools/list":
        answer = {"result": {"tools": [{"name": "block", "inputSchema": {"type": "object"}}]}}
    elif method == "tools/call":
        with open(record + ".called", "w") as f:
            f.write("called")
        time.sleep(3600)
        continue
    elif method == "ping":
        answer = {"result": {}}
    else:
        answer = {"error": {"code": -32601, "message": "no such method"}}
    print(json.dumps({"jsonrpc": "2.0", "id": rid, **answer}), flush=True)
