"""What it costs to start: `import mcp_lite` and a one-shot CLI call load no heavy stacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mcp_lite

PACKAGE = Path(mcp_lite.__file__).parent


def test_import_is_cheap_no_pydantic_models_or_http_stacks():
    code = (
        "import sys, mcp_lite; bad = [m for m in ('pydantic', 'requests', 'websocket', "
        "'mcp_lite.client', 'concurrent.futures', 'opentelemetry', 'redis', 'celery') "
        "if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_one_shot_cli_call_never_loads_pydantic_models(tmp_path):
    """The CLI's call path works on result dicts: the models (and pydantic) stay unloaded."""
    echo = f"{sys.executable} {PACKAGE.parent / 'tests' / 'peers' / 'fault_server.py'} echo"
    code = (
        "import sys; from mcp_lite.cli import main; rc = main(['call', '--stdio', sys.argv[1], "
        "'echo', '{\"text\": \"hi\"}']); "
        "print('LOADED' if 'pydantic' in sys.modules or 'mcp_lite.server' in sys.modules "
        "else 'CLEAN', rc)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, echo], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split()[-2:] == ["CLEAN", "0"], out.stdout + out.stderr
