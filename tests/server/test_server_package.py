"""The server is one package whose modules import each other without a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import mcp_lite
import mcp_lite.server as server_pkg

PKG = Path(server_pkg.__file__).parent


def _local_imports(path: Path) -> set[str]:
    """Sibling modules of the server package that ``path`` imports (any import, even
    under ``TYPE_CHECKING``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


def test_server_modules_import_without_cycles() -> None:
    graph = {p.stem: _local_imports(p) for p in PKG.glob("*.py") if p.stem != "__init__"}
    assert {"_server", "_connection", "_context", "_registry"} <= set(graph)
    done: set[str] = set()

    def visit(mod: str, path: tuple[str, ...]) -> None:
        assert mod not in path, f"import cycle: {' -> '.join((*path, mod))}"
        if mod in done:
            return
        for dep in graph.get(mod, ()):
            visit(dep, (*path, mod))
        done.add(mod)

    for mod in graph:
        visit(mod, ())


def test_public_names_unchanged() -> None:
    from mcp_lite.server import Context, Server, ServerConnection

    assert mcp_lite.Server is Server
    assert mcp_lite.Context is Context
    assert ServerConnection.__module__.startswith("mcp_lite.server")
