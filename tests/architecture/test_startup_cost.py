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


ONE_SHOT = """
import sys, mcp_lite
with mcp_lite.connect([sys.executable, sys.argv[1], "echo"]) as client:
    loaded_by_connect = "pydantic" in sys.modules
    result = client.call_tool("echo", {"text": "hi"})
    seen = [result.text, result.content[0].text, result.content[0].type, result.is_error,
            result.structured_content, result.data, result.meta, repr(result),
            result.raise_for_error() is result, isinstance(result, mcp_lite.CallToolResult)]
print("LOADED" if loaded_by_connect or "pydantic" in sys.modules else "CLEAN", seen[:2], seen[-2:])
print(result.model_dump(by_alias=True, exclude_none=True), "pydantic" in sys.modules)
"""


def test_a_one_shot_api_call_loads_pydantic_only_for_a_model_feature():
    """connect() and a call's result (``text``, ``content``, ``is_error``...) need no pydantic;
    ``model_dump()`` loads it then and gives the model's dump."""
    server = str(PACKAGE.parent / "tests" / "peers" / "fault_server.py")
    out = subprocess.run(
        [sys.executable, "-c", ONE_SHOT, server],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = out.stdout.splitlines()
    assert lines[0] == "CLEAN ['hi', 'hi'] [True, True]", out.stdout + out.stderr
    assert lines[1] == "{'content': [{'type': 'text', 'text': 'hi'}], 'isError': False} True"
