"""Build mcp_lite, compiling the optional Cython speedups when a compiler is there.

Without Cython or a C compiler the build still succeeds and installs the pure-Python twin
(``_speedups_py.py``), saying so. ``MCP_LITE_REQUIRE_EXTENSIONS=1`` turns a failed compile
into an error (for CI that must ship the compiled kernels); ``MCP_LITE_NO_EXTENSIONS=1``
skips the compile altogether. The extension is linked without debug info unless
``MCP_LITE_DEBUG=1``; the generated ``.c`` is never shipped (wheels hold the ``.so``, the sdist
the ``.pyx``, built again with Cython from the build requirements).
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


class TolerantBuildExt(build_ext):
    """build_ext that degrades to pure Python unless extensions are required."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no headers...
            self._give_up(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._give_up(exc)

    _warned = False

    def _give_up(self, exc: BaseException) -> None:
        if _flag("MCP_LITE_REQUIRE_EXTENSIONS"):
            raise exc
        if not self._warned:  # later steps (copying the missing .so) fail for the same reason
            self._warned = True
            sys.stderr.write(
                f"WARNING: mcp_lite speedups not compiled ({exc}); installing pure Python.\n"
            )


def _strip_flags() -> list[str]:
    """Link without debug info: the wheel's extension shrinks from ~1.3 MB to ~0.3 MB.
    ``MCP_LITE_DEBUG=1`` keeps it (for gdb or perf)."""
    if _flag("MCP_LITE_DEBUG") or sys.platform == "win32":
        return []
    return ["-Wl,-S"]  # GNU ld, lld and Apple ld: strip debugging symbols


def _extensions() -> list[Extension]:
    if _flag("MCP_LITE_NO_EXTENSIONS") or sys.implementation.name != "cpython":
        return []
    try:
        import Cython
        from Cython.Build import cythonize
    except ImportError:
        if _flag("MCP_LITE_REQUIRE_EXTENSIONS"):
            raise
        sys.stderr.write("WARNING: Cython not found; installing mcp_lite as pure Python.\n")
        return []
    directives = {
        "language_level": "3",
        "boundscheck": False,
        "wraparound": False,
        "embedsignature": True,
    }
    if tuple(int(p) for p in Cython.__version__.split(".")[:2] if p.isdigit()) >= (3, 1):
        # no reliance on the GIL: LruCache takes its own lock; a splitter or parser belongs
        # to one reader thread (documented), like any unsynchronized Python object
        directives["freethreading_compatible"] = True
    try:
        return cythonize(
            [
                Extension(
                    "mcp_lite._speedups",
                    ["mcp_lite/_speedups.pyx"],
                    extra_link_args=_strip_flags(),
                )
            ],
            compiler_directives=directives,
            annotate=_flag("MCP_LITE_ANNOTATE"),
            force=_flag("MCP_LITE_ANNOTATE"),  # regenerate the .html even when the .c is fresh
        )
    except Exception as exc:  # a Cython compile error
        if _flag("MCP_LITE_REQUIRE_EXTENSIONS"):
            raise
        sys.stderr.write(f"WARNING: Cython failed ({exc}); installing mcp_lite as pure Python.\n")
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": TolerantBuildExt})
