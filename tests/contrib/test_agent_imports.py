"""The adapters' imports: ``import mcp_lite`` (and its Hub, Client and contrib) loads no
agent framework, and an adapter imported without its framework raises ``ImportError``
naming the extra to install. Fast lane: subprocesses only, no server."""

from __future__ import annotations

import subprocess
import sys

import pytest

# module -> (a framework package it needs, the extra)
ADAPTERS = {
    "mcp_lite.contrib.langchain": ("langchain_core", "langchain"),
    "mcp_lite.contrib.pydantic_ai": ("pydantic_ai", "pydantic-ai"),
    "mcp_lite.contrib.openai_agents": ("agents", "openai-agents"),
    "mcp_lite.contrib.smolagents": ("smolagents", "smolagents"),
    "mcp_lite.contrib.dspy": ("dspy", "dspy"),
    "mcp_lite.contrib.haystack": ("haystack", "haystack"),
    "mcp_lite.contrib.llama_index": ("llama_index", "llama-index"),
    "mcp_lite.contrib.strands": ("strands", "strands"),
    "mcp_lite.contrib.crewai": ("crewai", "crewai"),
}
FRAMEWORKS = (
    "langchain_core",
    "langchain",
    "langgraph",
    "pydantic_ai",
    "agents",
    "openai",
    "smolagents",
    "dspy",
    "haystack",
    "llama_index",
    "strands",
    "crewai",
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_importing_mcp_lite_imports_no_framework() -> None:
    code = (
        "import sys, mcp_lite, mcp_lite.hub, mcp_lite.client, mcp_lite.contrib\n"
        "import mcp_lite.contrib._adapter\n"
        "mcp_lite.Hub, mcp_lite.Client\n"
        f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))\n"
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", sorted(ADAPTERS))
def test_an_adapter_without_its_framework_names_the_extra(module: str) -> None:
    package, extra = ADAPTERS[module]
    code = (
        f"import sys; sys.modules[{package!r}] = None\n"  # as if not installed
        "try:\n"
        f"    import {module}\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert f'pip install "mcp-lite-client[{extra}]"' in out.stdout, out.stdout
    assert "ModuleNotFoundError" in out.stdout  # an ImportError; optional-import checks see it


def test_the_extras_are_declared() -> None:
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+")
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    project = tomllib.loads(pyproject.read_text())["project"]
    assert project["name"] == "mcp-lite-client"
    extras = project["optional-dependencies"]
    for _, extra in ADAPTERS.values():
        assert extras[extra], extra
