"""Stress of the caller/reader hand-offs (see ``stress_worker.py``), on both kernel builds
and both protocol eras. Not timing-based: the worker checks every caller's outcome and
that nothing outlives its own bound; this test checks the worker's verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mcp_lite

WORKER = Path(__file__).with_name("stress_worker.py")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
# "compiled": the default (leader/follower reading); "compiled-reader": the reader thread
# alone reads (MCP_LITE_STDIO_LEADER=0); "pure": the pure-Python twin (reader thread alone).
@pytest.mark.parametrize("build", ["compiled", "compiled-reader", "pure"])
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_handoffs_under_stress(tmp_path: Path, build: str, era: str) -> None:
    if build != "pure" and not mcp_lite.USE_EXTENSIONS:
        pytest.skip("the compiled kernels are not built here")
    env = dict(
        os.environ,
        MCP_LITE_NO_EXTENSIONS="1" if build == "pure" else "0",
        MCP_LITE_STDIO_LEADER="0" if build == "compiled-reader" else "1",
    )
    run = subprocess.run(
        [sys.executable, str(WORKER), era, str(tmp_path / "record.jsonl"), "7", "4"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no verdict (exit {run.returncode}):\n{run.stdout}\n{run.stderr[-4000:]}"
    verdict = json.loads(lines[-1])
    assert verdict["problems"] == [], verdict
    assert run.returncode == 0, run.stderr[-4000:]
    assert verdict["leading"] is (build == "compiled")
    counts = verdict["counts"]
    # Every kind of operation happened, and the main thread was really interrupted.
    for kind in ("echo", "notify", "roots", "timeout", "cancel", "submit", "interrupted"):
        assert counts.get(kind, 0) > 0, counts
