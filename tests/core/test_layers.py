"""The layering rules of STYLE.md, checked: a sans-IO core and a complete ``__all__``."""

from __future__ import annotations

import ast
import pathlib
import pickle

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
