"""_accel picks the compiled kernels when they are built, the twin when told or forced."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_lite import _accel

NO_EXTENSIONS = os.environ.get("MCP_LITE_NO_EXTENSIONS", "") not in ("", "0")
PACKAGE_DIR = Path(_accel.__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
PROBE = (
    "import json, mcp_lite._accel as a; "
    "print(json.dumps([a.USE_EXTENSIONS, a.NdjsonSplitter.__module__, a.normalize_name('a b')]))"
)


def built_extension() -> list[Path]:
    """The compiled module for this interpreter, if it sits next to the package."""
    return [
        PACKAGE_DIR / f"_speedups{suffix}"
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
        if (PACKAGE_DIR / f"_speedups{suffix}").exists()
    ]


def probe(env_value: str | None, prelude: str = "") -> list[object]:
    env = dict(os.environ)
    env.pop("MCP_LITE_NO_EXTENSIONS", None)
    if env_value is not None:
        env["MCP_LITE_NO_EXTENSIONS"] = env_value
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", prelude + PROBE],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: list[object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_extension_is_loaded_when_it_was_built() -> None:
    built = built_extension()
    if NO_EXTENSIONS:
        pytest.skip("MCP_LITE_NO_EXTENSIONS is set in this run")
    if not built:
        pytest.skip("mcp_lite._speedups is not built for this interpreter")
    assert _accel.USE_EXTENSIONS, f"{built[0].name} is built but _accel loaded the pure twin"
    assert _accel.NdjsonSplitter.__module__ == "mcp_lite._speedups"


def test_no_extensions_env_loads_the_twin() -> None:
    assert probe("1") == [False, "mcp_lite._speedups_py", "a_b"]


def test_no_extensions_zero_or_empty_means_use_them() -> None:
    expected = bool(built_extension())
    module = "mcp_lite._speedups" if expected else "mcp_lite._speedups_py"
    assert probe("0") == [expected, module, "a_b"]
    assert probe("") == [expected, module, "a_b"]


def test_failed_import_falls_back_to_the_twin() -> None:
    prelude = "import sys; sys.modules['mcp_lite._speedups'] = None; "
    assert probe(None, prelude) == [False, "mcp_lite._speedups_py", "a_b"]


def test_an_out_of_date_build_falls_back_to_the_twin_and_says_so() -> None:
    # An in-place build from older sources: a module lacking a newer kernel.
    prelude = (
        "import sys, types; import mcp_lite._speedups_py as t; "
        "old = types.ModuleType('mcp_lite._speedups'); "
        "[setattr(old, n, getattr(t, n)) for n in t.__all__ if n != 'write_nowait']; "
        "sys.modules['mcp_lite._speedups'] = old; sys.modules['mcp_lite']._speedups = old; "
        "import importlib, mcp_lite._accel as a; a = importlib.reload(a); "
        "assert 'out of date (no write_nowait)' in a.PURE_REASON, a.PURE_REASON; "
    )
    assert probe(None, prelude) == [False, "mcp_lite._speedups_py", "a_b"]


def test_accel_exports_every_kernel() -> None:
    from mcp_lite import _speedups_py

    assert set(_accel.__all__) == set(_speedups_py.__all__) | {"USE_EXTENSIONS", "PURE_REASON"}
    for name in _accel.__all__:
        assert hasattr(_accel, name), name
