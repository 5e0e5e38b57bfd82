"""The suite's lanes stay whole: the serial pass of ``make test`` collects only the paths in the
Makefile's ``SERIAL_TESTS``, so every path ``tests/conftest.py`` marks ``serial`` (by folder or
by file) must lie under one of them, or its tests would run in no pass at all; and the modules
``make check`` leaves out by name exist, or the fast lane would pay for them again unseen."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def serial_prefixes() -> list[str]:
    """The paths below tests/ that tests/conftest.py marks serial."""
    tree = ast.parse((ROOT / "tests" / "conftest.py").read_text())
    found: list[str] = []
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if not isinstance(target, ast.Name) or target.id not in ("SERIAL_PATHS", "FOLDER_MARKS"):
            continue
        value = ast.literal_eval(node.value)  # type: ignore[union-attr,arg-type]
        if target.id == "SERIAL_PATHS":
            found += list(value)
        elif target.id == "FOLDER_MARKS":
            found += [prefix for prefix, (marks, _) in value.items() if "serial" in marks]
    return found


def makefile_serial_tests() -> list[str]:
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    match = re.search(r"^SERIAL_TESTS :?= (.*)$", text, re.M)
    assert match, "the Makefile has no SERIAL_TESTS"
    return [p.removeprefix("tests/") for p in match.group(1).split()]


def test_every_serial_path_is_in_the_serial_pass() -> None:
    prefixes = serial_prefixes()
    assert "conformance/" in prefixes  # the parse found the table
    lanes = makefile_serial_tests()
    missing = [p for p in prefixes if not any(p.startswith(lane) for lane in lanes)]
    assert missing == [], f"serial tests that make test would never run: {missing}"


def test_the_modules_the_fast_lane_leaves_out_exist() -> None:
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    match = re.search(r"^AGENT_TESTS :?= \$\(addprefix ([^,]+),(.*)\)$", text, re.M)
    assert match, "the Makefile has no AGENT_TESTS"
    paths = [match.group(1) + name for name in match.group(2).split()]
    assert len(paths) >= 7
    missing = [p for p in paths if not (ROOT / p).is_file()]
    assert missing == [], f"make check ignores modules that do not exist: {missing}"
