"""Clients of the gateway's connection-slot tests, one process each:

    python slot_clients.py idle SOCKET N      # N kept-alive connections, each served once
    python slot_clients.py stall SOCKET N     # N connections, each with a request never finished
    python slot_clients.py calls CONFIG GATEWAY PROCS THREADS CALLS   # worker Hubs' calls

``idle`` and ``stall`` print ``ready <n>`` (connections the gateway took) and hold them until
stdin closes. ``calls`` forks PROCS worker processes (mcp_lite imported once, before the
fork; each makes its own Hub), each calling from THREADS threads, and prints one JSON line
per worker ``{"ok": n, "errors": [...]}``.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading


def _connections(path: str, n: int, request: bytes, whole: bool) -> list[socket.socket]:
    held = []
    for _ in range(n):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        try:
            sock.connect(path)
            sock.sendall(request)
            if whole:  # read the whole answer: the connection is then idle, kept alive
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 200"):
                    sock.close()
                    continue
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(body) < length:
                    body += sock.recv(65536)
        except OSError:
            sock.close()
            continue
        held.append(sock)
    return held


def _calls(config: str, gateway: str, threads: int, calls: int) -> None:
    from mcp_lite import Hub
    from mcp_lite.errors import McpError

    ok, errors = [0], []
    lock = threading.Lock()
    with Hub.from_config(config_files=[config], gateway=gateway) as hub:

        def run(t: int) -> None:
            for k in range(calls):
                a, b = os.getpid(), t * 1000 + k
                try:
                    text = hub.call_tool("mcp__plain__add", {"a": a, "b": b}, timeout=20).text
                    good = text == str(a + b)
                    with lock:
                        ok[0] += good
                        if not good:
                            errors.append(f"wrong answer {text!r}")
                except McpError as exc:
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}")

        workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    print(json.dumps({"ok": ok[0], "errors": errors}), flush=True)


def _fleet(config: str, gateway: str, procs: int, threads: int, calls: int) -> None:
    import mcp_lite  # noqa: F401  # imported once, before the fork

    children = []
    for _ in range(procs):
        pid = os.fork()
        if pid == 0:
            try:
                _calls(config, gateway, threads, calls)
            finally:
                os._exit(0)
        children.append(pid)
    failed = 0
    for pid in children:
        _, status = os.waitpid(pid, 0)
        failed += status != 0
    if failed:
        print(json.dumps({"ok": 0, "errors": [f"{failed} worker(s) exited abnormally"]}))


def main() -> None:
    mode = sys.argv[1]
    if mode == "calls":
        args = sys.argv[2:]
        _fleet(args[0], args[1], int(args[2]), int(args[3]), int(args[4]))
        return
    path, n = sys.argv[2], int(sys.argv[3])
    if mode == "idle":
        request = b"GET /servers HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n\r\n"
        held = _connections(path, n, request, whole=True)
    else:
        request = b"POST /servers/plain/mcp HTTP/1.1\r\nHost: localhost\r\nContent-Le"
        held = _connections(path, n, request, whole=False)
    print(f"ready {len(held)}", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    for sock in held:
        sock.close()


if __name__ == "__main__":
    main()
