"""The official MCP conformance suite (``@modelcontextprotocol/conformance``), every client
scenario, with ``tests/conformance/client.py`` as the client under test.

Runs ``../shared/conformance/run_client_conformance.sh`` (it installs the harness and Node 22
from npm on first use) with the expected-failures file of the pinned harness version, and
asserts what the user of ``make conformance`` sees: exit status 0 and "N passed, 0 failed"
with every scenario accounted for.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "client.py"
SHARED = HERE.parent.parent.parent / "shared" / "conformance"
RUNNER = SHARED / "run_client_conformance.sh"
VERSION = os.environ.get("CONFORMANCE_VERSION", "0.1.16")
EXPECTED = SHARED / f"expected-failures.{VERSION}.txt"



@pytest.mark.timeout(1800)
@pytest.mark.skipif(not RUNNER.exists(), reason="../shared/conformance is not beside the repo")
@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm (installs the harness)")
def test_every_client_scenario_passes() -> None:
    env = dict(os.environ, CONFORMANCE_VERSION=VERSION)
    if EXPECTED.exists():
        env["CONFORMANCE_EXPECTED_FAILURES"] = str(EXPECTED)
    proc = subprocess.run(
        ["bash", str(RUNNER), f"{sys.executable} {CLIENT}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1700,
        check=False,
    )
    out = proc.stdout
    summary = re.search(r"^(\d+) passed, (\d+) failed$", out, re.MULTILINE)
    assert summary is not None, f"no summary line\nstdout:\n{out}\nstderr:\n{proc.stderr[-3000:]}"
    passed, failed = int(summary.group(1)), int(summary.group(2))
    rows = re.findall(r"^(PASS|FAIL|XFAIL|XPASS|EMPTY)\s+(\S+)", out, re.MULTILINE)
    assert failed == 0 and proc.returncode == 0, out
    assert passed == sum(1 for result, _ in rows if result == "PASS") and passed > 0, out
    assert all(result in ("PASS", "XFAIL") for result, _ in rows), out
