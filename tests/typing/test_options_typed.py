"""A type checker catches a misspelt ``connect()`` option, a wrong handler signature and an
unknown ``tool_definitions`` format in a user's script; a correct script checks clean. And
the typed option lists stay in step with the real keyword parameters."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest

from mcp_lite import _options
from mcp_lite.client import Client
from mcp_lite.hub import Hub
from mcp_lite.hub import _options as _hub_options
from mcp_lite.hub.config import _setup, load_config

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
import mcp_lite
from mcp_lite import Params

def sample(params: Params) -> dict[str, object]:
    return {"role": "assistant", "content": {"type": "text", "text": "hi"},
            "model": "m", "stopReason": "endTurn"}

def on_note(method: str, params: Params) -> None:
    print(method)

client = mcp_lite.connect(["python", "examples/demo_server.py"], timeout=10,
                          sampling_handler=sample, notification_handler=on_note,
                          env={"A": "1"}, name="calc", protocol_version="auto")
hub = mcp_lite.Hub.from_config(".", trust_project=["demo"], output_dir="/tmp",
                               client_options={"timeout": 5, "auto_reconnect": False},
                               config_files=["x.json"])
tools = hub.tool_definitions(format="openai")
"""

BAD = """
import mcp_lite

def no_args() -> None: ...

client = mcp_lite.connect(["python", "srv.py"], timout=10)                  # line 6
client = mcp_lite.connect(["python", "srv.py"], sampling_handler=no_args)    # line 7
hub = mcp_lite.Hub.from_config(".", ouput_dir="/tmp")                        # line 8
hub = mcp_lite.Hub.from_config(".", client_options={"timout": 5})            # line 9
tools = hub.tool_definitions(format="gpt")                                   # line 10
"""


def mypy(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    env = {**os.environ, "MYPYPATH": str(ROOT)}  # the checkout's typed package (py.typed)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "--follow-imports=silent",
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
        check=False,
    )


@pytest.mark.timeout(900)
def test_mypy_flags_misspelt_options_and_wrong_handlers(tmp_path: Path) -> None:
    proc = mypy(tmp_path, "user_bad.py", BAD)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    lines = {int(line.split(":")[1]) for line in errors}
    assert {6, 7, 8, 9, 10} <= lines, proc.stdout + proc.stderr
    text = proc.stdout
    assert '"timout"' in text and '"ouput_dir"' in text and "'gpt'" in text


@pytest.mark.timeout(900)
def test_mypy_accepts_a_correct_script(tmp_path: Path) -> None:
    proc = mypy(tmp_path, "user_good.py", GOOD)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def keyword_params(func: typing.Callable[..., object], *without: str) -> set[str]:
    return {
        name
        for name, p in inspect.signature(func).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in without
    }


def test_connect_options_match_client_parameters() -> None:
    typed = set(_options.ConnectOptions.__annotations__)
    real = keyword_params(Client, "timeout")
    assert typed == real, (
        f"add {sorted(real - typed)} to / remove {sorted(typed - real)} from ConnectOptions in "
        "mcp_lite/_options.py so connect() keeps a typed signature"
    )


def test_hub_options_match_hub_parameters() -> None:
    assert set(_hub_options.HubOptions.__annotations__) == keyword_params(
        Hub, "allow", "deny", "permission_handler"
    )
    assert set(_hub_options.HubOptions.__annotations__) == set(_setup.HUB_OPTIONS)


def test_load_config_options_match() -> None:
    assert set(_hub_options.LoadConfigOptions.__annotations__) == keyword_params(
        load_config, "trust_project"
    )
