"""Instructions per ``call_tool``, counted by valgrind: a figure that does not swing with the
machine's load, for comparing two versions of the call path.

    make bench-instructions        # or: .venv/bin/python bench/instructions.py

Each client makes its calls against answers already waiting in the pipe it reads (the
server's stdout is swapped for a pipe this script writes each answer into just before the
call, and its stdin for a pipe drained every 100 calls), so no server work and no waiting is
counted: only the client's own user-space instructions, on the calling thread, through the
real send, lead (read) and routing path. ``valgrind --tool=callgrind`` counts a run of
``SHORT`` and one of ``LONG`` calls; the difference divided by ``LONG - SHORT`` is the cost
of one call, start-up excluded. ``PYTHONHASHSEED`` is fixed, so two runs give the same count
to within a few instructions. Needs valgrind (``apt-get install valgrind``); not part of
``make bench``, which measures time.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
SERVER = [sys.executable, str(ROOT / "tests" / "peers" / "fault_server.py"), "echo"]
ANSWER = (
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"0123456789"}],'
    b'"isError":false}}\n'
)
SHORT, LONG = 500, 1500
WARMUP = 50


def run_client(kind: str, calls: int) -> None:
    """Inside valgrind: connect, swap the pipes, then make ``WARMUP + calls`` calls."""
    import fcntl

    sink_r, sink_w = os.pipe()
    fcntl.fcntl(sink_w, 1031, 1 << 20)  # F_SETPIPE_SZ: room for 100 requests and more
    os.set_blocking(sink_r, False)
    out_r, out_w = os.pipe()
    args = {"text": "0123456789"}
    if kind == "raw":
        sys.path.insert(0, str(BENCH))
        from raw_client import RawClient

        raw = RawClient(SERVER)
        stdin, stdout = raw._stdin.fileno(), raw._stdout.fileno()
        call = raw.call_tool

        def next_id() -> int:
            return raw._next_id + 1
    else:
        import mcp_lite
        from mcp_lite.transports import stdio

        # Each answer is written before its call: the reader thread, which takes the pipe
        # after a pause in leading (slow under valgrind), must not read it first.
        stdio._LINGER = 3600.0
        client = mcp_lite.connect(SERVER)
        client.call_tool("echo", args)
        proc = client._conn.transport._proc  # type: ignore[union-attr]
        stdin, stdout = proc.stdin.fileno(), proc.stdout.fileno()
        os.set_blocking(out_r, False)  # as the transport keeps its own end
        call = client.call_tool

        def next_id() -> int:
            return client._conn._pending._next_id + 1  # type: ignore[union-attr]

    # Keep the server's ends open (it must not see EOF and exit), then swap ours.
    kept = (os.dup(stdin), os.dup(stdout))
    os.dup2(sink_w, stdin)
    os.dup2(out_r, stdout)
    for i in range(WARMUP + calls):
        os.write(out_w, ANSWER % next_id())
        call("echo", args)
        if i % 100 == 99:
            try:
                os.read(sink_r, 1 << 20)
            except BlockingIOError:
                pass
    del kept
    os._exit(0)  # the server's pipes are swapped: a normal close would wait on it


def count(kind: str, calls: int, workdir: str) -> int:
    """Instructions of the calling thread in a run of ``calls`` calls."""
    out = os.path.join(workdir, f"cg.{kind}.{calls}")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            f"--callgrind-out-file={out}.%p",
            sys.executable,
            __file__,
            "--client",
            kind,
            str(calls),
        ],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=600,
    )
    # --separate-threads: one file per thread, the main thread's ends in "-01".
    files = sorted(glob.glob(out + ".*"))
    main = [f for f in files if f.endswith("-01")] or files[:1]
    for line in Path(main[0]).read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {main[0]}")


def main() -> None:
    if shutil.which("valgrind") is None:
        print("bench/instructions.py: valgrind is not installed (apt-get install valgrind)")
        return
    results: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for kind, name in (
            ("raw", "raw sync client (bench/raw_client.py)"),
            ("lite", "mcp_lite client.call_tool"),
        ):
            per_call = (count(kind, LONG, workdir) - count(kind, SHORT, workdir)) // (LONG - SHORT)
            results[kind] = per_call
            print(f"  {name:<40} {per_call:>8,} instructions per call", flush=True)
    print(f"  mcp_lite vs raw: {results['lite'] / results['raw']:.2f}x the instructions")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--client":
        run_client(sys.argv[2], int(sys.argv[3]))
    else:
        main()
