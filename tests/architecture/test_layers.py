"""The layering rules of STYLE.md and DESIGN §3, checked: a sans-IO core, a complete
``__all__``, no import circle, no import into a higher layer, every module importable alone."""

from __future__ import annotations

import ast
import os
import pathlib
import pickle
import re
import subprocess
import sys
from typing import Any

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


# --- the import graph: no circle, no import into a higher layer (DESIGN §3) -------------------
#
# Imports are read with ``ast`` and sorted into three kinds, all of which count: ``top`` (module
# level), ``lazy`` (inside a function) and ``typing`` (under ``if TYPE_CHECKING:``). A circle
# of type-only imports is still a circle: it says two modules need each other's names. Run this
# file as a script (``python tests/architecture/test_layers.py [root]``) for the graph's figures.

KINDS = ("top", "lazy", "typing")
SUBPACKAGES = (
    "_connection",
    "_http",
    "auth",
    "cli",
    "client",
    "contrib",
    "gateway",
    "hub",
    "protocol",
    "server",
    "transports",
)

# DESIGN §3, bottom up. Each sub-package is one unit; a unit may import its own layer and the
# ones below it. The names are what the units are for, not where they happen to sit today.
LAYERS: dict[str, tuple[str, ...]] = {
    "ground": (
        "errors",
        "_version",
        "_text",
        "_secrets",
        "_deadline",
        "_fork",
        "_timer",
        "_workers",
    ),
    "kernels": ("_speedups", "_speedups_py", "_accel"),
    "protocol": ("protocol",),
    "plumbing": ("_http", "_otel", "events", "server"),
    "auth": ("auth",),
    "transports": ("transports",),
    "connection": (
        "_connection",
        "_requester",
        "tasks",
        "skills",
        "_server_config",
        "_options",
    ),
    "client": ("client",),
    "hub": ("hub",),
    "gateway": ("gateway",),
    "faces": ("cli", "contrib", "demo", "__init__", "__main__"),
}
LAYER_OF = {unit: layer for layer, units in LAYERS.items() for unit in units}
RANK = {layer: rank for rank, layer in enumerate(LAYERS)}


def _modules(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """Every module of the package by dotted name; the compiled kernels by their stub."""
    found = {}
    for path in sorted((root / "mcp_lite").rglob("*.py*")):
        if path.suffix not in (".py", ".pyi") or (
            path.suffix == ".pyi" and path.with_suffix(".py").exists()
        ):
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return ast.unparse(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement loads: ``from pkg import mod`` loads the
    module ``pkg.mod``, ``from mod import name`` the module ``mod``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        target = ".".join([*base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    return [f"{target}.{alias.name}" for alias in node.names] + [target]


def import_edges(root: pathlib.Path) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """``(importer, imported) -> [(line, kind), ...]`` over the package's own modules."""
    mods = _modules(root)
    edges: dict[tuple[str, str], list[tuple[int, str]]] = {}

    def visit(module: str, node: ast.AST, kind: str, is_package: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = "lazy" if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else kind
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit(module, ast.Module([stmt], []), "typing", is_package)
                for stmt in child.orelse:
                    visit(module, ast.Module([stmt], []), inner, is_package)
                continue
            if isinstance(child, ast.Import):
                targets = {name for name in _targets(child, module, is_package) if name in mods}
            elif isinstance(child, ast.ImportFrom):
                *subs, base = _targets(child, module, is_package)
                targets = {sub if sub in mods else base for sub in subs} & set(mods)
            else:
                targets = set()
            for target in sorted(targets - {module}):
                edges.setdefault((module, target), []).append((child.lineno, inner))
            visit(module, child, inner, is_package)

    for module, path in mods.items():
        visit(module, ast.parse(path.read_text()), "top", path.stem == "__init__")
    return edges


def unit_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    nodes = sorted(set(graph) | {b for targets in graph.values() for b in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _graphs(
    edges: dict[tuple[str, str], list[tuple[int, str]]], kinds: tuple[str, ...] = KINDS
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The module graph and the unit graph (sub-packages as one node), of ``kinds``."""
    modules: dict[str, set[str]] = {}
    units: dict[str, set[str]] = {}
    for (a, b), uses in edges.items():
        if not any(kind in kinds for _, kind in uses):
            continue
        modules.setdefault(a, set()).add(b)
        if unit_of(a) != unit_of(b):
            units.setdefault(unit_of(a), set()).add(unit_of(b))
    return modules, units


def _where(root: pathlib.Path, edges: dict, a: str, b: str) -> str:
    path = _modules(root)[a].relative_to(root)
    return ", ".join(f"{path}:{line} ({kind})" for line, kind in sorted(edges[a, b]))


ROOT = PACKAGE.parent


def _circle_report(edges: dict, graph: dict[str, set[str]], node_of: Any, what: str) -> list[str]:
    report = []
    for component in circles(graph):
        report.append(f"a circle of {len(component)} {what}: {', '.join(component)}")
        for a, b in sorted(edges):
            ends = node_of(a), node_of(b)
            if ends[0] != ends[1] and ends[0] in component and ends[1] in component:
                report.append(f"    {a} -> {b}: {_where(ROOT, edges, a, b)}")
    return report


def test_no_import_circle_among_modules_or_units():
    edges = import_edges(ROOT)
    modules, units = _graphs(edges)
    problems = _circle_report(edges, modules, lambda m: m, "modules")
    problems += _circle_report(edges, units, unit_of, "units (a sub-package is one unit)")
    assert not problems, "import circles (every import kind counts):\n" + "\n".join(problems)


def test_every_unit_has_a_layer():
    units = {unit_of(m) for m in _modules(ROOT)}
    missing = sorted(units - set(LAYER_OF))
    assert not missing, f"place {missing} in a layer of LAYERS (tests/architecture/test_layers.py)"


def test_no_import_into_a_higher_layer():
    edges = import_edges(ROOT)
    problems = []
    for a, b in sorted(edges):
        low, high = LAYER_OF.get(unit_of(a)), LAYER_OF.get(unit_of(b))
        if low is None or high is None or RANK[high] <= RANK[low]:
            continue
        problems.append(
            f"{_where(ROOT, edges, a, b)}: {a} (layer {low!r}) imports {b} (layer {high!r}, "
            "higher): move the name it needs down, or declare the interface it calls here"
        )
    assert not problems, "imports that run up a layer:\n" + "\n".join(problems)


def test_the_graph_reader_sees_every_kind(tmp_path):
    """The reader counts a module-level import, one in a function and one for types only, and
    finds the circles they make (so the tests above can fail)."""
    pkg = tmp_path / "mcp_lite"
    (pkg / "hub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("from .client import Client\n")  # top, up two layers
    (pkg / "client.py").write_text("def f():\n    from .hub import config\n")
    (pkg / "hub" / "__init__.py").write_text("")
    (pkg / "hub" / "config.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import errors\n"
    )
    edges = import_edges(tmp_path)
    assert edges["mcp_lite.errors", "mcp_lite.client"] == [(1, "top")]
    assert edges["mcp_lite.client", "mcp_lite.hub.config"] == [(2, "lazy")]
    assert edges["mcp_lite.hub.config", "mcp_lite.errors"] == [(3, "typing")]
    modules, units = _graphs(edges)
    assert circles(modules) == [["mcp_lite.client", "mcp_lite.errors", "mcp_lite.hub.config"]]
    assert circles(units) == [["client", "errors", "hub"]]
    assert circles(_graphs(edges, ("top", "lazy"))[0]) == []


# --- every module imports on its own ---------------------------------------------------------

_IMPORT_ALONE = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "mcp_lite" or m.startswith("mcp_lite.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and not exc.name.startswith("mcp_lite"):
            continue  # an optional dependency (django, redis, jwt...) that is not installed
        failed.append(f"{name}: {traceback.format_exc()}")
    except BaseException:
        failed.append(f"{name}: {traceback.format_exc()}")
print("\\n".join(failed) or "OK")
"""


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_every_module_imports_alone_without_warnings(pure):
    """Each module imported first, with nothing of mcp_lite loaded before it, under ``-W
    error``: no module works only because another one was imported earlier.

    The pure-Python twin changes one thing at import: which kernel module ``_accel`` loads.
    So with it, the modules that name the kernels are imported alone (those are where a
    difference could show); the compiled build imports every module."""
    names = sorted(
        name
        for name, path in _modules(ROOT).items()
        if path.suffix == ".py"
        and name != "mcp_lite.__main__"  # __main__ runs the CLI
        and (not pure or re.search(r"\b_(accel|speedups)", path.read_text(encoding="utf-8")))
    )
    assert len(names) >= (20 if pure else 150)
    env = {**os.environ, "MCP_LITE_NO_EXTENSIONS": "1" if pure else "0"}
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", _IMPORT_ALONE, *names],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "OK", out.stdout


# --- the compiled kernels' stub ----------------------------------------------------------------


def _signatures(path: pathlib.Path) -> dict[str, list[str]]:
    """Top-level functions and class methods of a module: name -> parameter names."""
    found: dict[str, list[str]] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = [a.arg for a in node.args.args]
        elif isinstance(node, ast.ClassDef):
            found[node.name] = []
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and (
                    not item.name.startswith("_") or item.name.startswith("__")
                ):
                    found[f"{node.name}.{item.name}"] = [a.arg for a in item.args.args]
    return found


def test_the_speedups_stub_matches_the_pure_twin():
    from mcp_lite import _accel

    stub = _signatures(PACKAGE / "_speedups.pyi")
    twin = _signatures(PACKAGE / "_speedups_py.py")
    kernels = set(_accel.__all__) - {"PURE_REASON", "USE_EXTENSIONS"}
    assert {n for n in stub if "." not in n} == kernels
    for name, params in stub.items():
        if name.endswith(("__enter__", "__exit__")):
            continue
        assert twin.get(name) == params, f"_speedups.pyi {name}{params} != twin {twin.get(name)}"
    if _accel.USE_EXTENSIONS:
        from mcp_lite import _speedups

        assert set(_speedups.__all__) == kernels


def test_the_speedups_stub_ships_in_wheel_and_sdist():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^mcp_lite = \[[^]]*"_speedups\.pyi"', pyproject, re.M)
    assert "mcp_lite/_speedups.pyi" in (ROOT / "MANIFEST.in").read_text()


if __name__ == "__main__":
    # The graph's figures: python tests/architecture/test_layers.py [repository root]
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    edges = import_edges(root)
    for kinds in (KINDS, ("top", "lazy"), ("top",)):
        modules, units = _graphs(edges, kinds)
        module_circles, unit_circles = circles(modules), circles(units)
        up = [
            (a, b)
            for a, targets in units.items()
            for b in targets
            if a in LAYER_OF and b in LAYER_OF and RANK[LAYER_OF[b]] > RANK[LAYER_OF[a]]
        ]
        print(
            f"kinds {'+'.join(kinds)}: {len(_modules(root))} modules, {len(modules)} importing; "
            f"module circles {len(module_circles)} {[len(c) for c in module_circles]}; "
            f"{len({unit_of(m) for m in _modules(root)})} units, "
            f"{sum(len(t) for t in units.values())} unit arrows, {len(up)} up a layer "
            f"{sorted(up)}; unit circles {len(unit_circles)} {[len(c) for c in unit_circles]}"
        )
