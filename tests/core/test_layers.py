"""The layering rules of STYLE.md, checked: a sans-IO core and a complete ``__all__``."""

from __future__ import annotations

import ast
import pathlib
import pickle
import subprocess
import sys

import pytest

import mcp_lite
from mcp_lite import errors

PACKAGE = pathlib.Path(mcp_lite.__file__).parent
FORBIDDEN_IN_CORE = {
    "threading",
    "socket",
    "subprocess",
    "time",
    "requests",
    "websocket",
    "select",
    "asyncio",
}


def _imports(path: pathlib.Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize(
    "module", sorted((PACKAGE / "protocol").glob("*.py")), ids=lambda p: p.name
)
def test_protocol_core_does_no_io(module):
    assert not (_imports(module) & FORBIDDEN_IN_CORE)


def test_all_is_complete_and_importable():
    for name in mcp_lite.__all__:
        assert getattr(mcp_lite, name) is not None, name
    public = {n for n in dir(mcp_lite) if not n.startswith("_")}
    assert {
        "connect",
        "Client",
        "Server",
        "normalize_name",
        "build_tool_name",
        "parse_tool_name",
        "USE_EXTENSIONS",
    } <= public


def test_import_is_cheap_no_pydantic_models_or_http_stacks():
    code = (
        "import sys, mcp_lite; bad = [m for m in ('pydantic', 'requests', 'websocket', "
        "'mcp_lite.client', 'concurrent.futures') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _all_error_classes():
    return [getattr(errors, n) for n in errors.__all__ if isinstance(getattr(errors, n), type)]


@pytest.mark.parametrize("cls", _all_error_classes(), ids=lambda c: c.__name__)
def test_every_error_pickles_and_keeps_its_message(cls):
    err = cls("something failed")
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is cls and str(clone) == str(err)
    assert isinstance(clone, errors.McpError)


def test_error_details_survive_pickling():
    closed = pickle.loads(pickle.dumps(errors.ConnectionClosed("gone", 3, "boom")))
    assert closed.exit_code == 3 and "boom" in str(closed) and "exit code 3" in str(closed)
    rpc = pickle.loads(pickle.dumps(errors.InvalidParams("bad", data={"x": 1})))
    assert rpc.code == -32602 and rpc.data == {"x": 1}
    assert isinstance(errors.RequestTimeout("late", 1.0), TimeoutError)
    assert isinstance(errors.ConfigError("bad"), ValueError)


def test_wire_errors_map_to_their_classes():
    assert isinstance(
        errors.rpc_error_from_wire({"code": -32601, "message": "m"}), errors.MethodNotFound
    )
    odd = errors.rpc_error_from_wire({"code": 12, "message": "m", "data": [1]})
    assert type(odd) is errors.RpcError and odd.code == 12 and odd.data == [1]


def test_a_one_shot_cli_call_never_loads_pydantic_models(tmp_path):
    """The CLI's call path works on result dicts: the models (and pydantic) stay unloaded."""
    echo = f"{sys.executable} {PACKAGE.parent / 'tests' / 'peers' / 'fault_server.py'} echo"
    code = ("import sys; from mcp_lite.cli import main; rc = main(['call', '--stdio', sys.argv[1], "
            "'echo', '{\"text\": \"hi\"}']); "
            "print('LOADED' if 'pydantic' in sys.modules or 'mcp_lite.server' in sys.modules "
            "else 'CLEAN', rc)")
    out = subprocess.run([sys.executable, "-c", code, echo], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.split()[-2:] == ["CLEAN", "0"], out.stdout + out.stderr
